import { describe, expect, it } from 'vitest';
import { resolveWorkload } from '../../perf/workloads.js';
import { simulate } from '../../sim/engine.js';
import { parseFleet } from '../../sim/fleet.js';
import type { SimulationResult, TraceJob } from '../../sim/types.js';
import { createPolicyContext } from '../context.js';
import type { ClusterView, Decision, GpuView, JobSpec, Policy, RunningJobView } from '../types.js';
import { BACKGROUND_AGE_SECONDS, BIG_TURN_AFTER_SECONDS, CLEAR_MAX_GPUS, MIG_CLEAR_SHARE, migpoolPolicy, MAX_PREEMPTIONS, MIGPOOL_THRESHOLDS, MIN_RUN_SECONDS, type MigpoolTuning } from './migpool.js';
import { denseLayout, packProfile } from './migpool-slices.js';

const small = resolveWorkload('small');
const large = resolveWorkload('large');

function job(id: string, arrival: number, work: number, over: Partial<TraceJob> = {}): TraceJob {
  return { id, workload: small, gpus: 1, priority: 'foreground', arrival, work, memoryGiB: null, profile: null, ...over };
}

/** Every decision the policy made, with the time and the view's running jobs' placements. */
interface Logged {
  readonly t: number;
  readonly d: Decision;
}

/**
 * Simulates the jobs under migpool, logging its decisions and the views it saw, and the pending
 * reasons it gave job `explain` after each pass it waited.
 */
function run(fleet: string, jobs: TraceJob[], tuning: Partial<MigpoolTuning> = {}, explain?: string, preemptionRules?: { minRunSeconds: number; maxPreemptions: number }): { result: SimulationResult; log: Logged[]; policy: Policy; views: ClusterView[]; reasons: string[] } {
  const inner = migpoolPolicy(tuning);
  const log: Logged[] = [];
  const views: ClusterView[] = [];
  const reasons: string[] = [];
  const policy: Policy = {
    name: 'migpool',
    decide(view, ctx) {
      const ds = inner.decide(view, ctx);
      for (const d of ds) log.push({ t: view.now, d });
      views.push(view);
      const why = explain === undefined ? undefined : inner.explain?.(view, ctx).get(explain);
      if (why !== undefined) reasons.push(why);
      return ds;
    },
    wakeAt: (view) => inner.wakeAt?.(view) ?? null,
  };
  const result = simulate({ fleet: parseFleet(fleet), jobs, policy, seed: 1, preemptionCostSeconds: 60, info: { mode: 'none', seed: 1 }, ...(preemptionRules ? { preemptionRules } : {}) });
  return { result, log, policy: inner, views, reasons };
}

const startsOf = (log: Logged[], id: string): Decision[] => log.map((l) => l.d).filter((d) => (d.kind === 'start-on-gpus' || d.kind === 'start-on-instance') && d.job === id);

