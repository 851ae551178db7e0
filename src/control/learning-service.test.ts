import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createLocalExecutor } from '../exec/local-executor.js';
import { SimulatedGpuPort } from '../gpu/simulated/driver.js';
import { SimulatedMachine } from '../gpu/simulated/machine.js';
import { parseSimulateSpec } from '../gpu/simulated/spec.js';
import { resolveGpuModel } from '../mig/catalog/index.js';
import { predict } from '../perf/model.js';
import { resolveWorkload } from '../perf/workloads.js';
import { SpeedTable } from '../sched/context.js';
import { smallestSlicePolicy } from '../../test/service-kit.js';
import { parsePolicy } from '../sched/registry.js';
import type { JobSpec, Policy } from '../sched/types.js';
import { openSqliteStore } from '../store/sqlite.js';
import type { JobRecord, Store } from '../store/types.js';
import { WorkloadLearning } from './learning.js';
import { PoolServiceImpl } from './service.js';

const node = process.execPath;
const A100 = resolveGpuModel('A100-SXM4-40GB');
const dirs: string[] = [];
const open: { service: PoolServiceImpl; store: Store }[] = [];

afterEach(async () => {
  for (const { service, store } of open.splice(0)) {
    for (const j of await service.listJobs({ states: ['running', 'starting'] })) await service.cancel(j.id);
    for (let i = 0; i < 100 && (await service.listJobs({ states: ['running', 'starting'] })).length > 0; i++) await new Promise((r) => setTimeout(r, 50));
    await service.idle();
    await service.stop();
    await store.close();
  }
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function until(service: PoolServiceImpl, id: string, states: readonly string[], timeoutMs = 15_000): Promise<JobRecord> {
  const t0 = Date.now();
  for (;;) {
    const j = await service.getJob(id);
    if (j && states.includes(j.state)) return j;
    if (Date.now() - t0 > timeoutMs) throw new Error(`job ${id} is ${j?.state ?? 'missing'} after ${timeoutMs} ms, not ${states.join('|')}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** samples/s of a workload on an A100 slice (null: whole GPU), memory aside. */
function sps(w: JobSpec['workload'], profile: string | null): number {
  return predict({ ...w, memoryGiB: null }, profile === null ? { kind: 'full', gpu: A100 } : { kind: 'mig', gpu: A100, profile }).samplesPerSecond!;
}

/**
 * A service on one simulated A100-40GB that learns at once (after 0.5 s of a job's run, no memory
 * poll, every observation written), in a temporary dir; `seenQueued` keeps each job as the policy
 * last saw it queued (its workload as learnt then). `before` runs on the store before the start.
 */
async function startLearning(policy: Policy, before: (store: Store) => Promise<void> = async () => {}) {
  const dir = mkdtempSync(join(tmpdir(), 'migpool-learning-service-'));
  dirs.push(dir);
  const machine = SimulatedMachine.create(parseSimulateSpec('1xA100-SXM4-40GB'), 1, '1xA100-SXM4-40GB');
  const port = new SimulatedGpuPort(machine);
  const store = await openSqliteStore(join(dir, 'migpool.db'));
  await store.init();
  await before(store);
  const seenQueued = new Map<string, JobSpec>();
  const service = new PoolServiceImpl({
    store,
    executor: createLocalExecutor({ pollMs: 50, graceSeconds: 1 }),
    gpu: port,
    policy,
    dataDir: dir,
    tickMs: 100,
    learning: { afterSeconds: 0.5, memoryPollMs: 0, persistMs: 0 },
    onRound: (round) => {
      for (const j of round.view.queue) seenQueued.set(j.id, j);
    },
  });
  await service.start();
  open.push({ service, store });
  return { machine, port, store, service, seenQueued };
}

describe('the service learns workloads from its jobs', () => {
  it('refits a workload to the speed its jobs report and the memory their processes hold, and places the next job by it', async () => {
    const { machine, port, store, service, seenQueued } = await startLearning(parsePolicy('migpool'));

    // A fake training job far slower than the model says for `small`, and as fast on every slice:
    // 100 samples every 100 ms (1,000 samples/s; the model: 4,072 on 1g.5gb, 8,026 on 3g.20gb).
    const script = `let n = 0; const t = setInterval(() => { n += 100; console.log(JSON.stringify({ migpool_samples: n })); }, 100); setTimeout(() => { clearInterval(t); }, 3000)`;
    const profiles = ['1g.5gb', '2g.10gb', '3g.20gb'];
    const jobs = await service.submitMany(profiles.map((profile) => ({ name: `talker-${profile}`, command: [node, '-e', script], workload: 'small', resources: { profile } })));
    const running = await Promise.all(jobs.map((j) => until(service, j.id, ['running'])));
    // Its processes on the 3g.20gb slice hold 6 GiB (nvidia-smi's per-process memory, here the simulated GPU's).
    const on3g = running.find((j) => j.placement?.kind === 'instance' && j.placement.profile === '3g.20gb')!;
    const place = on3g.placement as Extract<JobRecord['placement'], { kind: 'instance' }>;
    const gi = (await port.listGpuInstances(0)).find((i) => i.start === place.start)!;
    const ci = (await port.listComputeInstances(0)).find((c) => c.gpuInstanceId === gi.id)!;
    const pid = machine.attachProcess(0, { gpuInstanceId: gi.id, computeInstanceId: ci.id, usedMemoryMiB: 6144 });
    for (const j of jobs) expect((await until(service, j.id, ['succeeded', 'failed'])).state).toBe('succeeded');
    machine.detachProcess(pid);

    const observed = service.learning.observations('small');
    expect(observed.map((o) => o.resource).sort()).toEqual(profiles);
    // About 1,000 samples/s (less when this machine is loaded and the job's timer lags); far below the model.
    const measured = new Map(observed.map((o) => [o.resource, o.samplesPerSecond!]));
    for (const o of observed) {
      expect(o.samplesPerSecond).toBeGreaterThan(300);
      expect(o.samplesPerSecond).toBeLessThan(1500);
    }
    expect(observed.find((o) => o.resource === '3g.20gb')?.peakMemoryMiB).toBe(6144);
    expect(await store.listObservations('small')).toEqual(observed);

    // The next job of the workload: the policy's view carries the refitted workload.
    const next = await service.submit({ name: 'next', command: [node, '-e', '0'], workload: 'small' });
    await until(service, next.id, ['succeeded', 'failed']);
    const learned = seenQueued.get(next.id)!.workload;
    const model = resolveWorkload('small');
    expect(learned.source).toContain('learned');
    // Its speed moved to the measured one: within 25% of it on every slice, where the model said 4-8x more.
    for (const p of profiles) {
      const m = measured.get(p)!;
      expect(Math.abs(sps(learned, p) - m)).toBeLessThan(Math.abs(sps(model, p) - m));
      expect(Math.abs(sps(learned, p) - m) / m).toBeLessThan(0.25);
    }
    // A 1g.5gb slice does as well as a whole GPU for it now, by the speeds the policy reads ...
    const speeds = new SpeedTable();
    expect(speeds.relative(learned, A100, 'mig', '1g.5gb')).toBeGreaterThan(0.7);
    expect(speeds.relative(model, A100, 'mig', '1g.5gb')).toBeLessThan(0.6);
    // ... but it needs the 6 GiB its processes held, so no 1g.5gb slice (4.75 GiB) is chosen for it.
    expect(learned.memoryGiB).toBe(6);
    const placed = await service.getJob(next.id);
    expect(placed?.placement?.kind === 'instance' ? placed.placement.profile : 'whole').not.toBe('1g.5gb');

    // What was learned outlives the service: a new learner on the same store reads it back.
    const again = new WorkloadLearning(store, port);
    await again.load();
    expect(again.workload('small', model).memoryGiB).toBe(6);
    // (The store holds each attempt's last speed; the fit the policy saw moves only past SPEED_CHANGE, 5%.)
    expect(Math.abs(sps(again.workload('small', model), '1g.5gb') / sps(learned, '1g.5gb') - 1)).toBeLessThan(0.08);
  }, 40_000);

  it("a user's fake out-of-memory moves only their own later jobs to bigger slices; an admin's moves everyone's", async () => {
    // root is an admin (the operator); alice and bob are not.
    const { store, service, seenQueued } = await startLearning(smallestSlicePolicy(), async (st) => {
      await st.insertUser({ name: 'root', admin: true }, 'a'.repeat(64), Date.now());
      await st.insertUser({ name: 'alice' }, 'b'.repeat(64), Date.now());
      await st.insertUser({ name: 'bob' }, 'c'.repeat(64), Date.now());
    });
    // A job that claims to run out of memory on a 1g.5gb slice, as PyTorch says it (nothing checks the claim).
    const liar = `if (process.env.MIGPOOL_DEVICE_PROFILE === '1g.5gb') { console.error('torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 4.75 GiB total capacity)'); process.exit(1); }`;
    const run = async (owner: string, command: string): Promise<{ profile: string; memoryGiB: number | null }> => {
      const j = await service.submit({ name: `${owner}-job`, command: [node, '-e', command], workload: 'small' }, { owner });
      const done = await until(service, j.id, ['succeeded', 'failed']);
      expect(done.state).toBe('succeeded');
      return { profile: done.placement?.kind === 'instance' ? done.placement.profile : 'whole', memoryGiB: seenQueued.get(j.id)!.workload.memoryGiB };
    };
    const model = resolveWorkload('small');
    // bob's job "runs out of memory" on 1g.5gb and is moved up (attempt 2 on a larger slice).
    expect((await run('bob', liar)).profile).not.toBe('1g.5gb');
    expect((await store.listObservations('small')).map((o) => [o.owner, o.shared, o.outOfMemory])).toEqual([['bob', false, true]]);
    // alice's job of the same workload is placed as before bob's job ran: on a 1g.5gb slice, at the model's memory.
    expect(await run('alice', '0')).toEqual({ profile: '1g.5gb', memoryGiB: model.memoryGiB });
    // bob's own next job takes what his job taught into account: more than a 1g.5gb slice holds.
    const bobNext = await run('bob', '0');
    expect(bobNext.profile).toBe('2g.10gb');
    expect(bobNext.memoryGiB).toBeGreaterThan(4.75);
    // An admin's job that runs out of memory there teaches everyone: alice's next job needs a larger slice too.
    expect((await run('root', liar)).profile).not.toBe('1g.5gb');
    const aliceNext = await run('alice', '0');
    expect(aliceNext.profile).toBe('2g.10gb');
    expect(aliceNext.memoryGiB).toBeGreaterThan(4.75);
  }, 60_000);
});
