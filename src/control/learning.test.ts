import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SimulatedGpuPort } from '../gpu/simulated/driver.js';
import { SimulatedMachine } from '../gpu/simulated/machine.js';
import { parseSimulateSpec } from '../gpu/simulated/spec.js';
import { resolveGpuModel } from '../mig/catalog/index.js';
import { predict } from '../perf/model.js';
import { resolveWorkload } from '../perf/workloads.js';
import { openSqliteStore } from '../store/sqlite.js';
import type { JobRecord, Store, WorkloadObservation } from '../store/types.js';
import { learnedWorkload, memoryOfPlacements, WorkloadLearning } from './learning.js';

const A100 = resolveGpuModel('A100-SXM4-40GB');
const small = resolveWorkload('small');
const T0 = 1_700_000_000_000;
const dirs: string[] = [];
const stores: Store[] = [];

afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

let nextJob = 1;
function seen(resource: string, samplesPerSecond: number | null, extra: Partial<WorkloadObservation> = {}): WorkloadObservation {
  return { workload: 'small', jobId: String(nextJob++), attempt: 1, gpuModel: A100.name, resource, samplesPerSecond, peakMemoryMiB: null, outOfMemory: false, time: T0, owner: null, shared: true, ...extra };
}

function sps(w: typeof small, profile: string | null): number {
  return predict({ ...w, memoryGiB: null }, profile === null ? { kind: 'full', gpu: A100 } : { kind: 'mig', gpu: A100, profile }).samplesPerSecond!;
}

async function store(): Promise<Store> {
  const d = mkdtempSync(join(tmpdir(), 'migpool-learning-'));
  dirs.push(d);
  const s = await openSqliteStore(join(d, 'migpool.db'));
  await s.init();
  stores.push(s);
  return s;
}

describe('learnedWorkload (pure)', () => {
  it('one measured speed rescales the curve to it; the slice-to-slice ratios stay', () => {
    const measured = sps(small, '1g.5gb') / 2;
    const w = learnedWorkload(small, [seen('1g.5gb', measured)]);
    expect(sps(w, '1g.5gb')).toBeCloseTo(measured, 0);
    expect(sps(w, '3g.20gb') / sps(w, '1g.5gb')).toBeCloseTo(sps(small, '3g.20gb') / sps(small, '1g.5gb'), 6);
    expect(w.source).toContain('learned');
  });

  it('speeds on three slice sizes refit the shape: a job as fast on 1g as on 3g gains nothing from a bigger slice', () => {
    const w = learnedWorkload(small, [seen('1g.5gb', 1000), seen('2g.10gb', 1000), seen('3g.20gb', 1000)]);
    const model = sps(small, '1g.5gb') / sps(small, null);
    const learned = sps(w, '1g.5gb') / sps(w, null);
    expect(model).toBeLessThan(0.6);
    expect(learned).toBeGreaterThan(0.9);
    expect(Math.abs(sps(w, '2g.10gb') - 1000) / 1000).toBeLessThan(0.1);
  });

  it('peak memory raises the need, never lowers it; an out-of-memory on a slice puts it above that slice', () => {
    expect(learnedWorkload(small, [seen('3g.20gb', null, { peakMemoryMiB: 6144 })]).memoryGiB).toBe(6);
    expect(learnedWorkload(small, [seen('3g.20gb', null, { peakMemoryMiB: 1024 })]).memoryGiB).toBe(small.memoryGiB);
    const oom = learnedWorkload(small, [seen('1g.5gb', null, { outOfMemory: true })]);
    expect(oom.memoryGiB).toBeGreaterThan(A100.giProfiles.find((p) => p.name === '1g.5gb')!.memoryGiB!);
  });

  it('skips observations on GPU models or profiles it does not know', () => {
    expect(learnedWorkload(small, [seen('1g.5gb', 10, { gpuModel: 'no-such-gpu' }), seen('9g.99gb', 10)])).toBe(small);
  });
});

