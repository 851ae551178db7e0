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
