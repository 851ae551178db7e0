import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createLocalExecutor } from '../exec/local-executor.js';
import { SimulatedGpuPort } from '../gpu/simulated/driver.js';
import { SimulatedMachine } from '../gpu/simulated/machine.js';
import { parseSimulateSpec } from '../gpu/simulated/spec.js';
import { parsePolicy } from '../sched/registry.js';
import type { Decision, Policy, UserShare } from '../sched/types.js';
import { openSqliteStore } from '../store/sqlite.js';
import type { JobRecord, Store } from '../store/types.js';
import { PoolServiceImpl } from './service.js';
import { closeService, sleep } from '../../test/service-kit.js';

// Races between an operator's cancel or preempt and the service's own passes, on a simulated A100.

const node = process.execPath;
const dirs: string[] = [];
const services: { service: PoolServiceImpl; store: Store }[] = [];
/** Stops on SIGTERM after `ms` (a checkpoint), else runs a minute. */
const stopsAfter = (ms: number) => [node, '-e', `process.on("SIGTERM", () => setTimeout(() => process.exit(143), ${ms})); setTimeout(() => {}, 60000)`];

afterEach(async () => {
  for (const { service, store } of services.splice(0)) await closeService(service, store);
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});


interface Gate {
  /** Passes that begin (once `when` says so) wait at their start until `open`. */
  close(when?: () => Promise<boolean>): void;
  open(): void;
}

/**
 * A service whose passes can be held at their start (`gate.close()`): the users look-up each pass
 * begins with (after settling the ends seen) waits until `gate.open()`, as a pass busy
 * re-partitioning keeps requests waiting.
 */
async function open(policy: string | Policy = 'exclusive', wrapStore: (s: Store) => Store = (s) => s): Promise<{ service: PoolServiceImpl; gate: Gate }> {
  const dir = mkdtempSync(join(tmpdir(), 'migpool-races-'));
  dirs.push(dir);
  const real = await openSqliteStore(join(dir, 'migpool.db'));
  await real.init();
  const store = wrapStore(real);
  let held: Promise<void> | null = null;
  let holdIf = () => Promise.resolve(true);
  let release = () => {};
  const gate: Gate = {
    close: (when) => {
      held = new Promise<void>((r) => (release = r));
      holdIf = when ?? (() => Promise.resolve(true));
    },
    open: () => {
      held = null;
      release();
    },
  };
  const service = new PoolServiceImpl({
    store,
    executor: createLocalExecutor({ pollMs: 50, graceSeconds: 1 }),
    gpu: new SimulatedGpuPort(SimulatedMachine.create(parseSimulateSpec('1xA100-SXM4-40GB'), 1, '1xA100-SXM4-40GB')),
    policy: typeof policy === 'string' ? parsePolicy(policy) : policy,
    dataDir: dir,
    tickMs: 100,
    users: async () => {
      if (held && (await holdIf())) await held;
      return new Map<string, UserShare>();
    },
  });
  await service.start();
  services.push({ service, store });
  return { service, gate };
}

async function until(service: PoolServiceImpl, id: string, ok: (j: JobRecord) => boolean, timeoutMs = 10_000): Promise<JobRecord> {
  const t0 = Date.now();
  for (;;) {
    const j = await service.getJob(id);
    if (j && ok(j)) return j;
    if (Date.now() - t0 > timeoutMs) throw new Error(`job ${id} is ${j?.state ?? 'missing'} (attempt ${j?.attempt ?? '?'}) after ${timeoutMs} ms`);
    await sleep(25);
  }
}

const types = async (service: PoolServiceImpl, id: string) => (await service.events(0)).filter((e) => e.jobId === id).map((e) => e.type);

describe('operator preempts', () => {
  it('a preempt that came before the job started again after a preemption does not move the new attempt', async () => {
    const { service } = await open();
    const job = await service.submit({ name: 'mover', preemptible: true, command: stopsAfter(0) });
    await until(service, job.id, (j) => j.state === 'running');
    const receivedAt = Date.now();
    expect(await service.preempt(job.id, receivedAt)).toMatchObject({ state: 'running', reason: 'preempting' });
    await until(service, job.id, (j) => j.state === 'running' && j.attempt === 2);
    // A second request sent with the first, processed only now (a slow client, a busy service).
    expect(await service.preempt(job.id, receivedAt)).toMatchObject({ state: 'running', attempt: 2, reason: null });
    await service.idle();
    await sleep(300);
    expect(await service.getJob(job.id)).toMatchObject({ state: 'running', attempt: 2, preemptions: 1 });
    // One that comes after the restart moves it again.
    expect(await service.preempt(job.id)).toMatchObject({ reason: 'preempting', attempt: 2 });
    await until(service, job.id, (j) => j.state === 'running' && j.attempt === 3);
  });

  it('five preempts at once move the job once, and each is answered with the job', async () => {
    const { service } = await open();
    const job = await service.submit({ name: 'mover', preemptible: true, command: stopsAfter(0) });
    await until(service, job.id, (j) => j.state === 'running');
    const answers = await Promise.all([1, 2, 3, 4, 5].map(() => service.preempt(job.id)));
    for (const a of answers) expect(a).toMatchObject({ id: job.id, attempt: 1 });
    await until(service, job.id, (j) => j.state === 'running' && j.attempt === 2);
    await sleep(400);
    expect(await service.getJob(job.id)).toMatchObject({ state: 'running', attempt: 2, preemptions: 1 });
    expect((await types(service, job.id)).filter((t) => t === 'job-preempting')).toHaveLength(1);
  });

  it('a preempt of a job requeued by a preemption, not yet started again, answers with the queued job', async () => {
    // Starts the first job only, and only until it is preempted: the moved job stays queued.
    const once: Policy = {
      name: 'once',
      decide(view): Decision[] {
        const next = view.queue.find((j) => j.id === '1' && (view.history?.(j.id).preemptions ?? 0) === 0);
        return next && view.running.size === 0 ? [{ kind: 'start-on-gpus', job: next.id, gpus: [0], sharing: 'exclusive' }] : [];
      },
    };
    const { service } = await open(once);
    const job = await service.submit({ name: 'mover', preemptible: true, command: stopsAfter(0) });
    expect(job.id).toBe('1');
    await until(service, job.id, (j) => j.state === 'running');
    await service.preempt(job.id);
    await until(service, job.id, (j) => j.state === 'queued');
    expect(await service.preempt(job.id)).toMatchObject({ state: 'queued', attempt: 1, preemptions: 1, reason: 'preempted during attempt 1; requeued' });
    // A job queued for another reason than a preemption is no running job: refused as before.
    const other = await service.submit({ name: 'waits', preemptible: true, command: stopsAfter(0) });
    await service.idle();
    await expect(service.preempt(other.id)).rejects.toMatchObject({ code: 'CHECK_FAILED', message: `job ${other.id} is queued, not running: only a running job can be preempted` });
  });

  it('a preempt of a job being cancelled moves nothing: it ends cancelled, never requeued', async () => {
    const { service } = await open();
    const job = await service.submit({ name: 'slow-stop', preemptible: true, command: stopsAfter(500) });
    await until(service, job.id, (j) => j.state === 'running');
    await service.cancel(job.id);
    expect(await service.preempt(job.id)).toMatchObject({ state: 'running', cancelRequested: true });
    const done = await until(service, job.id, (j) => j.state === 'cancelled');
    expect(done).toMatchObject({ attempt: 1, preemptions: 0, reason: 'cancelled while running' });
    expect(await types(service, job.id)).not.toContain('job-preempting');
  });
});