describe('memoryOfPlacements', () => {
  it('sums the processes of each job: on its GPU instance, or on its exclusive whole GPU', () => {
    const placements = new Map([
      ['1', { kind: 'instance' as const, gpu: 0, start: 0, profile: '1g.5gb', devices: ['MIG-a'] }],
      ['2', { kind: 'gpus' as const, gpus: [1], sharing: 'exclusive' as const, devices: ['GPU-b'] }],
      ['3', { kind: 'gpus' as const, gpus: [2], sharing: 'mps' as const, devices: ['GPU-c'] }],
    ]);
    const instances = [{ gpu: 0, id: 9, profile: '1g.5gb', profileId: 19, start: 0, size: 1 }];
    const p = (pid: number, gpu: number, gpuInstanceId: number | null, usedMemoryMiB: number) => ({ pid, name: 'python', gpu, gpuInstanceId, computeInstanceId: gpuInstanceId === null ? null : 0, usedMemoryMiB });
    const got = memoryOfPlacements(placements, instances, [p(1, 0, 9, 1000), p(2, 0, 9, 500), p(3, 0, 7, 4000), p(4, 1, null, 3000), p(5, 2, null, 800)]);
    expect([...got]).toEqual([
      ['1', 1500],
      ['2', 3000],
    ]);
  });
});

describe('WorkloadLearning', () => {
  const running = (over: Partial<JobRecord> = {}): JobRecord =>
    ({
      id: '1',
      spec: { workload: 'small' },
      state: 'running',
      attempt: 1,
      startedAt: T0,
      placement: { kind: 'instance', gpu: 0, start: 0, profile: '1g.5gb', devices: ['MIG-x'] },
      ...over,
    }) as unknown as JobRecord;

  it('learns from running attempts, writes what they measured, and a new learner reads it back', async () => {
    const s = await store();
    const machine = SimulatedMachine.create(parseSimulateSpec('1xA100-SXM4-40GB'), 1, '1xA100-SXM4-40GB');
    const port = new SimulatedGpuPort(machine);
    await port.setMigMode(0, true);
    await port.resetGpu(0).catch(() => undefined);
    const gi = await port.createGpuInstance(0, '1g.5gb', 0);
    const ci = await port.createComputeInstance(0, gi.id, '1g.5gb');
    machine.attachProcess(0, { gpuInstanceId: gi.id, computeInstanceId: ci.id, usedMemoryMiB: 5000 });
    const learning = new WorkloadLearning(s, port, { afterSeconds: 30, memoryPollMs: 0, persistMs: 60_000 });
    const modelOf = () => A100.name;
    // Too early for its speed (start-up), but its memory counts at once.
    let changed = await learning.observe([running()], modelOf, () => 500, T0 + 10_000);
    expect([...changed]).toEqual(['small']);
    // 5000 MiB = 4.883 GiB, rounded up to the next 0.01 GiB.
    expect(learning.workload('small', small).memoryGiB).toBe(4.89);
    expect(learning.observations('small')[0]?.samplesPerSecond).toBeNull();
    changed = await learning.observe([running()], modelOf, () => 500, T0 + 40_000);
    expect([...changed]).toEqual(['small']);
    const w = learning.workload('small', small);
    expect(learning.workload('small', small)).toBe(w);
    expect(sps(w, '1g.5gb')).toBeCloseTo(500, 0);
    // A speed within SPEED_CHANGE of the one fitted refits nothing.
    expect((await learning.observe([running()], modelOf, () => 510, T0 + 41_000)).size).toBe(0);
    expect(learning.workload('small', small)).toBe(w);
    // Written at the first look and then every persistMs: the speed is not in the store yet ...
    expect((await s.listObservations()).map((o) => [o.samplesPerSecond, o.peakMemoryMiB])).toEqual([[null, 5000]]);
    // ... until the attempt ends.
    await learning.ended(running());
    expect(await s.listObservations('small')).toEqual([{ workload: 'small', jobId: '1', attempt: 1, gpuModel: A100.name, resource: '1g.5gb', samplesPerSecond: 510, peakMemoryMiB: 5000, outOfMemory: false, time: T0 + 41_000, owner: null, shared: true }]);
    const again = new WorkloadLearning(s, port);
    await again.load();
    expect(sps(again.workload('small', small), '1g.5gb')).toBeCloseTo(510, 0);
    // Jobs on shared GPUs or without a named workload teach nothing.
    const shared = running({ id: '2', placement: { kind: 'gpus', gpus: [0], sharing: 'timeslice', devices: ['GPU-x'] } });
    const unnamed = running({ id: '3', spec: {} as JobRecord['spec'] });
    expect((await again.observe([shared, unnamed], modelOf, () => 100, T0 + 90_000)).size).toBe(0);
  });
});

