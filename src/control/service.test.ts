import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createLocalExecutor } from '../exec/local-executor.js';
import { SimulatedGpuPort } from '../gpu/simulated/driver.js';
import { SimulatedMachine } from '../gpu/simulated/machine.js';
import { parseSimulateSpec } from '../gpu/simulated/spec.js';
import { parsePolicy } from '../sched/registry.js';
import type { Decision, Policy } from '../sched/types.js';
import { openSqliteStore } from '../store/sqlite.js';
import type { JobRecord, Store } from '../store/types.js';
import { PoolServiceImpl } from './service.js';

const node = process.execPath;
const dirs: string[] = [];
const services: { service: PoolServiceImpl; store: Store }[] = [];

afterEach(async () => {
  for (const { service, store } of services.splice(0)) {
    for (const j of await service.listJobs({ states: ['running', 'starting'] })) await service.cancel(j.id);
    await service.idle();
    await service.stop();
    await store.close();
  }
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'migpool-service-'));
  dirs.push(d);
  return d;
}

async function open(dataDir: string, policy: string | Policy = 'migpool', machine?: SimulatedMachine): Promise<{ service: PoolServiceImpl; store: Store; machine: SimulatedMachine }> {
  const m = machine ?? SimulatedMachine.create(parseSimulateSpec('1xA100-SXM4-40GB'), 1, '1xA100-SXM4-40GB');
  const store = await openSqliteStore(join(dataDir, 'migpool.db'));
  await store.init();
  const service = new PoolServiceImpl({ store, executor: createLocalExecutor({ pollMs: 50, graceSeconds: 1 }), gpu: new SimulatedGpuPort(m), policy: typeof policy === 'string' ? parsePolicy(policy) : policy, dataDir, tickMs: 100 });
  await service.start();
  services.push({ service, store });
  return { service, store, machine: m };
}

