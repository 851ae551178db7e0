import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { BIN } from './run-cli.js';

/**
 * A user's token given with `--token` is gone from /proc/PID/cmdline (what `ps` shows every user
 * of the machine) once the command starts. Found in an attack round: `migpool logs -f 12 --token T`
 * showed T to every local account for as long as it followed the log.
 */
describe('migpool --token and ps', () => {
  it('is written as *** in /proc/PID/cmdline while the command waits on the service', { timeout: 30_000 }, async () => {
    // A service that accepts the connection and never answers: the command waits while the test reads its cmdline.
    const sockets: Socket[] = [];
    const server = createServer((s) => sockets.push(s));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    const token = 'a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d2e3f4a5b6c7d8e9f0a1b2';
    const proc = spawn(process.execPath, [BIN, 'logs', '12', '-f', '--url', `http://127.0.0.1:${port}`, '--token', token], { stdio: 'ignore' });
    try {
      let cmdline = '';
      const t0 = Date.now();
      while (Date.now() - t0 < 20_000) {
        cmdline = readFileSync(`/proc/${proc.pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
        if (sockets.length > 0) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(sockets.length, 'the command reached the service').toBeGreaterThan(0);
      expect(cmdline).not.toContain(token);
      expect(cmdline).toContain(`migpool logs 12 -f --url http://127.0.0.1:${port} --token ***`);
    } finally {
      proc.kill('SIGKILL');
      for (const s of sockets) s.destroy();
      server.close();
    }
  });
});