describe('WorkloadLearning when the GPUs cannot be read', () => {
  it('says a failing memory read once per cause, and when it works again', async () => {
    const running = (): JobRecord =>
      ({ id: '1', spec: { workload: 'small' }, state: 'running', attempt: 1, startedAt: T0, placement: { kind: 'instance', gpu: 0, start: 0, profile: '1g.5gb', devices: ['MIG-x'] } }) as unknown as JobRecord;
    const s = await store();
    const machine = SimulatedMachine.create(parseSimulateSpec('1xA100-SXM4-40GB'), 1, '1xA100-SXM4-40GB');
    const port = new SimulatedGpuPort(machine);
    let broken = true;
    const flaky = Object.assign(Object.create(port) as SimulatedGpuPort, {
      listProcesses: () => (broken ? Promise.reject(new Error('list processes: nvidia-smi not found')) : port.listProcesses()),
    });
    const lines: string[] = [];
    const learning = new WorkloadLearning(s, flaky, { memoryPollMs: 0, persistMs: 60_000 }, (l) => lines.push(l));
    for (let i = 0; i < 5; i++) await learning.observe([running()], () => A100.name, () => null, T0 + i * 1000);
    broken = false;
    await learning.observe([running()], () => A100.name, () => null, T0 + 10_000);
    expect(lines).toEqual(["reading the GPUs' per-process memory failed: list processes: nvidia-smi not found; trying again every 0 s", "reading the GPUs' per-process memory works again"]);
  });
});

describe('WorkloadLearning fits the newest speeds', () => {
  it('reads at most FIT_PER_RESOURCE speeds per resource, the newest, and the memory of all', async () => {
    const s = await store();
    // An old, slow version of the job and a newer one twice as fast, on the same slice.
    for (let i = 1; i <= 20; i++) await s.putObservation({ workload: 'small', jobId: String(i), attempt: 1, gpuModel: A100.name, resource: '1g.5gb', samplesPerSecond: i <= 4 ? 250 : 500, peakMemoryMiB: i === 1 ? 5000 : null, outOfMemory: false, time: T0 + i, owner: null, shared: true });
    const learning = new WorkloadLearning(s, new SimulatedGpuPort(SimulatedMachine.create(parseSimulateSpec('1xA100-SXM4-40GB'), 1, '1xA100-SXM4-40GB')));
    await learning.load();
    const w = learning.workload('small', small);
    expect(sps(w, '1g.5gb')).toBeCloseTo(500, 0);
    expect(w.memoryGiB).toBe(4.89);
  });
});

