import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { BIN } from './run-cli.js';

describe('a command whose output reader has gone', () => {
  // Found with `migpool jobs --limit 2000 | head -1`: the rest of the table met a closed pipe and
  // Node printed "Error: write EPIPE" with its stack (also `migpool users add NAME | head -c 0`).
  it('ends quietly with 141, as a shell reports SIGPIPE, without a stack trace', { timeout: 60_000 }, async () => {
    const child = spawn(process.execPath, [BIN, 'layouts', '--gpu', 'A100-40GB'], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.destroy();
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
    expect(err).not.toMatch(/EPIPE|node:events|at /);
    expect(code).toBe(141);
  });
});
