import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN } from './run-cli.js';

/**
 * The Python client's own unittest suite (clients/python/tests), run by Debian's python3 against
 * a real `migpool serve` on simulated GPUs that this test starts: the URL and token travel in
 * MIGPOOL_TEST_URL and MIGPOOL_TEST_TOKEN. .ci/run installs python3 where it is missing.
 */
const CLIENT_DIR = fileURLToPath(new URL('../clients/python', import.meta.url));
/** Debian's interpreter first (what CI installs), else the first python3 on PATH. */
const PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';

let dir: string;
let serve: ChildProcess | null = null;
let url = '';
let token = '';

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'migpool-python-'));
  serve = spawn(process.execPath, [BIN, 'serve', '--data-dir', dir, '--listen', '127.0.0.1:0', '--simulate', '1xA100-SXM4-40GB'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  serve.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  const t0 = Date.now();
  while (!existsSync(join(dir, 'server.json'))) {
    if (Date.now() - t0 > 20_000 || serve.exitCode !== null) throw new Error(`migpool serve did not start: ${err}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  url = (JSON.parse(readFileSync(join(dir, 'server.json'), 'utf8')) as { url: string }).url;
  token = readFileSync(join(dir, 'token'), 'utf8').trim();
}, 30_000);

afterAll(async () => {
  if (serve && serve.exitCode === null) {
    serve.kill('SIGTERM');
    await new Promise((r) => serve!.once('exit', r));
  }
  rmSync(dir, { recursive: true, force: true });
});

describe('the Python client (clients/python) against migpool serve', () => {
  it('passes its unittest suite', async () => {
    const { code, out } = await new Promise<{ code: number; out: string }>((resolve) => {
      const child = spawn(PYTHON, ['-m', 'unittest', '-v'], {
        cwd: CLIENT_DIR,
        env: { ...process.env, MIGPOOL_TEST_URL: url, MIGPOOL_TEST_TOKEN: token, PYTHONDONTWRITEBYTECODE: '1' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let text = '';
      child.stdout.on('data', (d: Buffer) => (text += d.toString()));
      child.stderr.on('data', (d: Buffer) => (text += d.toString()));
      child.on('close', (c) => resolve({ code: c ?? -1, out: text }));
    });
    expect(out, out).toMatch(/Ran (\d+) tests/);
    // Every test ran: none skipped, and the suite is not empty.
    expect(Number(/Ran (\d+) tests/.exec(out)![1])).toBeGreaterThanOrEqual(10);
    expect(out).not.toMatch(/skipped/);
    expect(code, out).toBe(0);
  }, 120_000);
});
