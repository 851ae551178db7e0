import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SERVE_START_MS, startServe, type ServeProcess } from './serve-harness.js';

/**
 * The Python client's own unittest suite (clients/python/tests), run by Debian's python3 against
 * a real `migpool serve` on simulated GPUs that this test starts: the URL and token travel in
 * MIGPOOL_TEST_URL and MIGPOOL_TEST_TOKEN. .ci/run installs python3 where it is missing.
 */
const CLIENT_DIR = fileURLToPath(new URL('../clients/python', import.meta.url));
/** Debian's interpreter first (what CI installs), else the first python3 on PATH. */
const PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';

let dir: string;
let serve: ServeProcess | null = null;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'migpool-python-'));
  serve = await startServe({ dataDir: dir, args: ['--simulate', '1xA100-SXM4-40GB'] });
}, SERVE_START_MS + 30_000);

afterAll(async () => {
  await serve?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('the Python client (clients/python) against migpool serve', () => {
  it('passes its unittest suite', async () => {
    const { code, out } = await new Promise<{ code: number; out: string }>((resolve) => {
      const child = spawn(PYTHON, ['-m', 'unittest', '-v'], {
        cwd: CLIENT_DIR,
        env: { ...process.env, MIGPOOL_TEST_URL: serve!.url, MIGPOOL_TEST_TOKEN: serve!.token, PYTHONDONTWRITEBYTECODE: '1' },
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
