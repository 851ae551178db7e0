import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN } from './run-cli.js';
import { SERVE_START_MS } from './serve-harness.js';

const dir = mkdtempSync(join(tmpdir(), 'migpool-serve-lock-'));
const procs: ChildProcess[] = [];
afterAll(async () => {
  for (const p of procs) {
    if (p.exitCode === null && p.signalCode === null) {
      const gone = new Promise((resolve) => p.once('exit', resolve));
      p.kill('SIGTERM');
      await gone;
    }
  }
  rmSync(dir, { recursive: true, force: true });
});

function serve(): { proc: ChildProcess; err: () => string; exited: Promise<number | null> } {
  const proc = spawn(process.execPath, [BIN, 'serve', '--data-dir', dir, '--listen', '127.0.0.1:0', '--simulate', '1xA100-SXM4-40GB'], { stdio: ['ignore', 'ignore', 'pipe'] });
  procs.push(proc);
  let err = '';
  proc.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  return { proc, err: () => err, exited: new Promise((resolve) => proc.once('exit', (code) => resolve(code))) };
}

describe('two services started on one data dir at once', () => {
  // Found on the live service: two `migpool serve` started together both ran (server.json, the
  // only guard, is written once a service listens), each scheduling the same jobs and GPUs.
  it('one runs, the other is refused with exit 2 and one line, before it touches anything', { timeout: SERVE_START_MS + 30_000 }, async () => {
    const a = serve();
    const b = serve();
    const first = await Promise.race([a.exited.then(() => a), b.exited.then(() => b)]);
    const other = first === a ? b : a;
    expect(await first.exited).toBe(2);
    expect(first.err().trim()).toMatch(new RegExp(`^migpool: another migpool service \\((pid \\d+|starting or stopping)\\) uses ${dir}: stop it first, or pass another --data-dir$`));
    const t0 = Date.now();
    while (!existsSync(join(dir, 'server.json')) && other.proc.exitCode === null && Date.now() - t0 < SERVE_START_MS) await new Promise((r) => setTimeout(r, 50));
    expect(other.proc.exitCode, other.err()).toBeNull();
    expect(existsSync(join(dir, 'server.json'))).toBe(true);
  });
});