async function until(service: PoolServiceImpl, id: string, states: readonly string[], timeoutMs = 10_000): Promise<JobRecord> {
  const t0 = Date.now();
  for (;;) {
    const j = await service.getJob(id);
    if (j && states.includes(j.state)) return j;
    if (Date.now() - t0 > timeoutMs) throw new Error(`job ${id} is ${j?.state ?? 'missing'} after ${timeoutMs} ms, not ${states.join('|')}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('the live service', () => {
  it('runs a submitted job on a slice it carves, with CUDA_VISIBLE_DEVICES set, and keeps its log', async () => {
    const dir = tempDir();
    const { service } = await open(dir);
    const job = await service.submit({ name: 'hello', command: [node, '-e', 'console.log("device=" + process.env.CUDA_VISIBLE_DEVICES)'], workload: 'small' });
    expect(job.state).toBe('queued');
    const done = await until(service, job.id, ['succeeded', 'failed']);
    expect(done.state).toBe('succeeded');
    expect(done.exitCode).toBe(0);
    expect(done.attempt).toBe(1);
    const log = await service.readLog(job.id, 'stdout', 0);
    expect(log?.text).toMatch(/^device=(MIG|GPU)-[0-9a-f-]+\n$/);
    expect(log?.done).toBe(true);
    const events = (await service.events(0)).filter((e) => e.jobId === job.id).map((e) => e.type);
    expect(events).toEqual(['job-submitted', 'job-starting', 'job-started', 'job-finished']);
  });

  it('packs small jobs onto MIG slices of one GPU when more wait than there are GPUs', async () => {
    const dir = tempDir();
    const { service } = await open(dir);
    const recs = await service.submitMany(Array.from({ length: 4 }, (_, i) => ({ name: `s${i}`, command: [node, '-e', 'setTimeout(() => {}, 1500)'], workload: 'small' })));
    for (const r of recs) await until(service, r.id, ['running']);
    const [gpu] = await service.gpus();
    expect(gpu?.migEnabled).toBe(true);
    const busy = gpu!.instances.filter((i) => i.job !== null).map((i) => i.job);
    expect(new Set(busy)).toEqual(new Set(recs.map((r) => r.id)));
    const placements = (await Promise.all(recs.map((r) => service.getJob(r.id)))).map((j) => j?.placement?.devices[0]);
    expect(new Set(placements).size).toBe(4);
  });

  it('cancels a queued job at once and a running one by stopping its process', async () => {
    const dir = tempDir();
    const { service } = await open(dir, 'exclusive');
    const a = await service.submit({ name: 'long', command: [node, '-e', 'setTimeout(() => {}, 60000)'] });
    await until(service, a.id, ['running']);
    const b = await service.submit({ name: 'waiting', command: [node, '-e', '0'] });
    await service.idle();
    expect((await service.getJob(b.id))?.state).toBe('queued');
    expect((await service.cancel(b.id))?.state).toBe('cancelled');
    await service.cancel(a.id);
    const ended = await until(service, a.id, ['cancelled', 'failed', 'succeeded']);
    expect(ended.state).toBe('cancelled');
    expect(await service.cancel('999')).toBeNull();
  });

  it('retries a failed job as its spec allows, and fails it when the attempts are spent', async () => {
    const dir = tempDir();
    const { service } = await open(dir, 'exclusive');
    const marker = join(dir, 'tried');
    const flaky = `const fs=require('fs'); if (!fs.existsSync(${JSON.stringify(marker)})) { fs.writeFileSync(${JSON.stringify(marker)}, 'x'); process.exit(3); }`;
    const a = await service.submit({ name: 'flaky', command: [node, '-e', flaky], retries: 1 });
    const ok = await until(service, a.id, ['succeeded', 'failed']);
    expect(ok.state).toBe('succeeded');
    expect(ok.attempt).toBe(2);
    const b = await service.submit({ name: 'broken', command: [node, '-e', 'process.exit(5)'], retries: 1 });
    const bad = await until(service, b.id, ['succeeded', 'failed']);
    expect(bad).toMatchObject({ state: 'failed', attempt: 2, exitCode: 5 });
  });

  it('kills a job past its max runtime and says so', async () => {
    const dir = tempDir();
    const { service } = await open(dir, 'exclusive');
    const a = await service.submit({ name: 'slow', command: [node, '-e', 'setTimeout(() => {}, 60000)'], maxRuntime: 0.5 });
    const ended = await until(service, a.id, ['failed', 'succeeded']);
    expect(ended.state).toBe('failed');
    expect(ended.reason).toMatch(/max runtime/);
  });

  it('rejects bad specs with the field path and queues nothing of a batch with one bad spec', async () => {
    const dir = tempDir();
    const { service } = await open(dir);
    await expect(service.submit({ name: 'x', command: ['true'], resources: { profile: 'big' } })).rejects.toThrow(/resources\.profile/);
    await expect(service.submit({ name: 'x', command: ['true'], resources: { profile: '4g.40gb' } })).rejects.toThrow(/no GPU here offers '4g.40gb'/);
    await expect(service.submit({ name: 'x', command: ['true'], workload: 'nope' })).rejects.toThrow(/workload: unknown workload 'nope'/);
    await expect(service.submitMany([{ name: 'ok', command: ['true'] }, { name: 'bad', command: [] }])).rejects.toThrow(/job spec 2: command/);
    expect(await service.listJobs()).toEqual([]);
  });

  it('after a restart, re-adopts a job still running and settles one that ended meanwhile, running neither twice', async () => {
    const dir = tempDir();
    const machine = SimulatedMachine.create(parseSimulateSpec('1xA100-SXM4-40GB'), 1, '1xA100-SXM4-40GB');
    const first = await open(dir, 'exclusive', machine);
    const log = join(dir, 'starts');
    writeFileSync(log, '');
    const script = (ms: number) => `require('fs').appendFileSync(${JSON.stringify(log)}, 'start\\n'); setTimeout(() => {}, ${ms})`;
    const a = await first.service.submit({ name: 'survivor', command: [node, '-e', script(1500)] });
    await until(first.service, a.id, ['running']);
    // The service goes away without settling anything (as after kill -9): its watchers stop, the job runs on.
    services.splice(services.indexOf(services.find((s) => s.service === first.service)!), 1);
    await first.service.stop();
    await first.store.close();
    const second = await open(dir, 'exclusive', machine);
    expect((await second.service.getJob(a.id))?.state).toBe('running');
    const done = await until(second.service, a.id, ['succeeded', 'failed']);
    expect(done.state).toBe('succeeded');
    expect(readFileSync(log, 'utf8')).toBe('start\n');
  });

  it('preempts a background job for a foreground one: the background job is stopped, requeued and runs again later', async () => {
    const dir = tempDir();
    // A policy that gives the one GPU to the oldest foreground job, preempting background work.
    const policy: Policy = {
      name: 'fg-first',
      decide(view): Decision[] {
        const gpu = view.gpus[0]!;
        const fg = view.queue.find((j) => j.priority === 'foreground');
        const holder = gpu.wholeGpuJobs[0];
        if (holder !== undefined) {
          const running = view.running.get(holder);
          return fg && running?.spec.priority === 'background' ? [{ kind: 'preempt', job: holder }] : [];
        }
        const next = fg ?? view.queue[0];
        return next ? [{ kind: 'start-on-gpus', job: next.id, gpus: [0], sharing: 'exclusive' }] : [];
      },
    };
    const { service } = await open(dir, policy);
    const bg = await service.submit({ name: 'bg', priority: 'background', command: [node, '-e', 'process.on("SIGTERM", () => process.exit(143)); setTimeout(() => {}, 1500)'] });
    await until(service, bg.id, ['running']);
    const fg = await service.submit({ name: 'fg', command: [node, '-e', 'setTimeout(() => {}, 200)'] });
    const fgDone = await until(service, fg.id, ['succeeded', 'failed']);
    expect(fgDone.state).toBe('succeeded');
    const bgDone = await until(service, bg.id, ['succeeded', 'failed']);
    expect(bgDone).toMatchObject({ state: 'succeeded', attempt: 2 });
    const types = (await service.events(0)).filter((e) => e.jobId === bg.id).map((e) => e.type);
    expect(types).toContain('job-requeued');
  });
});
