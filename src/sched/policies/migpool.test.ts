import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { resolveWorkload } from '../../perf/workloads.js';
import { simulate } from '../../sim/engine.js';
import { parseFleet } from '../../sim/fleet.js';
import type { SimulationResult } from '../../sim/types.js';
import type { ClusterView, Decision, Policy, Priority } from '../types.js';
import type { TraceJob } from '../../sim/types.js';
import { migpoolPolicy } from './migpool.js';

const small = resolveWorkload('small');
const medium = resolveWorkload('medium');
const large = resolveWorkload('large');

function job(id: string, arrival: number, work: number, more: Partial<TraceJob> = {}): TraceJob {
  return { id, workload: small, gpus: 1, priority: 'foreground', arrival, work, memoryGiB: null, profile: null, ...more };
}

/** Each job's completion time, by id. */
function ends(jobs: readonly TraceJob[], r: SimulationResult): Map<string, number> {
  return new Map(jobs.map((j, k) => [j.id, j.arrival + (r.jcts[k] as number)]));
}

/** migpool, recording every decision with the time it was made. */
function recorded(): { policy: Policy; log: { t: number; d: Decision }[] } {
  const inner = migpoolPolicy();
  const log: { t: number; d: Decision }[] = [];
  return {
    log,
    policy: {
      name: 'migpool',
      decide(view: ClusterView, ctx) {
        const out = inner.decide(view, ctx);
        for (const d of out) log.push({ t: view.now, d });
        return out;
      },
    },
  };
}

describe('migpool: whole GPUs while there are enough', () => {
  it('gives each job a whole GPU with MIG off when the idle GPUs suffice, also a job that asked for a profile (a floor)', () => {
    const jobs = [job('a', 0, 100), job('b', 0, 50, { profile: '1g.5gb' }), job('c', 10, 30, { workload: large })];
    const r = simulate({ fleet: parseFleet('4xA100-40GB'), jobs, policy: migpoolPolicy(), seed: 1 });
    expect(r.jcts).toEqual([100, 50, 30]);
    expect(r.metrics.reconfigurations).toBe(0);
  });
});

describe('migpool: an exact profile', () => {
  it('puts a job that asked for exactly 1g.5gb on a 1g.5gb slice, never on a whole GPU, even with idle GPUs to spare', () => {
    const { policy, log } = recorded();
    const jobs = [job('a', 0, 100, { profile: '1g.5gb', exactProfile: true }), job('b', 0, 50)];
    const r = simulate({ fleet: parseFleet('2xA100-40GB'), jobs, policy, seed: 1 });
    expect(r.jcts.every((t) => t !== null)).toBe(true);
    const starts = log.filter((x) => (x.d.kind === 'start-on-instance' || x.d.kind === 'start-on-gpus') && x.d.job === 'a').map((x) => x.d);
    expect(starts.length).toBeGreaterThan(0);
    expect(starts.every((d) => d.kind === 'start-on-instance')).toBe(true);
  });
});

describe('migpool: reservations (EASY)', () => {
  it('backfills only work that ends before a waiting multi-GPU job can start, so it is not delayed', () => {
    // a holds GPU 0 until t=100; m needs both GPUs: it is reserved GPU 1 (idle) and GPU 0 (at 100).
    // long (200 s) would delay m if it took GPU 1; short (50 s) ends by 100 and may run there.
    const jobs = [job('a', 0, 100), job('m', 1, 50, { gpus: 2, workload: large }), job('long', 2, 200), job('short', 3, 50)];
    const r = simulate({ fleet: parseFleet('2xA100-40GB'), jobs, policy: migpoolPolicy(), seed: 1 });
    const end = ends(jobs, r);
    expect(end.get('m')).toBe(150);
    expect(end.get('short')).toBe(53);
    expect(end.get('long') as number).toBeGreaterThanOrEqual(150 + 200 - 1e-9);
  });

  it('starts a multi-GPU job as soon as its GPUs are free even while single-GPU jobs keep arriving', () => {
    const singles = Array.from({ length: 40 }, (_, k) => job(`s${k}`, 5 + 5 * k, 120, { workload: medium }));
    const jobs = [job('a', 0, 60), job('b', 0, 60), job('m', 1, 100, { gpus: 2, workload: large }), ...singles];
    const r = simulate({ fleet: parseFleet('2xA100-40GB'), jobs, policy: migpoolPolicy(), seed: 1 });
    // a and b end at 60; m gets both GPUs then, whatever the singles waiting.
    expect(ends(jobs, r).get('m')).toBe(160);
    expect(r.metrics.completed).toBe(jobs.length);
  });
});

