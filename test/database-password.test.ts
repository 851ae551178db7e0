import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN } from './run-cli.js';

const dir = mkdtempSync(join(tmpdir(), 'migpool-dbpw-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// A server that accepts connections and never answers: the service waits on it (its PostgreSQL
// connection timeout is 10 s) while the test reads what `ps` would show.
async function silentServer(): Promise<{ port: number; close: () => void }> {
  const sockets: Socket[] = [];
  const server = createServer((s) => sockets.push(s));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return { port: address.port, close: () => { for (const s of sockets) s.destroy(); server.close(); } };
}

describe('a --database password on the command line', () => {
  it('is gone from /proc/PID/cmdline (what ps shows) once the service starts, with a one-line warning', { timeout: 30_000 }, async () => {
    const db = await silentServer();
    const url = `postgres://ml:s3cret-pw@127.0.0.1:${db.port}/migpool`;
    const proc = spawn(process.execPath, [BIN, 'serve', '--data-dir', dir, '--listen', '127.0.0.1:0', '--simulate', '1xA100-SXM4-40GB', '--database', url], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    proc.stderr.on('data', (d: Buffer) => (err += d.toString()));
    try {
      const t0 = Date.now();
      let cmdline = '';
      while (Date.now() - t0 < 8000) {
        cmdline = readFileSync(`/proc/${proc.pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
        if (!cmdline.includes('s3cret-pw') && err.includes('ps')) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(cmdline).not.toContain('s3cret-pw');
      expect(cmdline).toContain('migpool serve --database postgres://ml:***@');
      expect(err).toContain('migpool serve: --database carries a password, which other users of this machine can read with ps; give it in $PGPASSWORD');
    } finally {
      proc.kill('SIGKILL');
      db.close();
    }
  });
});

describe('a database URL that is not PostgreSQL', () => {
  const run = (args: string[], env: Record<string, string>) =>
    new Promise<{ code: number | null; err: string }>((resolve) => {
      const proc = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env } });
      let err = '';
      proc.stderr.on('data', (d: Buffer) => (err += d.toString()));
      proc.on('close', (code) => resolve({ code, err }));
    });
  it('from $MIGPOOL_DATABASE is refused in one line that names the variable, and nothing is written', { timeout: 30_000 }, async () => {
    const dataDir = join(dir, 'env-junk');
    for (const args of [['users', 'list', '--data-dir', dataDir], ['serve', '--data-dir', dataDir, '--listen', '127.0.0.1:0', '--simulate', '1xA100-SXM4-40GB']]) {
      const r = await run(args, { MIGPOOL_DATABASE: 'mysql://ml:s3cret@db/x' });
      expect(r.code).toBe(2);
      expect(r.err.trim().split('\n')).toHaveLength(1);
      expect(r.err).toContain('$MIGPOOL_DATABASE is mysql://ml:***@db/x: only postgres:// and postgresql:// URLs are accepted; fix it, or unset MIGPOOL_DATABASE');
    }
    expect(() => readFileSync(join(dataDir, 'token'))).toThrow();
  });
});