describe('WorkloadLearning: whose observations teach whom', () => {
  // A job of `small` owned by `owner`, running alone on a 1g.5gb slice (or `profile`).
  const job = (id: string, owner: string | null, profile = '1g.5gb'): JobRecord =>
    ({ id, owner, spec: { workload: 'small' }, state: 'running', attempt: 1, startedAt: T0, placement: { kind: 'instance', gpu: 0, start: 0, profile, devices: ['MIG-x'] } }) as unknown as JobRecord;
  const hash = (c: string) => c.repeat(64);
  const oneG = A100.giProfiles.find((p) => p.name === '1g.5gb')!.memoryGiB!;
  const twoG = A100.giProfiles.find((p) => p.name === '2g.10gb')!.memoryGiB!;

  async function learner(): Promise<{ s: Store; learning: WorkloadLearning }> {
    const s = await store();
    // root is an admin (the operator); bob and alice are not. The learner asks the store who is.
    await s.insertUser({ name: 'root', admin: true }, hash('a'), T0);
    await s.insertUser({ name: 'bob' }, hash('b'), T0);
    await s.insertUser({ name: 'alice' }, hash('c'), T0);
    const port = new SimulatedGpuPort(SimulatedMachine.create(parseSimulateSpec('1xA100-SXM4-40GB'), 1, '1xA100-SXM4-40GB'));
    return { s, learning: new WorkloadLearning(s, port, { afterSeconds: 0, memoryPollMs: 60_000, persistMs: 0 }) };
  }

  it("a user's fake slow progress and fake out-of-memory change only their own jobs' workload", async () => {
    const { s, learning } = await learner();
    // bob's job prints progress at a tenth of the model's speed, then "runs out of memory" on 1g.5gb.
    const slow = sps(small, '1g.5gb') / 10;
    expect([...(await learning.observe([job('1', 'bob')], () => A100.name, () => slow, T0 + 60_000))]).toEqual(['small']);
    await learning.outOfMemory(job('1', 'bob'), A100.name, T0 + 61_000);
    // alice's jobs, and jobs of no user, see the workload as it was: the very same object.
    expect(learning.workload('small', small, 'alice')).toBe(small);
    expect(learning.workload('small', small, null)).toBe(small);
    // bob's next job sees what bob's job taught: a tenth of the speed, more memory than a 1g.5gb slice holds.
    const bobs = learning.workload('small', small, 'bob');
    expect(sps(bobs, '1g.5gb')).toBeCloseTo(slow, 0);
    expect(bobs.memoryGiB).toBeGreaterThan(oneG);
    // Stored with its owner, not shared; a restarted learner keeps it bob's.
    expect((await s.listObservations('small')).map((o) => [o.owner, o.shared, o.outOfMemory])).toEqual([['bob', false, true]]);
    const again = new WorkloadLearning(s, new SimulatedGpuPort(SimulatedMachine.create(parseSimulateSpec('1xA100-SXM4-40GB'), 1, '1xA100-SXM4-40GB')));
    await again.load();
    expect(again.workload('small', small, 'alice')).toBe(small);
    expect(again.workload('small', small, 'bob').memoryGiB).toBeGreaterThan(oneG);
  });

  it("an admin's observation (and one of a job of no user) teaches every user's jobs, each still corrected by their own", async () => {
    const { s, learning } = await learner();
    await learning.outOfMemory(job('1', 'bob'), A100.name, T0 + 1_000);
    // root's job runs out of memory on a 2g.10gb slice: everyone's jobs need more than 2g.10gb holds.
    await learning.outOfMemory(job('2', 'root', '2g.10gb'), A100.name, T0 + 2_000);
    for (const who of ['alice', 'bob', 'root', null]) expect(learning.workload('small', small, who).memoryGiB).toBeGreaterThan(twoG);
    // A job of no user (a pool without users) is the operator's too: its speed teaches everyone.
    const measured = sps(small, '3g.20gb') / 2;
    await learning.observe([job('3', null, '3g.20gb')], () => A100.name, () => measured, T0 + 60_000);
    expect(sps(learning.workload('small', small, 'alice'), '3g.20gb')).toBeCloseTo(measured, 0);
    // bob's own slow point still moves only bob's fit, on top of the shared one.
    await learning.observe([job('4', 'bob', '2g.10gb')], () => A100.name, () => 10, T0 + 70_000);
    await learning.ended(job('4', 'bob', '2g.10gb'));
    expect(sps(learning.workload('small', small, 'alice'), '3g.20gb')).toBeCloseTo(measured, 0);
    expect(sps(learning.workload('small', small, 'bob'), '2g.10gb')).toBeLessThan(sps(learning.workload('small', small, 'alice'), '2g.10gb') / 5);
    expect((await s.listObservations('small')).map((o) => [o.jobId, o.owner, o.shared])).toEqual([
      ['1', 'bob', false],
      ['2', 'root', true],
      ['3', null, true],
      ['4', 'bob', false],
    ]);
  });
});