describe('migpool: packing and sharing', () => {
  it('shares a busy GPU with a waiting job when that saves more than it costs, never slowing the job that sets the schedule', () => {
    // l (10,000 s) and m (1,000 s) hold the two GPUs; s (100 s) would wait until m ends at 1,000.
    const jobs = [job('l', 0, 10_000), job('m', 0, 1000), job('s', 10, 100)];
    const { policy, log } = recorded();
    const r = simulate({ fleet: parseFleet('2xA100-40GB'), jobs, policy, seed: 1 });
    const end = ends(jobs, r);
    expect(end.get('l')).toBe(10_000);
    expect(end.get('s') as number).toBeLessThan(500);
    // m was checkpointed once to share its GPU, and is not delayed by much.
    expect(log.filter((e) => e.d.kind === 'preempt' && e.d.job === 'm')).toHaveLength(1);
    expect(end.get('m') as number).toBeLessThan(1000 + 300);
  });

  it('serves first a job that would otherwise end after everything known (critical), on a whole GPU', () => {
    // Four GPUs busy until t=100; eight short jobs queue at t=1, a long one at t=2. Serving the
    // short ones first would end the long one at about 100 + 10 + 1000; it ends at 1100.
    const jobs = [
      ...Array.from({ length: 4 }, (_, k) => job(`a${k}`, 0, 100, { workload: large })),
      ...Array.from({ length: 8 }, (_, k) => job(`s${k}`, 1, 10, { workload: large })),
      job('long', 2, 1000, { workload: large }),
    ];
    const r = simulate({ fleet: parseFleet('4xA100-40GB'), jobs, policy: migpoolPolicy(), seed: 1 });
    expect(ends(jobs, r).get('long')).toBe(1100);
  });

  it('gives a job left alone on a cut GPU the whole GPU back when nothing waits (growth)', () => {
    // anchor takes GPU 0; seven jobs share GPU 1, cut for them. When the six short ones are done,
    // mid is alone on a one-slice instance: it is checkpointed and gets the whole GPU.
    const jobs = [job('anchor', 0, 20_000), ...Array.from({ length: 6 }, (_, k) => job(`s${k}`, 0, 60)), job('mid', 0, 2000)];
    const { policy, log } = recorded();
    const r = simulate({ fleet: parseFleet('2xA100-40GB'), jobs, policy, seed: 1 });
    expect(r.metrics.completed).toBe(jobs.length);
    const cut = log.find((e) => e.d.kind === 'repartition' && e.d.layout !== null);
    expect(cut?.t).toBe(0);
    const grown = log.filter((e) => e.d.kind === 'repartition' && e.d.layout === null);
    expect(grown).toHaveLength(1);
    expect(log.some((e) => e.d.kind === 'preempt' && e.d.job === 'mid')).toBe(true);
    // Far sooner than on its slice all along (2000 s of work at under half speed).
    const end = ends(jobs, r).get('mid') as number;
    expect(end).toBeLessThan(2500);
    expect(end).toBeGreaterThan(2000);
  });
});

