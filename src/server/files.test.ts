import { chmodSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { defaultDataDir, loadOrCreateToken, readServerInfo, readToken, removeServerInfo, writeServerInfo } from './files.js';

function freshDir(): string {
  return mkdtempSync(join(tmpdir(), 'migpool-files-'));
}

describe('defaultDataDir', () => {
  it('is $MIGPOOL_DATA_DIR, else $XDG_DATA_HOME/migpool, else ~/.local/share/migpool', () => {
    expect(defaultDataDir({ MIGPOOL_DATA_DIR: '/srv/pool' })).toBe('/srv/pool');
    expect(defaultDataDir({ XDG_DATA_HOME: '/x' })).toBe('/x/migpool');
    expect(defaultDataDir({})).toBe(join(homedir(), '.local', 'share', 'migpool'));
  });
});

describe('loadOrCreateToken', () => {
  it('creates 32 random bytes as hex, mode 0600 in a 0700 dir, and reuses them', async () => {
    const dir = join(freshDir(), 'data');
    const token = await loadOrCreateToken(dir);
    expect(token).toMatch(/^[0-9a-f]{64}$/);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(statSync(join(dir, 'token')).mode & 0o777).toBe(0o600);
    expect(readFileSync(join(dir, 'token'), 'utf8').trim()).toBe(token);
    expect(await loadOrCreateToken(dir)).toBe(token);
    expect(await readToken(dir)).toBe(token);
  });

  it('agrees on one token when two start at once', async () => {
    const dir = freshDir();
    const tokens = await Promise.all([loadOrCreateToken(dir), loadOrCreateToken(dir), loadOrCreateToken(dir)]);
    expect(new Set(tokens).size).toBe(1);
  });

  it('makes a token file readable by others private again, and says so', async () => {
    const dir = freshDir();
    const token = await loadOrCreateToken(dir);
    chmodSync(join(dir, 'token'), 0o644);
    const warnings: string[] = [];
    expect(await loadOrCreateToken(dir, { onWarning: (w) => warnings.push(w) })).toBe(token);
    expect(statSync(join(dir, 'token')).mode & 0o777).toBe(0o600);
    expect(warnings).toEqual([expect.stringContaining('was readable by other users (mode 644); made it 0600')]);
  });

  it('refuses an empty token file, saying how to fix it', async () => {
    const dir = freshDir();
    writeFileSync(join(dir, 'token'), '\n', { mode: 0o600 });
    await expect(loadOrCreateToken(dir)).rejects.toThrow(/does not hold a token .*: delete it and restart `migpool serve`/);
  });

  it('readToken names the missing file and the flags', async () => {
    const dir = freshDir();
    await expect(readToken(dir)).rejects.toMatchObject({ code: 'BAD_INPUT', message: expect.stringContaining('pass --token') });
  });
});

describe('server info', () => {
  it('writes, reads and removes server.json', async () => {
    const dir = freshDir();
    await writeServerInfo(dir, { url: 'http://127.0.0.1:8470', pid: 1234 });
    expect(await readServerInfo(dir)).toEqual({ url: 'http://127.0.0.1:8470', pid: 1234 });
    await removeServerInfo(dir);
    await removeServerInfo(dir);
    await expect(readServerInfo(dir)).rejects.toMatchObject({ code: 'RUNTIME', message: `no migpool service found in ${dir}: start one with \`migpool serve\` (or pass --url)` });
  });

  it('says when server.json is not valid', async () => {
    const dir = freshDir();
    writeFileSync(join(dir, 'server.json'), '{"url": 3}');
    await expect(readServerInfo(dir)).rejects.toThrow(/server\.json is not a valid server file/);
  });
});
