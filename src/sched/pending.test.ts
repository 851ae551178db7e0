import { describe, expect, it } from 'vitest';
import { resolveGpuModel } from '../mig/catalog/index.js';
import { resolveWorkload } from '../perf/workloads.js';
import { createPolicyContext } from './context.js';
import { checkDecision, queueLookup } from './check.js';
import { explainPending } from './pending.js';
import { idleInstancesOf, idleMigGpus, wholeGpusWith } from './policies/common.js';
import { RECUT_RULE } from './policies/migpool.js';
import type { ClusterView, GpuView, JobSpec, PolicyContext, RunningJobView } from './types.js';

const a100 = resolveGpuModel('A100-SXM4-40GB');
const small = resolveWorkload('small');
const ctx = { fits: () => true, speedOn: () => 1, random: () => 0, reconfigureSeconds: 5 } as PolicyContext;
const job = (id: string, more: Partial<JobSpec> = {}): JobSpec => ({ id, workload: small, gpus: 1, priority: 'foreground', arrival: 0, estimate: 10, memoryGiB: null, profile: null, ...more });
const oneG = a100.giProfiles.find((p) => p.name === '1g.5gb')!;
const cut = (id: number, jobs: (string | null)[]): GpuView => ({
  id,
  model: a100,
  migEnabled: true,
  instances: jobs.map((j, k) => ({ gpu: id, profile: oneG, start: k, size: 1, job: j })),
  wholeGpuJobs: [],
  sharing: 'exclusive',
  busyUntil: null,
});