describe('migpool: a long line (overload)', () => {
  // Jobs that ask for a whole GPU's profile (7g.40gb) take whole GPUs only, so that the order of
  // service alone decides who runs. An anchor holds GPU 0 far beyond everything else, so that no
  // job below is critical.
  const whole = { workload: large, profile: '7g.40gb' };

  it('serves a short job before a long one that came first (highest response ratio)', () => {
    // b frees GPU 1 at t=100; L (10,000 s) and S (100 s) wait. Ratios then: L (99 + 10,000) /
    // 10,000 = 1.01, S (98 + 100) / 100 = 1.98: S runs 100..200, L 200..10,200. In queue order S
    // would end at 10,200.
    const jobs = [job('anchor', 0, 100_000, { workload: large }), job('b', 0, 100, { workload: large }), job('L', 1, 10_000, whole), job('S', 2, 100, whole)];
    const r = simulate({ fleet: parseFleet('2xA100-40GB'), jobs, policy: migpoolPolicy(), seed: 1 });
    const end = ends(jobs, r);
    expect(end.get('S')).toBe(200);
    expect(end.get('L')).toBe(10_200);
  });

  it('does not starve a long job behind a stream of short ones', () => {
    // GPU 1 frees every 100 s (t=100, 200, ...), each time with a short job that arrived 50 s
    // before (ratio 1.5) and L (1,000 s, arrived at 1; ratio (t - 1 + 1000) / 1000). L's ratio
    // passes 1.5 once it has waited 500 s: it starts at t=600 and ends at 1,600, ahead of the
    // 34 short jobs still to come (shortest-job-first would run it after all 40, ending at 5,100).
    const shorts = Array.from({ length: 40 }, (_, k) => job(`s${k}`, 50 + 100 * k, 100, whole));
    const jobs = [job('anchor', 0, 100_000, { workload: large }), job('b', 0, 100, { workload: large }), job('L', 1, 1000, whole), ...shorts];
    const r = simulate({ fleet: parseFleet('2xA100-40GB'), jobs, policy: migpoolPolicy(), seed: 1 });
    expect(ends(jobs, r).get('L')).toBe(1600);
    expect(r.metrics.completed).toBe(jobs.length);
  });

  it('shares a GPU a reservation holds when its jobs still end by the shadow time', () => {
    // x holds GPU 0 until t=100,000, y GPU 1 until t=1,000; m (2 GPUs) holds both from t=1, its
    // shadow time 100,000. s (50 s) would wait for GPU 1 until t=1,000; y can share GPU 1 and
    // still end long before the shadow time, so s starts at once. x, which sets the shadow time,
    // is never slowed: m starts at 100,000 all the same.
    const jobs = [job('x', 0, 100_000, { workload: large }), job('y', 0, 1000), job('m', 1, 100, { gpus: 2, workload: large }), job('s', 2, 50)];
    const r = simulate({ fleet: parseFleet('2xA100-40GB'), jobs, policy: migpoolPolicy(), seed: 1 });
    const end = ends(jobs, r);
    expect(end.get('s') as number).toBeLessThan(200);
    expect(end.get('y') as number).toBeLessThan(1200);
    expect(end.get('x')).toBe(100_000);
    expect(end.get('m')).toBe(100_100);
  });

  it('does not let jobs that no idle instance suits hold it back from the jobs behind them', () => {
    // Seven jobs share one GPU (seven one-slice instances); the six of 300 s end at about 665 s,
    // leaving 'a' (1,000 s on a slice: until about 2,230 s) and six idle one-slice instances.
    // Twenty-one jobs that want the whole GPU (7g.40gb) wait from t=5 in front of z (10 s), which
    // a one-slice instance suits: z starts there at once instead of after 'a'.
    const seven = [job('a', 0, 1000), ...Array.from({ length: 6 }, (_, k) => job(`p${k}`, 0, 300))];
    const blockers = Array.from({ length: 21 }, (_, k) => job(`w${k}`, 5, 1000, whole));
    const jobs = [...seven, ...blockers, job('z', 700, 10)];
    const r = simulate({ fleet: parseFleet('1xA100-40GB'), jobs, policy: migpoolPolicy(), seed: 1 });
    const end = ends(jobs, r);
    expect(end.get('a') as number).toBeGreaterThan(2000);
    expect(end.get('z') as number).toBeLessThan(800);
    expect(r.metrics.completed).toBe(jobs.length);
  });
});

describe('migpool: priorities', () => {
  it('lets a foreground job take the place of a background job (checkpointed and requeued)', () => {
    const jobs = [job('bg', 0, 1000, { priority: 'background' }), job('fg', 50, 10)];
    const r = simulate({ fleet: parseFleet('1xA100-40GB'), jobs, policy: migpoolPolicy(), seed: 1 });
    expect(r.byPriority.foreground.avgJctSeconds).toBe(10);
    expect(r.metrics.completed).toBe(2);
  });

  it('never stops a foreground job to share its GPU with a background one', () => {
    // The same scene as the sharing test above, where m is checkpointed to make room for s; here m
    // is foreground and s background, so s waits for a GPU instead.
    const jobs = [job('l', 0, 10_000), job('m', 0, 1000), job('s', 10, 100, { priority: 'background' })];
    const { policy, log } = recorded();
    const r = simulate({ fleet: parseFleet('2xA100-40GB'), jobs, policy, seed: 1 });
    expect(log.filter((e) => e.d.kind === 'preempt')).toHaveLength(0);
    expect(ends(jobs, r).get('m')).toBe(1000);
  });
});

// ---------------------------------------------------------------- invariants on random traces

const WORKLOADS = [small, medium, large, resolveWorkload('bert')];
const FLEETS = ['2xA100-40GB', '1xA100-40GB,2xH100-80GB', '4xH100-80GB', '3xA30-24GB'];
const PROFILES = [null, null, null, '1g.5gb', '2g.10gb', '3g.20gb'];

