import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Executor } from '../exec/executor.js';
import { createLocalExecutor } from '../exec/local-executor.js';
import type { GpuPort } from '../gpu/port.js';
import { SimulatedGpuPort } from '../gpu/simulated/driver.js';
import { SimulatedMachine } from '../gpu/simulated/machine.js';
import { parseSimulateSpec } from '../gpu/simulated/spec.js';
import { smallestSlicePolicy } from '../../test/service-kit.js';
import { parsePolicy } from '../sched/registry.js';
import type { Decision, Policy } from '../sched/types.js';
import { openSqliteStore } from '../store/sqlite.js';
import type { JobRecord, Store } from '../store/types.js';
import { PoolServiceImpl, type ServiceOptions } from './service.js';

const node = process.execPath;
const dirs: string[] = [];
const services: { service: PoolServiceImpl; store: Store }[] = [];

afterEach(async () => {
  for (const { service, store } of services.splice(0)) {
    for (const j of await service.listJobs({ states: ['running', 'starting'] })) await service.cancel(j.id);
    // Wait for the stopped attempts to end (their runners write exit.json) before removing their folders.
    for (let i = 0; i < 100 && (await service.listJobs({ states: ['running', 'starting'] })).length > 0; i++) await new Promise((r) => setTimeout(r, 50));
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

interface OpenExtras {
  readonly executor?: (e: Executor) => Executor;
  readonly gpu?: (p: GpuPort) => GpuPort;
  readonly minRunBeforePreemptSeconds?: number;
  readonly log?: (line: string) => void;
  readonly store?: (s: Store) => Store;
  readonly users?: ServiceOptions['users'];
  readonly jobOwner?: ServiceOptions['jobOwner'];
}

async function open(dataDir: string, policy: string | Policy = 'migpool', machine?: SimulatedMachine, extras: OpenExtras = {}): Promise<{ service: PoolServiceImpl; store: Store; machine: SimulatedMachine }> {
  const m = machine ?? SimulatedMachine.create(parseSimulateSpec('1xA100-SXM4-40GB'), 1, '1xA100-SXM4-40GB');
  const real = await openSqliteStore(join(dataDir, 'migpool.db'));
  await real.init();
  const store = extras.store ? extras.store(real) : real;
  const local = createLocalExecutor({ pollMs: 50, graceSeconds: 1 });
  const port = new SimulatedGpuPort(m);
  const service = new PoolServiceImpl({
    store,
    executor: extras.executor ? extras.executor(local) : local,
    gpu: extras.gpu ? extras.gpu(port) : port,
    policy: typeof policy === 'string' ? parsePolicy(policy) : policy,
    dataDir,
    tickMs: 100,
    ...(extras.minRunBeforePreemptSeconds !== undefined ? { minRunBeforePreemptSeconds: extras.minRunBeforePreemptSeconds } : {}),
    ...(extras.log ? { log: extras.log } : {}),
    ...(extras.users ? { users: extras.users } : {}),
    ...(extras.jobOwner ? { jobOwner: extras.jobOwner } : {}),
  });
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
  it("records who submitted a job and hands the policy the owner as the job's user", async () => {
    const seen = new Map<string, string | undefined>();
    const inner = parsePolicy('migpool');
    const watching: Policy = {
      name: 'watching',
      decide: (view, ctx) => {
        for (const j of view.queue) seen.set(j.id, j.user);
        return inner.decide(view, ctx);
      },
    };
    const { service } = await open(tempDir(), watching);
    const mine = await service.submit({ name: 'mine', command: [node, '-e', ''] }, { owner: 'alice' });
    const theirs = await service.submitMany([{ name: 'theirs', command: [node, '-e', ''] }], { owner: 'bob' });
    const nobody = await service.submit({ name: 'nobody', command: [node, '-e', ''] });
    expect([mine.owner, theirs[0]!.owner, nobody.owner]).toEqual(['alice', 'bob', null]);
    for (const j of [mine, theirs[0]!, nobody]) await until(service, j.id, ['succeeded']);
    expect(seen.get(mine.id)).toBe('alice');
    expect(seen.get(theirs[0]!.id)).toBe('bob');
    expect(seen.has(nobody.id) && seen.get(nobody.id) === undefined).toBe(true);
    expect((await service.listJobs({ owner: 'bob' })).map((j) => j.id)).toEqual([theirs[0]!.id]);
  });

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

  it("refuses to preempt a finished or non-preemptible job as the caller's error, not an internal one in the log", async () => {
    const lines: string[] = [];
    const { service } = await open(tempDir(), 'exclusive', undefined, { log: (l) => lines.push(l) });
    const done = await service.submit({ name: 'quick', command: [node, '-e', '0'] });
    await until(service, done.id, ['succeeded']);
    await expect(service.preempt(done.id)).rejects.toMatchObject({ code: 'CHECK_FAILED', message: `job ${done.id} is succeeded, not running: only a running job can be preempted` });
    const fixed = await service.submit({ name: 'fixed', command: [node, '-e', 'setTimeout(() => {}, 60000)'] });
    await until(service, fixed.id, ['running']);
    await expect(service.preempt(fixed.id)).rejects.toMatchObject({ code: 'CHECK_FAILED', message: expect.stringMatching(/may not be moved/) as unknown });
    await service.idle();
    expect(lines.filter((l) => l.includes('internal'))).toEqual([]);
    expect((await service.getJob(fixed.id))?.state).toBe('running');
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

  it('says why a job could not start (missing program or workdir), not only its exit status', async () => {
    const dir = tempDir();
    const { service } = await open(dir, 'exclusive');
    const typo = await service.submit({ name: 'typo', command: ['migpool-no-such-program-xyz'] });
    expect(await until(service, typo.id, ['failed', 'succeeded'])).toMatchObject({ state: 'failed', exitCode: 127, reason: expect.stringMatching(/^could not start: cannot start migpool-no-such-program-xyz: command not found/) });
    const gone = await service.submit({ name: 'gone', command: [node, '-e', ''], workdir: join(dir, 'missing') });
    expect(await until(service, gone.id, ['failed', 'succeeded'])).toMatchObject({ state: 'failed', reason: expect.stringContaining(`workdir ${join(dir, 'missing')} does not exist`) });
  });

  it("refuses at submit a job that asks for exactly a profile the policy never cuts (it would wait forever beside idle GPUs)", async () => {
    // Found on the live service: under --policy timeslice:2, '--profile 1g.5gb' stayed queued beside two idle GPUs.
    const mig = await open(tempDir(), 'timeslice:2');
    await expect(mig.service.submit({ name: 'slice', command: ['true'], resources: { profile: '1g.5gb' } })).rejects.toMatchObject({
      code: 'BAD_INPUT',
      details: { path: 'resources.profile' },
      message: expect.stringMatching(/^job spec: resources\.profile: the service's policy timeslice:2 runs no job on a MIG slice \(it keeps MIG off\), so a job that asks for exactly 1g\.5gb would wait forever; ask for at least it/) as unknown,
    });
    const atLeast = await mig.service.submit({ name: 'at-least', command: [node, '-e', ''], resources: { profile: { atLeast: '1g.5gb' } } });
    expect((await until(mig.service, atLeast.id, ['succeeded', 'failed'])).state).toBe('succeeded');
    const fixed = await open(tempDir(), 'static:7x1g.5gb');
    await expect(fixed.service.submit({ name: 'two', command: ['true'], resources: { profile: '2g.10gb' } })).rejects.toMatchObject({ message: expect.stringMatching(/policy static:7x1g\.5gb runs jobs on 1g\.5gb slices only/) as unknown });
    const one = await fixed.service.submit({ name: 'one', command: [node, '-e', ''], resources: { profile: '1g.5gb' } });
    expect((await until(fixed.service, one.id, ['succeeded', 'failed'])).state).toBe('succeeded');
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

  it('after a restart, stops a job whose preemption was written but not yet sent when the service died, and requeues it', async () => {
    const dir = tempDir();
    const machine = SimulatedMachine.create(parseSimulateSpec('1xA100-SXM4-40GB'), 1, '1xA100-SXM4-40GB');
    const first = await open(dir, 'exclusive', machine);
    const job = await first.service.submit({ name: 'mover', preemptible: true, command: [node, '-e', 'process.on("SIGTERM", () => process.exit(143)); setTimeout(() => {}, 60000)'] });
    const running = await until(first.service, job.id, ['running']);
    // Killed between writing the preemption and sending SIGTERM (service.ts apply, 'preempt'): the store says preempting, the job runs on.
    services.splice(services.indexOf(services.find((s) => s.service === first.service)!), 1);
    await first.service.stop();
    expect(await first.store.updateJob(job.id, running.version, { reason: 'preempting' })).toMatchObject({ state: 'running', reason: 'preempting' });
    await first.store.close();
    const second = await open(dir, 'exclusive', machine);
    // Moved once: stopped, requeued, started again (before: it ran on as 'preempting' to its end, and no preempt could move it).
    const t0 = Date.now();
    let now = await second.service.getJob(job.id);
    while (!(now?.state === 'running' && now.attempt === 2) && Date.now() - t0 < 10_000) {
      await new Promise((r) => setTimeout(r, 50));
      now = await second.service.getJob(job.id);
    }
    expect(now).toMatchObject({ state: 'running', attempt: 2, preemptions: 1, reason: null });
  });

  /** A policy that gives the one GPU to the oldest foreground job, preempting background work. */
  const fgFirst: Policy = {
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

  it('preempts a preemptible background job for a foreground one: stopped, requeued, runs again with the same checkpoint folder', async () => {
    const dir = tempDir();
    const { service } = await open(dir, fgFirst, undefined, { minRunBeforePreemptSeconds: 0 });
    const seen = join(dir, 'seen');
    const script = `require('fs').appendFileSync(${JSON.stringify(seen)}, process.env.MIGPOOL_CHECKPOINT_DIR + '\\n'); process.on("SIGTERM", () => process.exit(143)); setTimeout(() => {}, 1500)`;
    const bg = await service.submit({ name: 'bg', priority: 'background', preemptible: true, command: [node, '-e', script] });
    await until(service, bg.id, ['running']);
    for (let i = 0; i < 200 && !existsSync(seen); i++) await new Promise((r) => setTimeout(r, 25));
    const fg = await service.submit({ name: 'fg', command: [node, '-e', 'setTimeout(() => {}, 200)'] });
    const fgDone = await until(service, fg.id, ['succeeded', 'failed']);
    expect(fgDone.state).toBe('succeeded');
    const bgDone = await until(service, bg.id, ['succeeded', 'failed']);
    expect(bgDone).toMatchObject({ reason: null, state: 'succeeded', attempt: 2, preemptions: 1 });
    const types = (await service.events(0)).filter((e) => e.jobId === bg.id).map((e) => e.type);
    expect(types).toContain('job-preempting');
    expect(types).toContain('job-requeued');
    const dirs = readFileSync(seen, 'utf8').trim().split('\n');
    expect(dirs).toEqual([join(dir, 'jobs', bg.id, 'checkpoint'), join(dir, 'jobs', bg.id, 'checkpoint')]);
  });

  it('a job placed where a preempted job still stops waits for it: never two jobs on one GPU', async () => {
    const dir = tempDir();
    const eager: Policy = {
      name: 'eager',
      decide(view): Decision[] {
        const gpu = view.gpus[0]!;
        const fg = view.queue.find((j) => j.priority === 'foreground');
        const holder = gpu.wholeGpuJobs[0];
        if (holder !== undefined && fg && view.running.get(holder)?.spec.priority === 'background') {
          return [
            { kind: 'preempt', job: holder },
            { kind: 'start-on-gpus', job: fg.id, gpus: [0], sharing: 'exclusive' },
          ];
        }
        const next = holder === undefined ? (fg ?? view.queue[0]) : undefined;
        return next ? [{ kind: 'start-on-gpus', job: next.id, gpus: [0], sharing: 'exclusive' }] : [];
      },
    };
    const { service } = await open(dir, eager, undefined, { minRunBeforePreemptSeconds: 0 });
    // The background job takes a while to stop (it checkpoints on SIGTERM).
    const bg = await service.submit({ name: 'bg', priority: 'background', preemptible: true, command: [node, '-e', 'process.on("SIGTERM", () => setTimeout(() => process.exit(143), 600)); setTimeout(() => {}, 1500)'] });
    await until(service, bg.id, ['running']);
    await new Promise((r) => setTimeout(r, 300));
    const fg = await service.submit({ name: 'fg', command: [node, '-e', '0'] });
    await until(service, fg.id, ['succeeded']);
    const events = (await service.events(0)).filter((e) => e.jobId !== null);
    const requeued = events.findIndex((e) => e.jobId === bg.id && e.type === 'job-requeued');
    const fgStarted = events.findIndex((e) => e.jobId === fg.id && e.type === 'job-starting');
    expect(requeued).toBeGreaterThanOrEqual(0);
    expect(fgStarted).toBeGreaterThan(requeued);
  });

  it('never preempts a job whose spec does not allow it: the foreground job waits, the background one runs once', async () => {
    const dir = tempDir();
    const lines: string[] = [];
    const { service } = await open(dir, fgFirst, undefined, { minRunBeforePreemptSeconds: 0, log: (l) => lines.push(l) });
    const bg = await service.submit({ name: 'bg', priority: 'background', command: [node, '-e', 'setTimeout(() => {}, 1200)'] });
    await until(service, bg.id, ['running']);
    const fg = await service.submit({ name: 'fg', command: [node, '-e', '0'] });
    await until(service, fg.id, ['succeeded']);
    expect(await service.getJob(bg.id)).toMatchObject({ state: 'succeeded', attempt: 1, preemptions: 0 });
    // The shared decision check refuses it (as the simulator would), and says so once.
    expect(lines.filter((l) => l.includes(`preempt job '${bg.id}'`) && l.includes('not preemptible'))).toHaveLength(1);
  });

  it('does not preempt a job before its minimum run time', async () => {
    const dir = tempDir();
    const { service } = await open(dir, fgFirst, undefined, { minRunBeforePreemptSeconds: 60 });
    const bg = await service.submit({ name: 'bg', priority: 'background', preemptible: true, command: [node, '-e', 'setTimeout(() => {}, 1000)'] });
    await until(service, bg.id, ['running']);
    const fg = await service.submit({ name: 'fg', command: [node, '-e', '0'] });
    await until(service, fg.id, ['succeeded']);
    expect(await service.getJob(bg.id)).toMatchObject({ state: 'succeeded', attempt: 1 });
  });

  it('retries count failures only: a preempted job that then always fails gets all its retries', async () => {
    const dir = tempDir();
    const { service } = await open(dir, fgFirst, undefined, { minRunBeforePreemptSeconds: 0 });
    const script = `if (process.env.MIGPOOL_ATTEMPT !== '1') process.exit(3); setTimeout(() => {}, 30000)`;
    const bg = await service.submit({ name: 'bg', priority: 'background', preemptible: true, retries: 1, command: [node, '-e', script] });
    await until(service, bg.id, ['running']);
    const fg = await service.submit({ name: 'fg', command: [node, '-e', '0'] });
    await until(service, fg.id, ['succeeded']);
    const done = await until(service, bg.id, ['failed', 'succeeded']);
    expect(done).toMatchObject({ state: 'failed', exitCode: 3, attempt: 3, preemptions: 1 });
  });

  it('a preemption of a job that has just ended on its own settles that end at once (the pass never waits for it)', async () => {
    const dir = tempDir();
    let fired = false;
    const policy: Policy = {
      name: 'late-preempt',
      decide(view): Decision[] {
        const [x, y] = [...view.queue, ...[...view.running.values()].map((r) => r.spec)].sort((a, b) => Number(a.id) - Number(b.id));
        if (x && view.queue.some((j) => j.id === x.id)) return [{ kind: 'start-on-gpus', job: x.id, gpus: [0], sharing: 'timeslice' }];
        if (!x || !y || fired || !view.queue.some((j) => j.id === y.id)) return [];
        fired = true;
        // x ends while the policy thinks: its exit arrives during y's launch, before the preemption is applied.
        const exitFile = join(dir, 'jobs', x.id, '1', 'exit.json');
        const deadline = Date.now() + 5000;
        while (!existsSync(exitFile) && Date.now() < deadline) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
        return [
          { kind: 'start-on-gpus', job: y.id, gpus: [0], sharing: 'timeslice' },
          { kind: 'preempt', job: x.id },
        ];
      },
    };
    // A launch that takes a moment, as sbatch does: the event loop turns while the pass holds the lock.
    const slowLaunch = (e: Executor): Executor => ({ ...e, launch: async (spec) => (spec.jobId === '2' ? new Promise((r) => setTimeout(r, 300)).then(() => e.launch(spec)) : e.launch(spec)) });
    const { service } = await open(dir, policy, undefined, { executor: slowLaunch, minRunBeforePreemptSeconds: 0 });
    const x = await service.submit({ name: 'x', command: [node, '-e', 'setTimeout(() => {}, 100)'] });
    await until(service, x.id, ['running', 'succeeded']);
    const t0 = Date.now();
    const y = await service.submit({ name: 'y', command: [node, '-e', '0'] });
    expect(await until(service, x.id, ['succeeded'], 5000)).toMatchObject({ attempt: 1 });
    await until(service, y.id, ['succeeded'], 5000);
    expect(Date.now() - t0).toBeLessThan(5000);
  });

  it('a re-partition that keeps failing backs off per GPU, is counted and reported, and starts nothing', async () => {
    const dir = tempDir();
    const failing = (p: GpuPort): GpuPort =>
      Object.assign(Object.create(Object.getPrototypeOf(p) as object) as GpuPort, p, {
        setMigMode: () => Promise.reject(new Error('Unable to enable MIG Mode: In use by another client')),
        createGpuInstance: () => Promise.reject(new Error('Failed to create GPU instances: In use by another client')),
      });
    const { service } = await open(dir, 'migpool', undefined, { gpu: failing });
    const recs = await service.submitMany(Array.from({ length: 3 }, (_, i) => ({ name: `s${i}`, command: [node, '-e', '0'], resources: { profile: '1g.5gb' } })));
    await new Promise((r) => setTimeout(r, 1500));
    await service.idle();
    const failed = (await service.events(0)).filter((e) => e.type === 'gpu-reconfigure-failed');
    expect(failed).toHaveLength(1);
    expect(failed[0]!.data).toMatchObject({ gpu: 0, failures: 1, retryInSeconds: 5 });
    expect((await service.stats()).reconfigurationsFailed).toBe(1);
    for (const r of recs) expect((await service.getJob(r.id))?.state).toBe('queued');
  });

  it('an explicit profile is exact: a start on a whole GPU is refused', async () => {
    const dir = tempDir();
    const lines: string[] = [];
    const whole: Policy = { name: 'whole', decide: (view) => view.queue.slice(0, 1).map((j) => ({ kind: 'start-on-gpus', job: j.id, gpus: [0], sharing: 'exclusive' })) };
    const { service } = await open(dir, whole, undefined, { log: (l) => lines.push(l) });
    const a = await service.submit({ name: 'exact', command: [node, '-e', '0'], resources: { profile: '1g.5gb' } });
    await new Promise((r) => setTimeout(r, 400));
    await service.idle();
    expect((await service.getJob(a.id))?.state).toBe('queued');
    expect(lines.some((l) => /asked for exactly 1g\.5gb, not whole GPUs/.test(l))).toBe(true);
    const b = await service.submit({ name: 'floor', command: [node, '-e', '0'], resources: { profile: { atLeast: '1g.5gb' } } });
    await service.cancel(a.id);
    expect((await until(service, b.id, ['succeeded', 'failed'])).state).toBe('succeeded');
  });

  it('runs each of six jobs submitted together exactly once (no preemption loops when nobody asked to be moved)', async () => {
    const dir = tempDir();
    const { service } = await open(dir, 'migpool', SimulatedMachine.create(parseSimulateSpec('2xA100-SXM4-40GB'), 1, '2xA100-SXM4-40GB'));
    const recs = await service.submitMany(Array.from({ length: 6 }, (_, i) => ({ name: `s${i}`, command: [node, '-e', 'setTimeout(() => {}, 2500)'], resources: { profile: '1g.5gb' } })));
    for (const r of recs) expect(await until(service, r.id, ['succeeded', 'failed'], 30_000)).toMatchObject({ state: 'succeeded', attempt: 1 });
    expect((await service.events(0)).filter((e) => e.type === 'job-requeued' || e.type === 'job-preempting')).toEqual([]);
  });

  it('says why a queued job waits, and reads how far a running job is from its progress lines', async () => {
    const dir = tempDir();
    const { service } = await open(dir, 'exclusive');
    const script = `let n = 0; console.log(JSON.stringify({ migpool_samples: 0, migpool_total: 1000 })); const t = setInterval(() => { n += 100; console.log(JSON.stringify({ migpool_samples: n })); if (n >= 500) clearInterval(t); }, 50); setTimeout(() => {}, 3000)`;
    const a = await service.submit({ name: 'talker', command: [node, '-e', script] });
    await until(service, a.id, ['running']);
    const b = await service.submit({ name: 'waiter', command: [node, '-e', '0'] });
    await service.idle();
    expect((await service.getJob(b.id))?.pending).toMatch(/^waiting for a free slice or GPU \(all busy/);
    const t0 = Date.now();
    while (((await service.getJob(a.id))?.progress?.samples ?? 0) < 500 && Date.now() - t0 < 8000) await new Promise((r) => setTimeout(r, 100));
    const p = (await service.getJob(a.id))?.progress;
    expect(p).toMatchObject({ samples: 500, total: 1000, fraction: 0.5 });
    expect(service.progressOf(a.id)).toMatchObject({ fraction: 0.5 });
    expect((await service.listJobs({ states: ['queued'] }))[0]?.pending).toBeTruthy();
  });

  it('a job that reports how far it is tells the policy its length: estimate = work done over the fraction done', async () => {
    const dir = tempDir();
    const seen: (number | null)[] = [];
    const inner = parsePolicy('exclusive');
    const spy: Policy = {
      name: 'spy',
      decide(view, ctx) {
        for (const r of view.running.values()) if (r.done > 0) seen.push(r.spec.estimate === null ? null : r.spec.estimate / r.done);
        return inner.decide(view, ctx);
      },
    };
    const { service } = await open(dir, spy);
    const script = `console.log(JSON.stringify({ migpool_samples: 0, migpool_total: 1000 })); setTimeout(() => console.log(JSON.stringify({ migpool_samples: 250 })), 300); setTimeout(() => {}, 2500)`;
    const a = await service.submit({ name: 'talker', command: [node, '-e', script] });
    await until(service, a.id, ['succeeded'], 15_000);
    // Before the report the policy knows nothing (no estimatedSeconds); after it, 4x the work done (a quarter).
    expect(seen[0]).toBeNull();
    const told = seen.filter((x): x is number => x !== null);
    expect(told.length).toBeGreaterThan(0);
    for (const x of told) expect(x).toBeCloseTo(4, 6);
  });

  it('a job that runs out of GPU memory on a slice is moved up to a larger one and succeeds, not charged as a failure', async () => {
    const dir = tempDir();
    const lines: string[] = [];
    const { service } = await open(dir, smallestSlicePolicy(), undefined, { log: (l) => lines.push(l) });
    // Out of memory on a 1g.5gb slice, as PyTorch says it; fine on anything larger.
    const script = `if (process.env.MIGPOOL_DEVICE_PROFILE === '1g.5gb') { console.error('torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 4.75 GiB total capacity)'); process.exit(1); } console.log('ran on ' + process.env.MIGPOOL_DEVICE_PROFILE)`;
    const a = await service.submit({ name: 'hungry', command: [node, '-e', script], resources: { memory: '2GiB' } });
    const done = await until(service, a.id, ['succeeded', 'failed'], 20_000);
    expect(done).toMatchObject({ state: 'succeeded', attempt: 2 });
    expect(done.placement).toMatchObject({ kind: 'instance' });
    expect(done.placement?.kind === 'instance' ? done.placement.profile : '').not.toBe('1g.5gb');
    expect(lines.some((l) => l.includes(`job ${a.id}: out of GPU memory on 1g.5gb`))).toBe(true);
    // A job bound to exactly that slice is not moved: it fails (retries: 0).
    const b = await service.submit({ name: 'bound', command: [node, '-e', script], resources: { profile: '1g.5gb' } });
    expect(await until(service, b.id, ['succeeded', 'failed'], 20_000)).toMatchObject({ state: 'failed', attempt: 1 });
  });

  it('an end the store could not record (disk full) is recorded later: the job never stays running', async () => {
    const dir = tempDir();
    let failNext = false;
    const flaky = (st: Store): Store =>
      Object.assign(Object.create(Object.getPrototypeOf(st) as object) as Store, st, {
        init: () => st.init(),
        close: () => st.close(),
        updateJob: async (...args: Parameters<Store['updateJob']>) => {
          if (failNext && args[2].state === 'succeeded') {
            failNext = false;
            throw new Error('SQLITE_FULL: database or disk is full');
          }
          return st.updateJob(...args);
        },
      });
    const { service } = await open(dir, 'exclusive', undefined, { store: flaky });
    failNext = true;
    const a = await service.submit({ name: 'full', command: [node, '-e', 'setTimeout(() => {}, 300)'] });
    expect(await until(service, a.id, ['succeeded', 'failed'], 10_000)).toMatchObject({ state: 'succeeded', attempt: 1 });
    expect(failNext).toBe(false);
    const b = await service.submit({ name: 'next', command: [node, '-e', '0'] });
    expect((await until(service, b.id, ['succeeded', 'failed'])).state).toBe('succeeded');
  });

  it('says once, not at every pass, that an end cannot be recorded while the disk stays full', async () => {
    // Found on the live service on a full 4 MiB tmpfs: the same line every 2 s for as long as the disk was full.
    let full = true;
    const flaky = (st: Store): Store =>
      Object.assign(Object.create(Object.getPrototypeOf(st) as object) as Store, st, {
        init: () => st.init(),
        close: () => st.close(),
        updateJob: async (...args: Parameters<Store['updateJob']>) => {
          if (full && args[2].state === 'succeeded') throw new Error('SQLITE_FULL: database or disk is full');
          return st.updateJob(...args);
        },
      });
    const lines: string[] = [];
    const { service } = await open(tempDir(), 'exclusive', undefined, { store: flaky, log: (l) => lines.push(l) });
    const a = await service.submit({ name: 'full', command: [node, '-e', ''] });
    const said = () => lines.filter((l) => l.startsWith(`job ${a.id}: its end`));
    for (let i = 0; i < 200 && said().length === 0; i++) await new Promise((r) => setTimeout(r, 25));
    // Many passes (a tick every 100 ms here) while the disk stays full.
    for (let i = 0; i < 8; i++) {
      service.schedule();
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(said()).toHaveLength(1);
    expect((await service.getJob(a.id))?.state).toBe('running');
    full = false;
    expect((await until(service, a.id, ['succeeded', 'failed'])).state).toBe('succeeded');
    expect(said()).toHaveLength(2);
  });

  it('two users share the pool: a user with a quota never holds more than it while the other\'s job runs beside', async () => {
    const dir = tempDir();
    const machine = SimulatedMachine.create(parseSimulateSpec('2xA100-SXM4-40GB'), 1, '2xA100-SXM4-40GB');
    const users = new Map([
      ['alice', { weight: 1, quotaGpus: 1 }],
      ['bob', { weight: 1, quotaGpus: null }],
    ]);
    const { service } = await open(dir, 'exclusive', machine, { users: () => users, jobOwner: (r) => r.spec.name.split('-')[0] });
    const sleep = (ms: number) => [node, '-e', `setTimeout(() => {}, ${ms})`];
    const alice = await service.submitMany([1, 2, 3].map((i) => ({ name: `alice-${i}`, command: sleep(1500) })));
    await until(service, alice[0]!.id, ['running']);
    await service.idle();
    // One GPU is idle, but alice's quota is 1: her other jobs wait, and say why.
    expect((await service.getJob(alice[1]!.id))?.state).toBe('queued');
    expect((await service.getJob(alice[1]!.id))?.pending).toMatch(/user 'alice' is at their quota: they hold 1 of 1 GPUs/);
    const bob = await service.submit({ name: 'bob-1', command: sleep(300) });
    await until(service, bob.id, ['running', 'succeeded']);
    // Until all are done, alice never holds two GPUs at once.
    const t0 = Date.now();
    for (;;) {
      const jobs = await service.listJobs();
      const aliceRunning = jobs.filter((j) => j.spec.name.startsWith('alice') && (j.state === 'running' || j.state === 'starting'));
      expect(aliceRunning.length).toBeLessThanOrEqual(1);
      if (jobs.every((j) => j.state === 'succeeded')) break;
      expect(Date.now() - t0).toBeLessThan(20_000);
      await new Promise((r) => setTimeout(r, 50));
    }
  });

  it('refuses at submit what the runner could never start or what no GPU here holds', async () => {
    const dir = tempDir();
    const { service } = await open(dir);
    await expect(service.submit({ name: 'x', command: ['echo', 'a\0b'] })).rejects.toThrow(/command\.1: contains a NUL byte/);
    await expect(service.submit({ name: 'x', command: ['true'], env: { BIG: 'x'.repeat(900_000) } })).rejects.toThrow(/env\.BIG: is 900000 bytes/);
    await expect(service.submit({ name: 'x', command: ['true'], resources: { memory: '100GiB' } })).rejects.toThrow(/resources\.memory: 100 GiB is more than any GPU here holds/);
    await expect(service.submit({ name: 'x', command: ['true'], resources: { gpus: 3 } })).rejects.toThrow('job spec: resources.gpus: 3 is more GPUs than this machine has (1); ask for 1');
    await expect(service.submit({ name: 'x', command: ['true'], maxRuntime: '400d' })).rejects.toThrow(/maxRuntime: at most 366 days/);
    await expect(service.submit({ name: 'x', command: [''] })).rejects.toThrow(/command\.0: is empty/);
    await expect(service.submit({ name: 'x', command: ['true'], workdir: '../../etc' })).rejects.toThrow(/workdir: '\.\.\/\.\.\/etc' is relative/);
    await expect(service.submitMany([{ name: 'ok', command: ['true'] }, { name: 'x', command: ['true'], workdir: 'exp' }])).rejects.toThrow(/job spec 2: workdir/);
    expect(await service.listJobs()).toEqual([]);
  });
});