describe('explainPending', () => {
  it('says why each queued job waits', () => {
    const view: ClusterView = {
      now: 100,
      gpus: [cut(0, ['r1', 'r2', 'r3', 'r4', 'r5', 'r6', 'r7']), cut(1, ['r8', 'r9', 'r10', 'r11', 'r12', 'r13', 'r14'])],
      queue: [
        job('big', { gpus: 3 }),
        job('exact', { profile: '7g.80gb', exactProfile: true }),
        job('slice', { profile: '1g.5gb', exactProfile: true }),
        job('any'),
        job('bg', { priority: 'background' }),
      ],
      running: new Map(),
    };
    const r = explainPending(view, ctx);
    expect(r.get('big')).toBe('does not fit any GPU here');
    expect(r.get('exact')).toMatch(/^does not fit any GPU here: no GPU here offers 7g\.80gb/);
    expect(r.get('slice')).toBe('waiting for a 1g.5gb slice (it asked for exactly that profile; held by job r1, r2, r3, ...)');
    expect(r.get('any')).toBe('waiting for a free slice or GPU (all busy; 3 jobs ahead in line)');
    expect(r.get('bg')).toBe('waiting for a free slice or GPU (all busy; 4 jobs ahead in line)');
  });

  it('says which idle slices a job waits beside, and whether they are too small for it', () => {
    const view: ClusterView = { now: 0, gpus: [cut(0, ['r1', null, null, 'r4', 'r5', 'r6', 'r7'])], queue: [job('fits'), job('big', { memoryGiB: 20 })], running: new Map() };
    const fitsByMemory = { ...ctx, fits: (j: JobSpec, on: { kind: string }) => on.kind !== 'instance' || (j.memoryGiB ?? 0) <= 4.75 } as PolicyContext;
    const r = explainPending(view, fitsByMemory);
    expect(r.get('fits')).toBe('waiting: idle 2x1g.5gb slices would hold it, but the policy did not start it in the last pass; 0 jobs ahead in line');
    expect(r.get('big')).toBe(
      'waiting for a whole GPU or a larger slice: the idle slices (2x1g.5gb) are too small for it (it needs 20 GiB); no GPU here can be cut into a slice that holds it: it waits for a whole GPU (1 job ahead in line)',
    );
    // After a policy's own words (which say what goes ahead of it in its order), the queue's count
    // is named for what it is: arrival order.
    const own = new Map([['big', 'waiting for 1 whole GPU (0 left after the jobs ahead of it)']]);
    expect(explainPending(view, fitsByMemory, 'migpool', own).get('big')).toBe(
      'waiting for 1 whole GPU (0 left after the jobs ahead of it); the idle slices (2x1g.5gb) are too small for it (it needs 20 GiB); no GPU here can be cut into a slice that holds it: it waits for a whole GPU (1 job queued before it)',
    );
  });

  it('tells a job of unknown memory beside idle slices that it waits for a whole GPU, and how to let it use a slice', () => {
    const vit = resolveWorkload('deeppool-vit-b32');
    const view: ClusterView = { now: 0, gpus: [cut(0, ['r1', null, null, 'r4', 'r5', 'r6', 'r7'])], queue: [job('unknown', { workload: vit })], running: new Map() };
    const r = explainPending(view, createPolicyContext({ random: () => 0, reconfigureSeconds: 5 }));
    expect(r.get('unknown')).toBe('waiting for a whole GPU: its memory is unknown, so no slice is chosen for it on a guess (idle: 2x1g.5gb); give resources.memory or a profile to let it use one');
  });

  it('names whole GPUs wanted and GPUs being re-partitioned', () => {
    const g = (id: number, busyUntil: number | null, jobs: string[] = []): GpuView => ({ id, model: a100, migEnabled: false, instances: [], wholeGpuJobs: jobs, sharing: 'exclusive', busyUntil });
    const r = explainPending({ now: 0, gpus: [g(0, 5), g(1, null, ['w1']), g(2, null)], queue: [job('two', { gpus: 2 }), job('one', { profile: '1g.5gb', exactProfile: true })], running: new Map() }, ctx);
    expect(r.get('two')).toBe('waiting for 2 whole GPUs (1 idle)');
    expect(r.get('one')).toBe('re-partitioning GPU 0');
    const idle = explainPending({ now: 0, gpus: [g(0, null), g(1, null)], queue: [job('two', { gpus: 2 }), job('bg', { priority: 'background' })], running: new Map() }, ctx, 'migpool');
    expect(idle.get('two')).toBe('waiting for 2 whole GPUs (2 idle): policy migpool did not start it in the last pass');
    expect(idle.get('bg')).toBe('behind 1 job of higher priority: idle 2 whole GPUs would hold it, but policy migpool serves those first');
  });

  it('names a GPU that processes migpool did not start keep from whole-GPU jobs, and does not count it idle', () => {
    const g = (id: number, foreignPids?: number[]): GpuView => ({ id, model: a100, migEnabled: false, instances: [], wholeGpuJobs: [], sharing: 'exclusive', busyUntil: null, ...(foreignPids ? { foreignPids } : {}) });
    const view: ClusterView = { now: 0, gpus: [g(0), g(1, [4000, 4001])], queue: [job('two', { gpus: 2 }), job('slice', { profile: '1g.5gb', exactProfile: true })], running: new Map() };
    const r = explainPending(view, ctx);
    expect(r.get('two')).toBe('waiting for 2 whole GPUs (1 idle); GPU 1 runs processes 4000, 4001 that migpool did not start: it starts no job there until they end');
    // A slice job hears of it too: the GPU cannot be cut into slices under them.
    expect(r.get('slice')).toBe('waiting for a 1g.5gb slice (it asked for exactly that profile); GPU 1 runs processes 4000, 4001 that migpool did not start: it starts no job there until they end');
    // A job that no slice of its model suits (an H100 profile) is not told of it.
    expect(explainPending({ ...view, queue: [job('h100', { profile: '1g.12gb', exactProfile: true })] }, ctx).get('h100')).not.toContain('4000');
    // And the decision check, shared by both clocks, refuses the GPU.
    expect(checkDecision(view, { kind: 'start-on-gpus', job: 'two', gpus: [0, 1], sharing: 'exclusive' }, queueLookup(view))).toBe(
      "start job 'two' on GPUs 0,1 (exclusive): GPU 1 runs processes 4000, 4001 that migpool did not start",
    );
    expect(checkDecision(view, { kind: 'start-on-gpus', job: 'two', gpus: [0, 1], sharing: 'timeslice' }, queueLookup(view))).toMatch(/GPU 1 runs processes 4000, 4001/);
    expect([...wholeGpusWith(view, 0)].map((x) => x.id)).toEqual([0]);
  });

  it('names a MIG slice that a process migpool did not start holds, and refuses it in the decision check', () => {
    const gpu = cut(0, ['r1', null, 'r3', 'r4', 'r5', 'r6', 'r7']);
    const held: GpuView = { ...gpu, instances: gpu.instances.map((i) => (i.start === 1 ? { ...i, foreignPids: [4002] } : i)) };
    const view: ClusterView = { now: 0, gpus: [held], queue: [job('slice', { profile: '1g.5gb', exactProfile: true })], running: new Map() };
    const r = explainPending(view, ctx);
    expect(r.get('slice')).toMatch(/; GPU 0's 1g\.5gb at 1 runs process 4002 that migpool did not start: it starts no job there until it ends$/);
    expect(r.get('slice')).not.toMatch(/idle 1x1g/);
    expect(checkDecision(view, { kind: 'start-on-instance', job: 'slice', gpu: 0, start: 1 }, queueLookup(view))).toBe(
      "start job 'slice' on GPU 0 instance at 1: GPU 0's 1g.5gb at 1 runs process 4002 that migpool did not start",
    );
    expect(idleInstancesOf(view, a100.name, '1g.5gb').map((set) => set.size)).toEqual([0, 0]);
  });

  it('refuses re-partitions that destroy what processes migpool did not start hold, and counts such a GPU not idle', () => {
    // Found on the live service: a whole-GPU job waited beside a MIG GPU whose idle 1g.5gb ran a
    // foreign process; the policy asked for MIG off every back-off ("re-partition failed (3 in a row)").
    const gpu = cut(0, [null, null, null, null, null, null, null]);
    const held: GpuView = { ...gpu, instances: gpu.instances.map((i) => (i.start === 4 ? { ...i, foreignPids: [4002] } : i)) };
    const off: GpuView = { id: 1, model: a100, migEnabled: false, instances: [], wholeGpuJobs: [], sharing: 'exclusive', busyUntil: null, foreignPids: [4001] };
    const view: ClusterView = { now: 0, gpus: [held, off], queue: [job('whole')], running: new Map() };
    const lookup = queueLookup(view);
    expect(checkDecision(view, { kind: 'repartition', gpu: 0, layout: null }, lookup)).toBe("re-partition GPU 0 to MIG off: GPU 0's 1g.5gb at 4 runs process 4002 that migpool did not start");
    expect(checkDecision(view, { kind: 'repartition', gpu: 0, layout: [{ profile: '3g.20gb', start: 4 }] }, lookup)).toBe(
      "re-partition GPU 0: GPU 0's 1g.5gb at 4 runs process 4002 that migpool did not start and the new layout drops it",
    );
    // A layout that keeps the held instance may be cut around it.
    expect(checkDecision(view, { kind: 'repartition', gpu: 0, layout: [{ profile: '3g.20gb', start: 0 }, { profile: '1g.5gb', start: 4 }] }, lookup)).toBeNull();
    expect(checkDecision(view, { kind: 'repartition', gpu: 1, layout: [{ profile: '1g.5gb', start: 0 }] }, lookup)).toBe('re-partition GPU 1: GPU 1 runs process 4001 that migpool did not start');
    expect([...idleMigGpus(view)].map((g) => g.id)).toEqual([]);
    // The whole-GPU job hears of both: GPU 1 runs some, and GPU 0 cannot go back to MIG off under its slice's.
    expect(explainPending(view, ctx).get('whole')).toMatch(
      /; GPU 1 runs process 4001 that migpool did not start; GPU 0's 1g\.5gb at 4 runs process 4002 that migpool did not start: it starts no job there until they end$/,
    );
    expect([...idleMigGpus({ ...view, gpus: [gpu, off] })].map((g) => g.id)).toEqual([0]);
  });

  // The live demo (issue 17): queued ResNet-50/ImageNet-64 jobs (15.5 GiB) beside idle 1g.5gb and
  // 1g.10gb slices of a GPU cut seven ways, with no word on why. Real memory fits, real placements.
  describe('beside idle slices too small for the job', () => {
    const real = createPolicyContext({ random: () => 0, reconfigureSeconds: 5 });
    const medium = resolveWorkload('medium');
    const profile = (name: string) => a100.giProfiles.find((p) => p.name === name)!;
    /** GPU 1 as the demo left it: 1g.5gb at 0..5 and a 1g.10gb at 6, jobs on some. */
    const sevenWays = (id: number, busy: Record<number, string>): GpuView => ({
      id,
      model: a100,
      migEnabled: true,
      instances: [0, 1, 2, 3, 4, 5, 6].map((start) => ({ gpu: id, profile: profile(start === 6 ? '1g.10gb' : '1g.5gb'), start, size: start === 6 ? 2 : 1, job: busy[start] ?? null })),
      wholeGpuJobs: [],
      sharing: 'exclusive',
      busyUntil: null,
    });
    const running = (id: string, preemptible: boolean): [string, RunningJobView] => [
      id,
      { spec: job(id, { estimate: 600, preemptible }), placement: { kind: 'instance', gpu: 1, start: 0 }, started: 0, done: 100, speed: 0.5 },
    ];

    it('names the jobs whose slices a big enough slice needs, whether they may be moved, and when they are expected to end', () => {
      const full = sevenWays(0, { 0: 'a0', 1: 'a1', 2: 'a2', 3: 'a3', 4: 'a4', 5: 'a5', 6: 'a6' });
      const view: ClusterView = {
        now: 100,
        gpus: [full, sevenWays(1, { 0: 'b0', 1: 'b1', 4: 'b4' })],
        queue: [job('m', { workload: medium, estimate: 40 })],
        running: new Map([running('b0', false), running('b1', false), running('b4', false)]),
      };
      expect(explainPending(view, real, 'migpool').get('m')).toBe(
        'waiting for a whole GPU or a larger slice: the idle slices (3x1g.5gb, 1x1g.10gb) are too small for it (it needs 15.5 GiB); a 3g.20gb on GPU 1 needs the slice of job b4, which may not be moved, expected to end in about 17 min by its estimate',
      );
    });

    it('says what the expected end rests on: an estimate, the one-hour prior for a job without one, or its run so far past either', () => {
      const withSpec = (id: string, more: Partial<JobSpec>, done: number): [string, RunningJobView] => [
        id,
        { spec: job(id, { preemptible: false, ...more }), placement: { kind: 'instance', gpu: 1, start: 0 }, started: 0, done, speed: 0.5 },
      ];
      const reasonWith = (b4: [string, RunningJobView]) =>
        explainPending(
          {
            now: 100,
            gpus: [sevenWays(0, { 0: 'a0', 1: 'a1', 2: 'a2', 3: 'a3', 4: 'a4', 5: 'a5', 6: 'a6' }), sevenWays(1, { 0: 'b0', 1: 'b1', 4: 'b4' })],
            queue: [job('m', { workload: medium, estimate: 40 })],
            running: new Map([running('b0', false), running('b1', false), b4]),
          },
          real,
          'migpool',
        ).get('m');
      // No estimate: a one-hour prior, 3600 - 100 s of work at speed 0.5.
      expect(reasonWith(withSpec('b4', { estimate: null }, 100))).toMatch(/needs the slice of job b4, which may not be moved, expected to end in about 1\.9 h by a one-hour prior \(it gave no estimate\)$/);
      // Past its estimate of 600 s after 1000 s: as long again, 1000 s at speed 0.5.
      expect(reasonWith(withSpec('b4', { estimate: 600 }, 1000))).toMatch(/expected to end in about 33 min if it runs as long again as so far \(past its estimate\)$/);
    });

    it("says when a GPU's idle slices could be re-cut into one that holds it: the policy's choice", () => {
      const view: ClusterView = { now: 0, gpus: [sevenWays(0, { 0: 'b0', 1: 'b1' })], queue: [job('m', { workload: medium })], running: new Map([running('b0', true), running('b1', true)]) };
      expect(explainPending(view, real, 'migpool').get('m')).toBe(
        "waiting for a whole GPU or a larger slice: the idle slices (4x1g.5gb, 1x1g.10gb) are too small for it (it needs 15.5 GiB); GPU 0's idle slices could be re-cut into a 3g.20gb that holds it, which policy migpool has not chosen to do",
      );
      // A policy that says why it leaves such slices alone (Policy.recutRule) has it said.
      expect(explainPending(view, real, 'migpool', undefined, RECUT_RULE).get('m')).toBe(
        `waiting for a whole GPU or a larger slice: the idle slices (4x1g.5gb, 1x1g.10gb) are too small for it (it needs 15.5 GiB); GPU 0's idle slices could be re-cut into a 3g.20gb that holds it, which policy migpool has not chosen to do: ${RECUT_RULE}`,
      );
      expect(RECUT_RULE).toMatch(/only once all its slices are idle/);
    });

    it("adds what the idle slices are to a policy's own words that leave them out", () => {
      const view: ClusterView = {
        now: 0,
        gpus: [sevenWays(0, { 0: 'b0', 1: 'b1', 4: 'b4' })],
        queue: [job('m', { workload: medium }), job('s', { workload: small }), job('t', { workload: small })],
        running: new Map([running('b0', true), running('b1', true), running('b4', true)]),
      };
      const own = new Map([
        ['m', 'waiting for 1 whole GPU'],
        ['s', 'held for job 7'],
        ['t', 'waiting beside idle slices for its turn'],
      ]);
      const r = explainPending(view, real, 'migpool', own);
      expect(r.get('m')).toMatch(/^waiting for 1 whole GPU; the idle slices \(3x1g\.5gb, 1x1g\.10gb\) are too small for it \(it needs 15\.5 GiB\); a 3g\.20gb on GPU 0 needs the slice of job b4, expected to end in about /);
      expect(r.get('s')).toBe('held for job 7; idle 3x1g.5gb, 1x1g.10gb slices (at 0.58x its speed on a whole GPU) would hold it: policy migpool keeps it off them');
      expect(r.get('t')).toBe('waiting beside idle slices for its turn');
    });

    it('a small job beside them is told the policy left it there', () => {
      const view: ClusterView = { now: 0, gpus: [sevenWays(0, { 0: 'b0' })], queue: [job('s', { workload: small })], running: new Map([running('b0', true)]) };
      expect(explainPending(view, real, 'migpool').get('s')).toBe('waiting: idle 5x1g.5gb, 1x1g.10gb slices (at 0.58x its speed on a whole GPU) would hold it, but policy migpool did not start it in the last pass; 0 jobs ahead in line');
    });
  });
});