describe('cancels', () => {
  it('a cancel that came while a pass was under way wins over that pass starting the job', async () => {
    const { service, gate } = await open();
    gate.close();
    const job = await service.submit({ name: 'raced', command: [node, '-e', 'setTimeout(() => {}, 60000)'] });
    await sleep(100); // the pass that will start it is under way, held at its start
    const cancelled = service.cancel(job.id);
    await sleep(50);
    gate.open();
    expect(await cancelled).toMatchObject({ state: 'cancelled', attempt: 0, reason: 'cancelled before it started' });
    await service.idle();
    expect(await service.getJob(job.id)).toMatchObject({ state: 'cancelled', attempt: 0 });
    expect(await types(service, job.id)).not.toContain('job-starting');
  });

  it('a cancel that comes while an attempt is being prepared (job starting) ends the job before it runs, no attempt charged', async () => {
    // The owner's account is looked up while the attempt is prepared (run-as.ts): that look-up waits here.
    let lookedUp = () => {};
    const lookingUp = new Promise<void>((r) => (lookedUp = r));
    let answer = () => {};
    const answered = new Promise<void>((r) => (answer = r));
    const slowUsers = (s: Store): Store =>
      new Proxy(s, {
        get(target, key, receiver) {
          if (key !== 'getUser') return Reflect.get(target, key, receiver) as unknown;
          return async (name: string) => {
            lookedUp();
            await answered;
            return target.getUser(name);
          };
        },
      });
    const { service } = await open('exclusive', slowUsers);
    const job = await service.submit({ name: 'raced', command: [node, '-e', 'setTimeout(() => {}, 60000)'] }, { owner: 'alice' });
    await lookingUp;
    expect((await service.getJob(job.id))?.state).toBe('starting');
    const cancelled = service.cancel(job.id);
    await sleep(50);
    answer();
    expect(await cancelled).toMatchObject({ state: 'cancelled', attempt: 0, placement: null, reason: 'cancelled before it started' });
    await service.idle();
    expect(await types(service, job.id)).not.toContain('job-started');
    expect(await service.listJobs({ states: ['running', 'starting'] })).toEqual([]);
  });

  it('a cancel during a preemption\'s grace period ends the job cancelled, not requeued', async () => {
    const { service } = await open();
    const job = await service.submit({ name: 'slow-stop', preemptible: true, command: stopsAfter(500) });
    await until(service, job.id, (j) => j.state === 'running');
    await service.preempt(job.id);
    expect(await service.cancel(job.id)).toMatchObject({ state: 'running', reason: 'preempting', cancelRequested: true });
    const done = await until(service, job.id, (j) => j.state === 'cancelled');
    expect(done).toMatchObject({ attempt: 1, preemptions: 0, reason: 'cancelled while running' });
    expect(await types(service, job.id)).not.toContain('job-requeued');
  });

  it("a cancel of a job whose 'after' dependency has just succeeded wins over the pass that would start it", async () => {
    const { service, gate } = await open();
    const first = await service.submit({ name: 'first', command: [node, '-e', 'setTimeout(() => {}, 300)'] });
    const then = await service.submit({ name: 'then', after: [first.id], command: [node, '-e', 'setTimeout(() => {}, 60000)'] });
    await until(service, first.id, (j) => j.state === 'running');
    // The pass after first's end, the one that would start 'then', is held at its start.
    gate.close(async () => (await service.getJob(first.id))?.state === 'succeeded');
    await until(service, first.id, (j) => j.state === 'succeeded');
    await sleep(100);
    const cancelled = service.cancel(then.id);
    await sleep(50);
    gate.open();
    expect(await cancelled).toMatchObject({ state: 'cancelled', attempt: 0, reason: 'cancelled before it started' });
    expect(await types(service, then.id)).not.toContain('job-starting');
  });
});
