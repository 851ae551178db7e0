import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runMigpool, startServe, type ServeProcess } from './serve-harness.js';

/**
 * `migpool serve` beside a process it did not start (found on the live service: whole-GPU jobs
 * were started on GPU 1 beside a foreign process): the built CLI in its own process, the foreign
 * process attached to the simulated machine with `migpool sim attach`, as an operator would.
 */
const SPEC = '2xA100-SXM4-40GB';
let dir: string;
let serve: ServeProcess | null = null;

interface Job {
  id: string;
  state: string;
  placement: { kind: string; gpus?: number[] } | null;
  pending: string | null;
}

const sim = (...args: string[]) => runMigpool(['sim', ...args, '--state-dir', dir, '--simulate', SPEC]);
const jobs = async (): Promise<Job[]> => {
  const r = await runMigpool(['jobs', '--data-dir', dir, '--json']);
  expect(r.code, r.err).toBe(0);
  return (JSON.parse(r.out) as { jobs: Job[] }).jobs;
};

async function until<T>(what: string, get: () => Promise<T | null>, ms = 30_000): Promise<T> {
  const t0 = Date.now();
  for (;;) {
    const v = await get();
    if (v !== null) return v;
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'migpool-serve-foreign-'));
});

afterAll(async () => {
  if (serve) for (const j of await jobs()) if (j.state === 'queued' || j.state === 'running') await runMigpool(['cancel', j.id, '--data-dir', dir]);
  await serve?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('migpool serve beside a foreign process', () => {
  it('starts no whole-GPU job on its GPU, says so in the pending reason, and uses the GPU once the process ends', { timeout: 90_000 }, async () => {
    serve = await startServe({ dataDir: dir, args: ['--simulate', SPEC] });
    const attached = await sim('attach', '--gpu', '1');
    expect(attached.code, attached.err).toBe(0);
    const pid = attached.out.trim();
    // The service reads the GPUs' processes every tick (2 s): wait until it has seen this one.
    expect(await serve.waitForLog(`GPU 1: process ${pid} that migpool did not start runs on it`)).toContain(`process ${pid}`);
    // GET /v1/gpus lists it on GPU 1 (the dashboard draws it from there).
    const gpus = async () => ((await (await fetch(`${serve!.url}/v1/gpus`, { headers: { authorization: `Bearer ${serve!.token}` } })).json()) as { gpus: { foreignProcesses: number; foreignPids: number[] }[] }).gpus;
    expect((await gpus()).map((g) => [g.foreignProcesses, g.foreignPids])).toEqual([
      [0, []],
      [1, [Number(pid)]],
    ]);
    for (let i = 0; i < 3; i++) {
      const r = await runMigpool(['submit', '--data-dir', dir, '--gpus', '1', '--', 'sleep', '30']);
      expect(r.code, r.err).toBe(0);
    }
    const waiting = await until('a queued job naming the process', async () => {
      const q = (await jobs()).find((j) => j.state === 'queued' && (j.pending ?? '').includes(pid));
      return q ?? null;
    });
    expect(waiting.pending).toContain(`GPU 1 runs process ${pid} that migpool did not start: it starts no job there until it ends`);
    const placed = (await jobs()).filter((j) => j.placement !== null);
    expect(placed.map((j) => j.placement?.gpus)).toEqual([[0]]);
    // The process ends: a waiting job starts on GPU 1.
    expect((await sim('detach', pid)).code).toBe(0);
    await until('a job on GPU 1', async () => ((await jobs()).some((j) => j.state === 'running' && (j.placement?.gpus ?? []).includes(1)) ? true : null));
    expect((await gpus()).map((g) => g.foreignProcesses)).toEqual([0, 0]);
  });
});

describe('migpool serve beside a foreign process on a MIG slice', () => {
  // Found on the live service: a whole-GPU job waited while GPU 0's idle slices, one of them
  // running a foreign process, were asked back to MIG off every back-off ("re-partition failed
  // (3 in a row): ... runs processes 4002; the new layout drops it").
  it('does not try to destroy the slice, and gives the GPU to the job once the process ends', { timeout: 90_000 }, async () => {
    const own = mkdtempSync(join(tmpdir(), 'migpool-serve-foreign-mig-'));
    const one = '1xA100-SXM4-40GB';
    const simOne = (...args: string[]) => runMigpool([...args, '--state-dir', own, '--simulate', one]);
    let s: ServeProcess | null = null;
    try {
      const applied = await simOne('apply', '-f', 'test/fixtures/mig-parted/config-default.yaml', '-c', 'all-1g.5gb');
      expect(applied.code, applied.err).toBe(0);
      const status = JSON.parse((await simOne('status', '--json')).out) as { gpus: { gpuInstances: { id: number; start: number }[] }[] };
      const gi = status.gpus[0]!.gpuInstances.find((i) => i.start === 4)!.id;
      const attached = await simOne('sim', 'attach', '--gpu', '0', '--gi', String(gi), '--ci', '0');
      expect(attached.code, attached.err).toBe(0);
      const pid = attached.out.trim();
      s = await startServe({ dataDir: own, args: ['--simulate', one] });
      expect(await s.waitForLog(`GPU 0 instance at 4: process ${pid} that migpool did not start runs on it`)).toContain(pid);
      const listed = (await (await fetch(`${s.url}/v1/gpus`, { headers: { authorization: `Bearer ${s.token}` } })).json()) as { gpus: { instances: { start: number; foreignPids: number[] }[] }[] };
      expect(listed.gpus[0]!.instances.filter((i) => i.foreignPids.length > 0)).toEqual([expect.objectContaining({ start: 4, foreignPids: [Number(pid)] })]);
      const r = await runMigpool(['submit', '--data-dir', own, '--gpus', '1', '--', 'sleep', '30']);
      expect(r.code, r.err).toBe(0);
      // Several passes and ticks (2 s each): no re-partition is tried, none is skipped as invalid.
      await new Promise((done) => setTimeout(done, 7000));
      expect(s.log()).not.toMatch(/re-partition failed|skipped an invalid decision/);
      // And the job hears why GPU 0 does not go back to a whole GPU.
      const waiting = (JSON.parse((await runMigpool(['jobs', '--data-dir', own, '--json'])).out) as { jobs: Job[] }).jobs[0];
      expect(waiting?.pending).toContain(`GPU 0's 1g.5gb at 4 runs process ${pid} that migpool did not start: it starts no job there until it ends`);
      expect((await simOne('sim', 'detach', pid)).code).toBe(0);
      await until('the job on the whole GPU', async () => {
        const q = await runMigpool(['jobs', '--data-dir', own, '--json']);
        const j = (JSON.parse(q.out) as { jobs: Job[] }).jobs[0];
        return j?.state === 'running' && j.placement?.kind === 'gpus' ? j : null;
      });
      expect(s.log()).not.toMatch(/re-partition failed/);
      await runMigpool(['cancel', '1', '--data-dir', own]);
    } finally {
      await s?.stop();
      rmSync(own, { recursive: true, force: true });
    }
  });
});

describe('migpool serve when a foreign process came while a job ran', () => {
  // Found on the live service: a process attached to GPU 0 while job 1 ran there was the job's to
  // the service; when job 1 ended, job 2 started on GPU 0 beside it, and nothing named it.
  it('starts no job beside it once the job ends', { timeout: 90_000 }, async () => {
    const own = mkdtempSync(join(tmpdir(), 'migpool-serve-foreign-after-'));
    const one = '1xA100-SXM4-40GB';
    let s: ServeProcess | null = null;
    const list = async (): Promise<Job[]> => (JSON.parse((await runMigpool(['jobs', '--data-dir', own, '--json'])).out) as { jobs: Job[] }).jobs;
    try {
      s = await startServe({ dataDir: own, args: ['--simulate', one] });
      expect((await runMigpool(['submit', '--data-dir', own, '--gpus', '1', '--', 'sleep', '6'])).code).toBe(0);
      await until('job 1 running', async () => ((await list()).some((j) => j.id === '1' && j.state === 'running') ? true : null));
      const attached = await runMigpool(['sim', 'attach', '--gpu', '0', '--state-dir', own, '--simulate', one]);
      expect(attached.code, attached.err).toBe(0);
      const pid = attached.out.trim();
      expect((await runMigpool(['submit', '--data-dir', own, '--gpus', '1', '--', 'sleep', '30'])).code).toBe(0);
      await until('job 1 ended', async () => ((await list()).some((j) => j.id === '1' && j.state === 'succeeded') ? true : null));
      // A few ticks after the end: job 2 still waits, and says for what.
      await new Promise((done) => setTimeout(done, 5000));
      const two = (await list()).find((j) => j.id === '2')!;
      expect(two.state).toBe('queued');
      expect(two.pending).toContain(`GPU 0 runs process ${pid} that migpool did not start`);
      expect((await runMigpool(['sim', 'detach', pid, '--state-dir', own, '--simulate', one])).code).toBe(0);
      await until('job 2 running', async () => ((await list()).some((j) => j.id === '2' && j.state === 'running') ? true : null));
      await runMigpool(['cancel', '2', '--data-dir', own]);
    } finally {
      await s?.stop();
      rmSync(own, { recursive: true, force: true });
    }
  });
});