describe('migpool slices', () => {
  it('cuts an A100 into seven 1g.5gb slices', () => {
    const a100 = parseFleet('1xA100-SXM4-40GB').gpus[0]!;
    expect(packProfile(a100)).toEqual({ profile: '1g.5gb', count: 7 });
    expect(denseLayout(a100, '1g.5gb').map((e) => e.start)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(denseLayout(a100, '3g.20gb')).toHaveLength(2);
  });
});

describe('migpool policy', () => {
  it('packs young small jobs onto slices when jobs wait for whole GPUs, and gives whole GPUs when they do not', () => {
    // Two GPUs, eight small jobs at once: they cannot all have a whole GPU.
    const busy = run('2xA100-SXM4-40GB', Array.from({ length: 8 }, (_, i) => job(`s${i}`, 0, 1800)));
    expect(busy.result.metrics.completed).toBe(8);
    const onSlices = busy.log.filter((l) => l.d.kind === 'start-on-instance').length;
    expect(onSlices).toBeGreaterThanOrEqual(6);
    expect(busy.log.some((l) => l.d.kind === 'repartition' && l.d.layout !== null && l.d.layout.every((e) => e.profile === '1g.5gb'))).toBe(true);
    // Packing pays: all eight end sooner than they would two at a time on whole GPUs (4 x 1800 s).
    expect(busy.result.metrics.makespanSeconds).toBeLessThan(4 * 1800);
    // Two jobs on two GPUs: whole GPUs, no slice.
    const calm = run('2xA100-SXM4-40GB', [job('a', 0, 1800), job('b', 0, 1800)]);
    expect(calm.log.filter((l) => l.d.kind === 'start-on-instance')).toHaveLength(0);
    expect(calm.result.metrics.makespanSeconds).toBeCloseTo(1800, 0);
  });

  it('does not pack a workload that loses on slices (large does not fit 1g.5gb)', () => {
    const r = run('1xA100-SXM4-40GB', Array.from({ length: 3 }, (_, i) => job(`l${i}`, 0, 600, { workload: large })));
    expect(r.log.filter((l) => l.d.kind === 'start-on-instance')).toHaveLength(0);
    expect(r.result.metrics.completed).toBe(3);
  });

  it('promotes a slice job to a whole GPU once it crosses the first threshold and a GPU is free', () => {
    // Three small jobs on two GPUs: two share a cut GPU, one gets the other whole; that one ends
    // soon, then the slice jobs, past the threshold, move to whole GPUs.
    const jobs = [job('long1', 0, 30_000), job('long2', 0, 30_000), job('short', 0, 600)];
    const r = run('2xA100-SXM4-40GB', jobs);
    expect(r.result.metrics.completed).toBe(3);
    const promoted = ['long1', 'long2'].filter((id) => {
      const s = startsOf(r.log, id);
      return s[0]?.kind === 'start-on-instance' && s.some((d) => d.kind === 'start-on-gpus');
    });
    expect(promoted.length).toBeGreaterThanOrEqual(1);
    for (const id of promoted) {
      const at = r.log.find((l) => l.d.kind === 'start-on-gpus' && l.d.job === id)!.t;
      // Not before it has run the first threshold (attained GPU-seconds on its slice) nor its minimum run.
      expect(at).toBeGreaterThanOrEqual(Math.max(MIGPOOL_THRESHOLDS[0]!, MIN_RUN_SECONDS) - 1e-6);
    }
  });

  it('never preempts a job within its minimum run', () => {
    // A long job holds the only GPU; short jobs keep arriving: least attained service would
    // preempt the long one at once each time.
    const jobs = [job('long', 0, 20_000, { workload: large }), ...Array.from({ length: 30 }, (_, i) => job(`n${i}`, 100 + 400 * i, 300, { workload: large }))];
    const r = run('1xA100-SXM4-40GB', jobs);
    expect(r.result.metrics.completed).toBe(jobs.length);
    const startedAt = new Map<string, number>();
    for (const { t, d } of r.log) {
      if (d.kind === 'start-on-gpus' || d.kind === 'start-on-instance') startedAt.set(d.job, t);
      if (d.kind === 'preempt') expect(t - startedAt.get(d.job)!).toBeGreaterThanOrEqual(MIN_RUN_SECONDS - 1e-6);
    }
    expect(r.log.some((l) => l.d.kind === 'preempt')).toBe(true);
  });

  it('gives a background job on a whole GPU no minimum run: a foreground job takes its GPU at once', () => {
    // A long background job holds the only GPU (MIG off: a large job); a foreground job arrives a
    // minute after it started, well within what would be its minimum run.
    const jobs = [job('bg', 0, 20_000, { workload: large, priority: 'background' }), job('fg', 60, 600, { workload: large })];
    const fill = run('1xA100-SXM4-40GB', jobs);
    const preempt = fill.log.find((l) => l.d.kind === 'preempt' && l.d.job === 'bg');
    expect(preempt?.t).toBe(60);
    expect(startsOf(fill.log, 'fg')).toHaveLength(1);
    // The foreground job ran at once: its JCT is its work (plus nothing it waited for).
    expect(fill.result.jcts[1]).toBeLessThan(600 + 60);
    expect(fill.result.metrics.completed).toBe(2);
    // With backgroundMinRun the foreground job waits for the background job's minimum run.
    const kept = run('1xA100-SXM4-40GB', jobs, { backgroundMinRun: true });
    expect(kept.log.find((l) => l.d.kind === 'preempt' && l.d.job === 'bg')?.t).toBeGreaterThanOrEqual(MIN_RUN_SECONDS - 1e-6);
  });

  it('lengthens the minimum run with each preemption when minRunGrowth is set', () => {
    const jobs = [job('long', 0, 200_000, { workload: large }), ...Array.from({ length: 80 }, (_, i) => job(`n${i}`, 100 + 1000 * i, 400, { workload: large }))];
    const grown = run('1xA100-SXM4-40GB', jobs, { minRunGrowth: 2, maxPreemptions: 1000 });
    expect(grown.result.metrics.completed).toBe(jobs.length);
    const startedAt = new Map<string, number>();
    const preempted = new Map<string, number>();
    for (const { t, d } of grown.log) {
      if (d.kind === 'start-on-gpus' || d.kind === 'start-on-instance') startedAt.set(d.job, t);
      if (d.kind === 'preempt') {
        const k = preempted.get(d.job) ?? 0;
        expect(t - startedAt.get(d.job)!).toBeGreaterThanOrEqual(MIN_RUN_SECONDS * 2 ** k - 1e-6);
        preempted.set(d.job, k + 1);
      }
    }
    // The growing minimum run, not the cap, keeps the long job's preemptions few.
    const flat = run('1xA100-SXM4-40GB', jobs, { minRunGrowth: 1, maxPreemptions: 1000 });
    expect(preempted.get('long')).toBeGreaterThan(1);
    expect(grown.result.preemptions.maxPerJob).toBeLessThan(flat.result.preemptions.maxPerJob);
  });

  it(`preempts no job more than ${MAX_PREEMPTIONS} times`, () => {
    const jobs = [job('long', 0, 200_000, { workload: large }), ...Array.from({ length: 80 }, (_, i) => job(`n${i}`, 100 + 1000 * i, 400, { workload: large }))];
    const capped = run('1xA100-SXM4-40GB', jobs);
    expect(capped.result.metrics.completed).toBe(jobs.length);
    expect(capped.result.preemptions.maxPerJob).toBe(MAX_PREEMPTIONS);
    // The cap is what holds it: without it the long job is preempted by every newcomer.
    const uncapped = run('1xA100-SXM4-40GB', jobs, { maxPreemptions: 1000 });
    expect(uncapped.result.preemptions.maxPerJob).toBeGreaterThan(MAX_PREEMPTIONS);
  });

  it("plans on no preemption the pool's own rules refuse (the service's minimum run and cap, in its context)", () => {
    const rules = { minRunSeconds: 90, maxPreemptions: 3 };
    // A background job has no minimum run of the policy's, but the pool's holds: the foreground job that arrives at 60 s takes its GPU at 90 s.
    const fill = run('1xA100-SXM4-40GB', [job('bg', 0, 20_000, { workload: large, priority: 'background' }), job('fg', 60, 600, { workload: large })], {}, undefined, rules);
    expect(fill.log.find((l) => l.d.kind === 'preempt' && l.d.job === 'bg')?.t).toBeGreaterThanOrEqual(90 - 1e-6);
    // The pool's cap is below the policy's: no job is preempted more than 3 times.
    const jobs = [job('long', 0, 200_000, { workload: large }), ...Array.from({ length: 80 }, (_, i) => job(`n${i}`, 100 + 1000 * i, 400, { workload: large }))];
    const capped = run('1xA100-SXM4-40GB', jobs, {}, undefined, rules);
    expect(capped.result.metrics.completed).toBe(jobs.length);
    expect(capped.result.preemptions.maxPerJob).toBe(3);
  });

  it('puts a big job that has waited long ahead of all, instead of letting small jobs pass it forever', () => {
    // Four GPUs; a 4-GPU job arrives while single-GPU jobs keep the fleet busy and keep coming
    // (one every 15 minutes, 1 h each: the fleet is always short of one GPU for the big job).
    const smalls = Array.from({ length: 120 }, (_, i) => job(`s${i}`, 900 * i, 3600, { workload: large }));
    const big = job('big', 30, 3600, { workload: large, gpus: 4 });
    const bigEnd = (r: SimulationResult): number => r.jcts[r.jcts.length - 1]!;
    // Without the guard it waits until the stream ends (120 jobs arriving over 30 h).
    const unguarded = run('4xA100-SXM4-40GB', [...smalls, big], { ageMinSeconds: 1e12 });
    expect(unguarded.result.metrics.completed).toBe(121);
    expect(bigEnd(unguarded.result)).toBeGreaterThan(29 * 3600);
    // With it, it goes first once it has waited the guard's time, and starts when the minimum
    // runs of the jobs it preempts are over.
    const guarded = run('4xA100-SXM4-40GB', [...smalls, big], { ageMinSeconds: 6 * 3600 });
    expect(guarded.result.metrics.completed).toBe(121);
    expect(bigEnd(guarded.result)).toBeLessThan(6 * 3600 + 3600 + 3600);
  });

  it(`gives big jobs turns in the last level: one that waited ${BIG_TURN_AFTER_SECONDS / 3600} h goes ahead of a big running job that came after it`, () => {
    // Four GPUs (big: at least half, 2), a 3-hour minimum run. J1 (4 GPUs, 48 h) runs into the
    // last level; J2 (2 GPUs, 100 h) arrives, preempts it from the first level once J1's minimum
    // run is over, and crosses into the last level within its own minimum run, so it is running
    // there when the level's running jobs go first.
    const hour = 3600;
    const minRun = 3 * hour;
    const jobs = [job('J1', 0, 48 * hour, { workload: large, gpus: 4 }), job('J2', 2000, 100 * hour, { workload: large, gpus: 2 })];
    const off = run('4xA100-SXM4-40GB', jobs, { bigTurnShare: Infinity, minRunSeconds: minRun });
    // Without turns J1 waits until J2 ends.
    expect(off.result.jcts[0]!).toBeGreaterThan(140 * hour);
    const on = run('4xA100-SXM4-40GB', jobs, { minRunSeconds: minRun }, 'J1');
    expect(on.result.metrics.completed).toBe(2);
    // With them it starts again once it has waited 12 h (J2 preempted), and runs to its end.
    const j1Restart = startsOf(on.log, 'J1')[1];
    expect(j1Restart).toBeDefined();
    const restartAt = on.log.find((l) => l.d === j1Restart)!.t;
    expect(restartAt).toBeGreaterThanOrEqual(minRun + BIG_TURN_AFTER_SECONDS);
    expect(restartAt).toBeLessThan(minRun + BIG_TURN_AFTER_SECONDS + 60);
    expect(on.log.some((l) => l.t === restartAt && l.d.kind === 'preempt' && l.d.job === 'J2')).toBe(true);
    expect(on.result.jcts[0]!).toBeLessThan(62 * hour);
    expect(on.result.jcts[1]!).toBeGreaterThan(140 * hour);
    // While it waits for its turn, its pending reason says so.
    expect(on.reasons.some((w) => w.includes('jobs of 2+ GPUs that ran long take turns, first come first served: its turn comes once it has waited 12 h'))).toBe(true);
  });

  it('keeps a small running job ahead of a big one whose turn has come', () => {
    // As above with S (1 GPU, 100 h) for J2: S is not big (1 < 2 GPUs), so J1 waits for it however
    // long J1 has waited.
    const hour = 3600;
    const r = run('4xA100-SXM4-40GB', [job('J1', 0, 48 * hour, { workload: large, gpus: 4 }), job('S', 2000, 100 * hour, { workload: large })], { minRunSeconds: 3 * hour });
    expect(r.result.metrics.completed).toBe(2);
    expect(r.log.filter((l) => l.d.kind === 'preempt' && l.d.job === 'S')).toHaveLength(0);
    expect(r.result.jcts[0]!).toBeGreaterThan(100 * hour);
  });

  it('does not pack a job at the preemption cap onto a slice: it could never move to a whole GPU again', () => {
    // Two GPUs; one level boundary at 100 GPU-seconds, a one-minute minimum run and a cap of one
    // preemption. X (small, packs well) and Y start on whole GPUs; B (2 GPUs, not preemptible)
    // preempts both (their cap); eight small jobs arrive behind B. When B ends, the small jobs are
    // packed onto both GPUs' slices and X, at the cap, waits for a whole GPU instead of a slice.
    const tuning: Partial<MigpoolTuning> = { thresholds: [100], minRunSeconds: 60, maxPreemptions: 1 };
    const jobs = [
      job('X', 0, 36_000),
      job('Y', 0, 36_000, { workload: large }),
      job('B', 300, 3600, { workload: large, gpus: 2, preemptible: false }),
      ...Array.from({ length: 8 }, (_, i) => job(`S${i}`, 400, 3600)),
    ];
    const capped = run('2xA100-SXM4-40GB', jobs, tuning);
    expect(capped.result.metrics.completed).toBe(11);
    expect(capped.log.some((l) => l.d.kind === 'preempt' && l.d.job === 'X')).toBe(true);
    const xStarts = startsOf(capped.log, 'X');
    expect(xStarts.length).toBeGreaterThanOrEqual(2);
    expect(xStarts.every((d) => d.kind === 'start-on-gpus')).toBe(true);
    expect(capped.log.some((l) => l.d.kind === 'start-on-instance')).toBe(true);
    // Allowed to, the policy puts it on a slice.
    const packed = run('2xA100-SXM4-40GB', jobs, { ...tuning, packCapped: true });
    expect(startsOf(packed.log, 'X').some((d) => d.kind === 'start-on-instance')).toBe(true);
  });

  it('keeps a job at the preemption cap from starting while a younger job waits for whole GPUs', () => {
    // Two GPUs; one level boundary at 100 GPU-seconds, a one-minute minimum run, a cap of one
    // preemption. X (10 h) is preempted by B (2 GPUs, not preemptible) and reaches the cap. S (1
    // GPU) and T (2 GPUs) arrive behind B. When B ends, S takes one GPU and T waits for two: X,
    // which would keep the other GPU for 10 h, waits too, and T starts when S ends.
    const tuning: Partial<MigpoolTuning> = { thresholds: [100], minRunSeconds: 60, maxPreemptions: 1 };
    const jobs = [
      job('X', 0, 36_000, { workload: large }),
      job('B', 300, 3600, { workload: large, gpus: 2, preemptible: false }),
      job('S', 400, 3600, { workload: large }),
      job('T', 400, 3600, { workload: large, gpus: 2 }),
    ];
    const on = run('2xA100-SXM4-40GB', jobs, tuning, 'X');
    expect(on.result.metrics.completed).toBe(4);
    expect(on.result.jcts[3]!).toBeLessThan(4 * 3600);
    expect(on.reasons.some((w) => w.startsWith('it has been preempted once, the most allowed, so once started it keeps its GPUs to its end'))).toBe(true);
    // Without the rule X starts beside S and T waits until X ends.
    const off = run('2xA100-SXM4-40GB', jobs, { ...tuning, cappedWaitsForYounger: false });
    expect(off.result.jcts[3]!).toBeGreaterThan(10 * 3600);
  });

  it("lets a foreground job take a background job's slice, at the preemption cap too", () => {
    // One A100 cut into seven 1g.5gb slices: six run foreground jobs, one a background job. A
    // single-GPU foreground job waits: it takes the background job's slice, also at the cap
    // (unlike packing: keeping capped jobs off background slices cost deeppool, see yieldSlices).
    const model = parseFleet('1xA100-SXM4-40GB').gpus[0]!;
    const profile = model.giProfiles.find((p) => p.name === '1g.5gb')!;
    const spec = (id: string, priority: JobSpec['priority']): JobSpec => ({ id, workload: small, gpus: 1, priority, arrival: 0, estimate: null, memoryGiB: null, profile: null });
    const held = ['f1', 'f2', 'f3', 'f4', 'f5', 'f6', 'bg'];
    const view = (preemptions: number): ClusterView => ({
      now: 7200,
      gpus: [{ id: 0, model, migEnabled: true, instances: held.map((job, start) => ({ gpu: 0, profile, start, size: 1, job })), wholeGpuJobs: [], sharing: 'exclusive', busyUntil: null }],
      queue: [spec('w', 'foreground')],
      running: new Map(held.map((id, start) => [id, { spec: spec(id, id === 'bg' ? 'background' : 'foreground'), placement: { kind: 'instance', gpu: 0, start }, started: 0, done: 0, speed: 1 }])),
      history: (id) => ({ attainedGpuSeconds: id === 'w' ? 5000 : 7200, preemptions: id === 'w' ? preemptions : 0 }),
    });
    const ctx = createPolicyContext({ random: () => 0.5, reconfigureSeconds: 10 });
    expect(migpoolPolicy().decide(view(0), ctx)).toEqual([{ kind: 'preempt', job: 'bg' }, { kind: 'start-on-instance', job: 'w', gpu: 0, start: 6 }]);
    expect(migpoolPolicy().decide(view(MAX_PREEMPTIONS), ctx)).toEqual([{ kind: 'preempt', job: 'bg' }, { kind: 'start-on-instance', job: 'w', gpu: 0, start: 6 }]);
  });

  it('clears a MIG GPU for a job of half the fleet that lacks only that GPU', () => {
    // Four GPUs. X (2 GPUs, ten days, not preemptible) and seven small jobs of ten days arrive at
    // once: X takes two whole GPUs, the small jobs (jobs wait) are packed onto 1g.5gb slices of a
    // third, and one of them later moves to the idle fourth. W (2 GPUs, 10 minutes) arrives at 2 h:
    // it takes the fourth GPU back and lacks one more, which only the MIG GPU's slice jobs (with
    // far more attained service) hold. They are checkpointed and requeued, the GPU goes back to
    // whole, and W runs within minutes.
    expect(MIG_CLEAR_SHARE).toBe(0.5);
    expect(CLEAR_MAX_GPUS).toBe(1);
    const day = 86_400;
    const jobs = [job('X', 0, 10 * day, { gpus: 2, preemptible: false }), ...Array.from({ length: 7 }, (_, i) => job(`S${i}`, 0, 10 * day)), job('W', 7200, 600, { gpus: 2 })];
    const on = run('4xA100-SXM4-40GB', jobs, {}, 'W');
    expect(on.result.metrics.completed).toBe(9);
    const w = on.result.jcts[8]!;
    expect(w).toBeLessThan(1800);
    const clearedAt = on.log.find((l) => l.t >= 7200 && l.d.kind === 'repartition' && l.d.layout === null)!.t;
    const cleared = on.log.filter((l) => l.t === clearedAt && l.d.kind === 'preempt').map((l) => (l.d as { job: string }).job);
    expect(cleared.length).toBeGreaterThanOrEqual(6);
    expect(cleared.every((id) => id.startsWith('S'))).toBe(true);
    expect(on.reasons.some((x) => x.includes('a job that needs 2+ GPUs and lacks only one whole GPU has MIG GPUs cleared for it: the slice jobs on GPU '))).toBe(true);
    // Without clearing W waits for X or the slice jobs to end.
    const off = run('4xA100-SXM4-40GB', jobs, { clearSlicesShare: Infinity });
    expect(off.result.jcts[8]!).toBeGreaterThan(5 * day);
  });

  it(`clears no more MIG GPUs than it is allowed: a job that lacks two waits, unless asked to clear more (here once it has waited ${BIG_TURN_AFTER_SECONDS / 3600} h)`, () => {
    // Two GPUs; fourteen small jobs of ten days arrive at once and are packed onto 1g.5gb slices
    // (jobs wait for whole GPUs). W (2 GPUs, 10 min) arrives an hour later: no whole GPU comes
    // free until the slice jobs end.
    const day = 86_400;
    const jobs = [...Array.from({ length: 14 }, (_, i) => job(`S${i}`, 0, 10 * day)), job('W', 3600, 600, { gpus: 2 })];
    // By default W lacks two MIG GPUs, more than CLEAR_MAX_GPUS: it waits for the slice jobs.
    const off = run('2xA100-SXM4-40GB', jobs);
    expect(off.result.jcts[14]!).toBeGreaterThan(5 * day);
    // Allowed to clear both once W has waited 12 h: the slice jobs (past the first threshold) are
    // checkpointed and requeued, both GPUs go back to whole, and W runs.
    const on = run('2xA100-SXM4-40GB', jobs, { clearSlicesShare: 1, clearMaxGpus: Infinity, clearAfterSeconds: BIG_TURN_AFTER_SECONDS }, 'W');
    expect(on.result.metrics.completed).toBe(15);
    const w = on.result.jcts[14]!;
    expect(w).toBeGreaterThan(BIG_TURN_AFTER_SECONDS);
    expect(w).toBeLessThan(BIG_TURN_AFTER_SECONDS + 3600);
    const clearedAt = on.log.find((l) => l.d.kind === 'repartition' && l.d.layout === null)!.t;
    expect(on.log.filter((l) => l.t === clearedAt && l.d.kind === 'preempt').length).toBe(14);
    expect(on.reasons.some((x) => x.includes('a job that needs every GPU here and has waited 12 h has MIG GPUs cleared for it: the slice jobs on GPUs 0, 1'))).toBe(true);
  });

  it(`lets a background job that has waited ${BACKGROUND_AGE_SECONDS / 86_400} days rank as a foreground one`, () => {
    // One GPU held by a foreground job of ten days; a one-hour background job arrives behind it.
    const day = 86_400;
    const jobs = [job('fg', 0, 10 * day, { workload: large }), job('bg', 60, 3600, { workload: large, priority: 'background' })];
    // Strict priority: it waits for the foreground job's end.
    const strict = run('1xA100-SXM4-40GB', jobs, { backgroundAgeSeconds: Infinity });
    expect(strict.result.jcts[1]).toBeGreaterThan(10 * day);
    // Aged: once it has waited BACKGROUND_AGE_SECONDS it goes ahead of the foreground job, which
    // has far more attained service, and runs its hour.
    const aged = run('1xA100-SXM4-40GB', jobs);
    const end = 60 + (aged.result.jcts[1] as number);
    expect(end).toBeGreaterThanOrEqual(BACKGROUND_AGE_SECONDS + 3600);
    expect(end).toBeLessThan(BACKGROUND_AGE_SECONDS + 2 * 3600);
    expect(aged.log.filter((l) => l.d.kind === 'preempt' && l.d.job === 'fg')).toHaveLength(1);
    // Before then its pending reason says when it stops yielding.
    const model = parseFleet('1xA100-SXM4-40GB').gpus[0]!;
    const spec = (id: string, priority: JobSpec['priority']): JobSpec => ({ id, workload: large, gpus: 1, priority, arrival: 0, estimate: null, memoryGiB: null, profile: null });
    const view = (now: number): ClusterView => ({
      now,
      gpus: [{ id: 0, model, migEnabled: false, instances: [], wholeGpuJobs: ['fg'], sharing: 'exclusive', busyUntil: null }],
      queue: [spec('bg', 'background')],
      running: new Map([['fg', { spec: spec('fg', 'foreground'), placement: { kind: 'gpus', gpus: [0] }, started: 0, done: 0, speed: 1 }]]),
      history: (id) => ({ attainedGpuSeconds: id === 'fg' ? 1e6 + now : 0, preemptions: 0 }),
    });
    const ctx = createPolicyContext({ random: () => 0.5, reconfigureSeconds: 10 });
    const policy = migpoolPolicy();
    expect(policy.decide(view(3600), ctx)).toEqual([]);
    expect(policy.explain!(view(3600), ctx).get('bg')).toMatch(/background: runs on what foreground jobs leave until it has waited 7 days/);
    // Past the foreground job's minimum run, the next wake-up is the background job's ageing.
    expect(policy.decide(view(3600 + MIN_RUN_SECONDS), ctx)).toEqual([]);
    expect(policy.wakeAt!(view(3600 + MIN_RUN_SECONDS))).toBe(BACKGROUND_AGE_SECONDS);
    expect(policy.decide(view(BACKGROUND_AGE_SECONDS), ctx)).toEqual([{ kind: 'preempt', job: 'fg' }, { kind: 'start-on-gpus', job: 'bg', gpus: [0], sharing: 'exclusive' }]);
  });

  it('explains why every waiting job waits', () => {
    const models = parseFleet('2xA100-SXM4-40GB').gpus;
    const spec = (id: string, gpus: number, arrival: number): JobSpec => ({ id, workload: large, gpus, priority: 'foreground', arrival, estimate: null, memoryGiB: null, profile: null });
    const gpus: GpuView[] = models.map((model, id) => ({ id, model, migEnabled: false, instances: [], wholeGpuJobs: [`r${id}`], sharing: 'exclusive', busyUntil: null }));
    const running = new Map<string, RunningJobView>(
      [0, 1].map((g) => [`r${g}`, { spec: spec(`r${g}`, 1, 0), placement: { kind: 'gpus', gpus: [g] }, started: 0, done: 100, speed: 1 }]),
    );
    const view: ClusterView = { now: 100, gpus, queue: [spec('big', 2, 50), spec('one', 1, 60)], running, history: (id) => ({ attainedGpuSeconds: id.startsWith('r') ? 100 : 0, preemptions: 0 }) };
    const ctx = createPolicyContext({ random: () => 0.5, reconfigureSeconds: 10 });
    const policy = migpoolPolicy();
    // The running jobs are within their minimum run: nothing starts, nothing is preempted.
    expect(policy.decide(view, ctx)).toEqual([]);
    const why = policy.explain!(view, ctx);
    expect(why.get('big')).toMatch(/waiting for 2 whole GPUs \(0 left/);
    expect(why.get('one')).toMatch(/waiting for 1 whole GPU \(0 left/);
  });
});
