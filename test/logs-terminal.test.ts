import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { describe, expect, it } from 'vitest';
import { BIN } from './run-cli.js';

/**
 * `migpool logs` shows a terminal another user's job output without the control sequences that
 * would command it. Found in an attack round: a user's job printed `ESC ] 52 ; c ; <base64> BEL`
 * (OSC 52, which many terminals take as "set the clipboard"), a window title and a screen clear,
 * and an admin's `migpool logs ID` passed them to the admin's terminal as they were.
 */
const hostile = 'step 1 \x1b[32mok\x1b[0m\n\x1b]52;c;cm0gLXJmIH4K\x07\x1b]0;pwned\x07\x1b[2Jdone\n';

async function logServer(): Promise<{ url: string; close: () => void }> {
  const server = createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(req.url?.startsWith('/v1/jobs/7/logs') ? { text: hostile, nextOffset: Buffer.byteLength(hostile), done: true } : {}));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, close: () => server.close() };
}

function run(cmd: string, args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
    p.stderr.on('data', (d: Buffer) => (out += d.toString('utf8')));
    p.on('error', reject);
    p.on('close', () => resolve(out));
  });
}

describe('migpool logs to a terminal', () => {
  it("shows colours but writes other control sequences as escapes; a pipe, and --raw, get the job's bytes", { timeout: 30_000 }, async () => {
    const server = await logServer();
    try {
      const logs = [BIN, 'logs', '7', '--url', server.url, '--token', 't'];
      // script(1) (util-linux, in every Debian) gives the command a pseudo-terminal as its stdout.
      const inTerminal = await run('script', ['-qec', [process.execPath, ...logs].join(' '), '/dev/null']);
      expect(inTerminal).toContain('step 1 \x1b[32mok\x1b[0m');
      expect(inTerminal).toContain('\\x1b]52;c;cm0gLXJmIH4K\\x07\\x1b]0;pwned\\x07\\x1b[2Jdone');
      expect(inTerminal).not.toContain('\x1b]52');
      expect(inTerminal).not.toContain('\x1b[2J');
      const raw = await run('script', ['-qec', [process.execPath, ...logs, '--raw'].join(' '), '/dev/null']);
      expect(raw).toContain('\x1b]52;c;cm0gLXJmIH4K\x07');
      expect(await run(process.execPath, logs)).toBe(hostile);
    } finally {
      server.close();
    }
  });
});