const jobArb = fc.record({
  arrival: fc.integer({ min: 0, max: 600 }),
  work: fc.integer({ min: 1, max: 2000 }),
  gpus: fc.oneof({ weight: 5, arbitrary: fc.constant(1) }, { weight: 1, arbitrary: fc.integer({ min: 2, max: 4 }) }),
  workload: fc.integer({ min: 0, max: WORKLOADS.length - 1 }),
  background: fc.boolean(),
  memory: fc.option(fc.integer({ min: 1, max: 30 }), { freq: 4 }),
  profile: fc.integer({ min: 0, max: PROFILES.length - 1 }),
});

/** migpool with checks of every view: busy instances kept with their jobs, no job twice. */
function checked(): Policy {
  const inner = migpoolPolicy();
  let busy: { gpu: number; start: number; profile: string; job: string }[] = [];
  return {
    name: 'migpool',
    decide(view, ctx) {
      for (const b of busy) {
        if (!view.running.has(b.job)) continue;
        const inst = view.gpus[b.gpu]?.instances.find((i) => i.start === b.start);
        expect(inst?.profile.name).toBe(b.profile);
        expect(inst?.job).toBe(b.job);
      }
      const decisions = inner.decide(view, ctx);
      const started = decisions.filter((d) => d.kind === 'start-on-instance' || d.kind === 'start-on-gpus').map((d) => (d as { job: string }).job);
      expect(new Set(started).size).toBe(started.length);
      // A GPU is re-partitioned only where its changed instances are idle (or their jobs preempted first).
      const preempted = new Set(decisions.filter((d) => d.kind === 'preempt').map((d) => d.job));
      for (const d of decisions) {
        if (d.kind !== 'repartition') continue;
        const g = view.gpus[d.gpu];
        for (const i of g?.instances ?? []) {
          if (i.job === null || preempted.has(i.job)) continue;
          expect(d.layout?.some((l) => l.start === i.start && l.profile === i.profile.name)).toBe(true);
        }
        for (const id of g?.wholeGpuJobs ?? []) expect(preempted.has(id)).toBe(true);
      }
      busy = view.gpus.flatMap((g) => g.instances.filter((i) => i.job !== null).map((i) => ({ gpu: g.id, start: i.start, profile: i.profile.name, job: i.job as string })));
      return decisions;
    },
  };
}

describe('migpool: invariants on random traces', () => {
  it('runs every job that fits once, never re-cuts a busy instance under its job, never beats the work, and replays identically', () => {
    fc.assert(
      fc.property(fc.array(jobArb, { minLength: 1, maxLength: 30 }), fc.constantFrom(...FLEETS), (raw, fleetSpec) => {
        const jobs: TraceJob[] = raw.map((x, i) => ({
          id: `j${i}`,
          workload: WORKLOADS[x.workload] ?? small,
          gpus: x.gpus,
          priority: (x.background ? 'background' : 'foreground') as Priority,
          arrival: x.arrival,
          work: x.work,
          memoryGiB: x.memory,
          profile: x.gpus === 1 ? (PROFILES[x.profile] ?? null) : null,
        }));
        const fleet = parseFleet(fleetSpec);
        // A profile must exist on the fleet's GPUs (the CLI checks it): drop those that do not.
        const offered = new Set(fleet.gpus.flatMap((g) => g.giProfiles.map((p) => p.name)));
        const valid = jobs.map((j) => (j.profile !== null && !offered.has(j.profile) ? { ...j, profile: null } : j));
        const r = simulate({ fleet, jobs: valid, policy: checked(), seed: 1, sampleEverySeconds: 100 });
        const fitsSomewhere = (j: TraceJob) => {
          const need = j.memoryGiB ?? j.workload.memoryGiB;
          return fleet.gpus.filter((m) => need === null || m.memoryGB >= need).length >= j.gpus;
        };
        const runnable = valid.filter(fitsSomewhere);
        expect(r.metrics.completed).toBe(runnable.length);
        runnable.forEach((j, k) => expect(r.jcts[k] as number).toBeGreaterThanOrEqual(j.work * 0.999));
        expect(r.metrics.utilization).toBeLessThanOrEqual(1 + 1e-9);
        expect(simulate({ fleet, jobs: valid, policy: migpoolPolicy(), seed: 1, sampleEverySeconds: 100 })).toEqual(r);
      }),
      { numRuns: 80, seed: 7 },
    );
  });
});
