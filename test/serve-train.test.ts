import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { startServe, type ServeProcess } from './serve-harness.js';

/**
 * A real PyTorch training job (examples/train_mig.py, a small torchvision model on the CPU) under
 * `migpool serve --simulate`: it reports its progress, the service shows it, an operator preempts
 * it, it checkpoints on SIGTERM, resumes from its checkpoint in its next attempt and ends with
 * exactly the samples it was asked for. Needs Debian's python3-torch and python3-torchvision
 * (.ci/run installs them); skipped only outside CI when they are missing.
 */
const PYTHON = '/usr/bin/python3';
const SCRIPT = fileURLToPath(new URL('../examples/train_mig.py', import.meta.url));
const TOTAL = 960;
const haveTorch = existsSync(PYTHON) && spawnSync(PYTHON, ['-c', 'import torch, torchvision'], { stdio: 'ignore' }).status === 0;
/** .ci/run sets MIGPOOL_CI (and installs torch): there a missing torch is a failure, not a skip. */
const truthy = (v: string | undefined) => v !== undefined && v !== '' && v !== '0' && v !== 'false';
const inCi = truthy(process.env['MIGPOOL_CI']) || truthy(process.env['CI']);
if (!haveTorch && !inCi) console.warn(`test/serve-train.test.ts skipped: ${PYTHON} cannot import torch and torchvision (apt-get install python3-torch python3-torchvision)`);

let serve: ServeProcess | null = null;
const dirs: string[] = [];
afterAll(async () => {
  await serve?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

interface Job {
  state: string;
  attempt: number;
  preemptions?: number;
  progress?: { samples: number; total: number | null; fraction: number | null } | null;
}

describe.skipIf(!haveTorch && !inCi)('a real training job under migpool serve', () => {
  it('reports progress, is preempted, resumes from its checkpoint and completes with the right number of samples', { timeout: 300_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'migpool-train-'));
    dirs.push(dir);
    const data = join(dir, 'data');
    serve = await startServe({ dataDir: data, args: ['--simulate', '1xA100-SXM4-40GB', '--policy', 'exclusive'] });
    const { url, token, log } = serve;
    const auth = { authorization: `Bearer ${token}` };
    const call = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
      const res = await fetch(`${url}${path}`, { method, headers: { ...auth, ...(body ? { 'content-type': 'application/json' } : {}) }, body: body ? JSON.stringify(body) : null });
      const value = (await res.json()) as T;
      if (!res.ok) throw new Error(`${method} ${path}: HTTP ${res.status} ${JSON.stringify(value)}`);
      return value;
    };
    const spec = {
      name: 'train-mobilenet',
      command: [PYTHON, SCRIPT, '--device', 'cpu', '--model', 'mobilenet_v3_small', '--batch-size', '16', '--image-size', '32', '--total-samples', String(TOTAL), '--report-every', '1', '--checkpoint-every', '600'],
      preemptible: true,
      killGracePeriod: 60,
    };
    const { id } = await call<{ id: string }>('POST', '/v1/jobs', spec);
    const waitFor = async (what: string, ok: (j: Job) => boolean, ms = 120_000): Promise<Job> => {
      const start = Date.now();
      for (;;) {
        const j = await call<Job>('GET', `/v1/jobs/${id}`);
        if (ok(j)) return j;
        if (j.state === 'failed' || Date.now() - start > ms) throw new Error(`job ${id} never ${what}: ${JSON.stringify(j)}\n${log()}`);
        await new Promise((r) => setTimeout(r, 200));
      }
    };
    // The service shows its progress (read from the job's progress lines).
    const early = await waitFor('reported progress', (j) => j.state === 'running' && (j.progress?.samples ?? 0) >= 64);
    expect(early.progress).toMatchObject({ total: TOTAL });
    expect(early.progress!.fraction).toBeGreaterThan(0);
    expect(early.progress!.fraction).toBeLessThan(1);
    // An operator moves it: SIGTERM, it checkpoints and ends; the service requeues and restarts it.
    await call('POST', `/v1/jobs/${id}/preempt`);
    const done = await waitFor('succeeded', (j) => j.state === 'succeeded', 240_000);
    expect(done).toMatchObject({ attempt: 2, preemptions: 1 });
    const stderr2 = readFileSync(join(data, 'jobs', id, '2', 'stderr.log'), 'utf8');
    const resumed = /resumed from .*checkpoint\.pt at (\d+) samples/.exec(stderr2);
    expect(resumed, stderr2).not.toBeNull();
    expect(Number(resumed![1])).toBeGreaterThan(0);
    expect(readFileSync(join(data, 'jobs', id, '1', 'stderr.log'), 'utf8')).toMatch(/stopped by SIGTERM at \d+ samples; checkpoint saved/);
    const lines = readFileSync(join(data, 'jobs', id, '2', 'stdout.log'), 'utf8').trim().split('\n');
    const last = JSON.parse(lines[lines.length - 1]!) as { migpool_samples: number };
    expect(last.migpool_samples).toBe(TOTAL);
    expect(existsSync(join(data, 'jobs', id, 'checkpoint', 'checkpoint.pt'))).toBe(true);
    writeFileSync(join(dir, 'done'), '');
  });
});
