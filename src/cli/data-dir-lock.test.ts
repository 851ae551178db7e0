import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { lockDataDir, lockName } from './data-dir-lock.js';

const dir = mkdtempSync(join(tmpdir(), 'migpool-lock-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the data dir lock', () => {
  it('is held by one taker at a time, under any spelling of the folder, until released', async () => {
    const first = await lockDataDir(dir);
    expect(first).not.toBeNull();
    expect(await lockDataDir(dir)).toBeNull();
    const link = `${dir}-link`;
    symlinkSync(dir, link);
    try {
      expect(await lockDataDir(link)).toBeNull();
      expect(await lockDataDir(`${dir}/.`)).toBeNull();
    } finally {
      rmSync(link);
    }
    await first!.release();
    const again = await lockDataDir(dir);
    expect(again).not.toBeNull();
    await again!.release();
  });

  it('is freed when its process is killed (kill -9 leaves no stale lock)', async () => {
    // Another process holds the lock's name (as a service would), then dies without releasing it.
    const holder = spawn(process.execPath, ['-e', `require('net').createServer().listen(${JSON.stringify(lockName(dir))}, () => console.log('held'))`], { stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise((resolve) => holder.stdout.once('data', resolve));
    expect(await lockDataDir(dir)).toBeNull();
    holder.kill('SIGKILL');
    await new Promise((resolve) => holder.once('exit', resolve));
    const after = await lockDataDir(dir);
    expect(after).not.toBeNull();
    await after!.release();
  });
});
