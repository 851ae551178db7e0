import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MigpoolError } from '../errors.js';
import { predict } from '../perf/model.js';
import { resolveWorkload } from '../perf/workloads.js';
import type { Workload } from '../perf/types.js';
import { exclusivePolicy } from '../sched/policies/exclusive.js';
import { parsePolicy } from '../sched/registry.js';
import type { ClusterView, Decision, Policy, Priority } from '../sched/types.js';
import type { TraceJob } from './types.js';
import { DEFAULT_RECONFIGURE_SECONDS, simulate } from './engine.js';
import { parseFleet } from './fleet.js';

const small = resolveWorkload('small');

function job(id: string, arrival: number, work: number, more: Partial<TraceJob> = {}): TraceJob {
  return { id, workload: small, gpus: 1, priority: 'foreground', arrival, work, memoryGiB: null, profile: null, ...more };
}

/** A policy that plays `script(view)` at each decision point. */
function scripted(script: (view: ClusterView) => Decision[]): Policy {
  return { name: 'scripted', decide: (view) => script(view) };
}

function relMig(w: Workload, profile: string): number {
  const model = parseFleet('1xA100-40GB').gpus[0];
  if (!model) throw new Error('no model');
  const free = { ...w, memoryGiB: null };
  return (predict(free, { kind: 'mig', gpu: model, profile }).samplesPerSecond ?? 0) / (predict(free, { kind: 'full', gpu: model }).samplesPerSecond ?? 1);
}

function errorOf(f: () => unknown): MigpoolError {
  try {
    f();
  } catch (e) {
    if (e instanceof MigpoolError) return e;
    throw e;
  }
  throw new Error('did not throw');
}

describe('simulate: mechanics', () => {
  it('runs whole-GPU jobs to their work and measures them', () => {
    const r = simulate({
      fleet: parseFleet('2xA100-40GB'),
      jobs: [job('a', 0, 100), job('b', 0, 50), job('c', 0, 30)],
      policy: exclusivePolicy(),
      seed: 1,
      sampleEverySeconds: 50,
    });
    expect(r.jcts).toEqual([100, 50, 80]);
    expect(r.metrics.completed).toBe(3);
    expect(r.metrics.makespanSeconds).toBe(100);
    expect(r.metrics.avgJctSeconds).toBeCloseTo(230 / 3, 9);
    expect(r.metrics.p50JctSeconds).toBe(80);
    expect(r.metrics.p99JctSeconds).toBe(100);
    expect(r.metrics.avgQueueSeconds).toBeCloseTo(50 / 3, 9);
    // busy: 100 + 50 + 30 GPU-seconds of 2 x 100.
    expect(r.metrics.utilization).toBeCloseTo(0.9, 12);
    expect(r.metrics.throughputJobsPerHour).toBeCloseTo(108, 9);
    expect(r.timeline).toEqual([
      { t: 50, utilization: 1, queueLength: 1 },
      { t: 100, utilization: 0.8, queueLength: 0 },
    ]);
    expect(r.events).toBe(6);
    expect(r.byPriority.background.jobs).toBe(0);
    expect(r.byPriority.foreground.utilization).toBeCloseTo(0.9, 12);
  });

  it('keeps a preempted job’s progress and returns it to its arrival position', () => {
    const r = simulate({
      fleet: parseFleet('1xA100-40GB'),
      jobs: [job('a', 0, 100), job('b', 40, 10)],
      seed: 1,
      policy: scripted((view) => {
        if (view.now === 0) return [{ kind: 'start-on-gpus', job: 'a', gpus: [0], sharing: 'exclusive' }];
        if (view.now === 40) {
          const out: Decision[] = [{ kind: 'preempt', job: 'a' }, { kind: 'start-on-gpus', job: 'b', gpus: [0], sharing: 'exclusive' }];
          return out;
        }
        if (view.now === 50) {
          expect(view.queue.map((q) => q.id)).toEqual(['a']);
          return [{ kind: 'start-on-gpus', job: 'a', gpus: [0], sharing: 'exclusive' }];
        }
        return [];
      }),
    });
    expect(r.jcts).toEqual([110, 10]);
    expect(r.metrics.avgQueueSeconds).toBe(5);
  });

  it('makes new instances wait for the re-partition and counts it once', () => {
    const s1 = relMig(small, '1g.5gb');
    const r = simulate({
      fleet: parseFleet('1xA100-40GB'),
      jobs: [job('a', 0, 100)],
      seed: 1,
      policy: scripted((view) => {
        const g = view.gpus[0];
        if (!g) return [];
        if (view.now === 0) return [{ kind: 'repartition', gpu: 0, layout: [{ profile: '1g.5gb', start: 0 }, { profile: '1g.5gb', start: 1 }] }];
        if (view.now === DEFAULT_RECONFIGURE_SECONDS && view.queue.length > 0) return [{ kind: 'start-on-instance', job: 'a', gpu: 0, start: 1 }];
        return [];
      }),
    });
    expect(r.metrics.reconfigurations).toBe(1);
    expect(r.jcts[0]).toBeCloseTo(10 + 100 / s1, 9);
    // One 1-slice instance busy out of 7 slices.
    expect(r.metrics.utilization).toBeCloseTo(100 / s1 / (7 * (10 + 100 / s1)), 9);
  });

  it('keeps busy instances (and their jobs) through a re-partition', () => {
    const s1 = relMig(small, '1g.5gb');
    const r = simulate({
      fleet: parseFleet('1xA100-40GB'),
      jobs: [job('a', 0, 100), job('b', 20, 100)],
      seed: 1,
      reconfigureSeconds: 5,
      policy: scripted((view) => {
        if (view.now === 0) return [{ kind: 'repartition', gpu: 0, layout: [{ profile: '1g.5gb', start: 0 }] }];
        if (view.now === 5) return [{ kind: 'start-on-instance', job: 'a', gpu: 0, start: 0 }];
        if (view.now === 20)
          return [{ kind: 'repartition', gpu: 0, layout: [{ profile: '1g.5gb', start: 0 }, { profile: '3g.20gb', start: 4 }] }];
        if (view.now === 25) return [{ kind: 'start-on-instance', job: 'b', gpu: 0, start: 4 }];
        return [];
      }),
    });
    expect(r.metrics.reconfigurations).toBe(2);
    expect(r.jcts[0]).toBeCloseTo(5 + 100 / s1, 9);
    expect(r.jcts[1]).toBeCloseTo(5 + 100 / relMig(small, '3g.20gb'), 9);
  });

  it('treats a wrong decision as a bug in the policy', () => {
    const fleet = parseFleet('1xA100-40GB');
    const run = (script: (view: ClusterView) => Decision[], jobs = [job('a', 0, 100), job('b', 1, 10)]) => () =>
      simulate({ fleet, jobs, seed: 1, policy: scripted(script) });
    const busyTwice = errorOf(
      run((v) =>
        v.now === 0
          ? [{ kind: 'start-on-gpus', job: 'a', gpus: [0], sharing: 'exclusive' }]
          : v.now === 1
            ? [{ kind: 'start-on-gpus', job: 'b', gpus: [0], sharing: 'exclusive' }]
            : [],
      ),
    );
    expect(busyTwice.code).toBe('RUNTIME');
    expect(busyTwice.message).toContain("already runs a (exclusive)");
    expect(busyTwice.message).toContain("policy 'scripted'");
    const early = errorOf(run((v) => (v.now === 0 ? [{ kind: 'start-on-gpus', job: 'b', gpus: [0], sharing: 'exclusive' }] : [])));
    expect(early.message).toContain('not yet arrived');
    const tooSoon = errorOf(
      run((v) =>
        v.now === 0
          ? [{ kind: 'repartition', gpu: 0, layout: [{ profile: '7g.40gb', start: 0 }] }, { kind: 'start-on-instance', job: 'a', gpu: 0, start: 0 }]
          : [],
      ),
    );
    expect(tooSoon.message).toContain('being created until t=10s');
    const belowFloor = errorOf(
      run(
        (v) =>
          v.now === 0
            ? [{ kind: 'repartition', gpu: 0, layout: [{ profile: '1g.5gb', start: 0 }] }]
            : v.now === 10
              ? [{ kind: 'start-on-instance', job: 'a', gpu: 0, start: 0 }]
              : [],
        [job('a', 0, 100, { profile: '3g.20gb' })],
      ),
    );
    expect(belowFloor.message).toContain('asked for 3g.20gb and 1g.5gb is smaller');
    const dropBusy = errorOf(
      run((v) =>
        v.now === 0
          ? [{ kind: 'repartition', gpu: 0, layout: [{ profile: '7g.40gb', start: 0 }] }]
          : v.now === 10
            ? [{ kind: 'start-on-instance', job: 'a', gpu: 0, start: 0 }]
            : v.now === 11
              ? [{ kind: 'repartition', gpu: 0, layout: null }]
              : [],
        [job('a', 0, 100), job('b', 11, 10)],
      ),
    );
    expect(dropBusy.message).toContain('runs job');
    const overlap = errorOf(run((v) => (v.now === 0 ? [{ kind: 'repartition', gpu: 0, layout: [{ profile: '4g.20gb', start: 0 }, { profile: '3g.20gb', start: 0 }] }] : [])));
    expect(overlap.message).toContain('overlaps');
    const noGpu = errorOf(run((v) => (v.now === 0 ? [{ kind: 'start-on-gpus', job: 'a', gpus: [3], sharing: 'exclusive' }] : [])));
    expect(noGpu.message).toContain('no GPU 3');
    const tooBig = errorOf(
      run(
        (v) =>
          v.now === 0
            ? [{ kind: 'repartition', gpu: 0, layout: [{ profile: '1g.5gb', start: 0 }] }]
            : v.now === 10
              ? [{ kind: 'start-on-instance', job: 'a', gpu: 0, start: 0 }]
              : [],
        [job('a', 0, 100, { memoryGiB: 8 })],
      ),
    );
    expect(tooBig.message).toContain('needs 8 GiB');
  });

  it('rejects bad traces', () => {
    const fleet = parseFleet('1xA100-40GB');
    expect(errorOf(() => simulate({ fleet, jobs: [job('a', 0, 1), job('a', 1, 1)], seed: 1, policy: exclusivePolicy() })).code).toBe('BAD_INPUT');
    expect(errorOf(() => simulate({ fleet, jobs: [job('a', 0, 0)], seed: 1, policy: exclusivePolicy() })).code).toBe('BAD_INPUT');
  });

  it('reports progress and leaves jobs no GPU can hold uncompleted', () => {
    const seen: number[] = [];
    const r = simulate({
      fleet: parseFleet('1xA100-40GB'),
      jobs: [job('a', 0, 10), job('huge', 0, 10, { gpus: 2 }), job('b', 5, 10)],
      seed: 1,
      policy: exclusivePolicy(),
      onProgress: (f) => seen.push(f),
    });
    expect(r.metrics.completed).toBe(2);
    expect(r.jcts).toEqual([10, 15]);
    expect(seen.at(-1)).toBeCloseTo(2 / 3, 12);
  });
});

// ---------------------------------------------------------------- invariants on random traces

const WORKLOADS = ['small', 'medium', 'large', 'bert'].map((n) => resolveWorkload(n));
const FLEETS = ['2xA100-40GB', '1xA100-40GB,2xH100-80GB', '3xH100-80GB'];
const POLICIES: readonly [string, number][] = [
  ['exclusive', 1],
  ['timeslice:2', 2],
  ['mps:3', 3],
  ['static:7x1g.5gb', 1],
  ['static:3g.20gb+2g.10gb+1g.5gb+1g.5gb', 1],
  ['miso', 1],
  ['migpool', 1],
];

const jobArb = fc.record({
  arrival: fc.integer({ min: 0, max: 400 }),
  work: fc.integer({ min: 1, max: 300 }),
  gpus: fc.oneof({ weight: 4, arbitrary: fc.constant(1) }, { weight: 1, arbitrary: fc.integer({ min: 2, max: 3 }) }),
  workload: fc.integer({ min: 0, max: WORKLOADS.length - 1 }),
  background: fc.boolean(),
  memory: fc.option(fc.integer({ min: 1, max: 30 }), { freq: 4 }),
});

function toJobs(raw: readonly { arrival: number; work: number; gpus: number; workload: number; background: boolean; memory: number | null }[]): TraceJob[] {
  return raw.map((r, i) => ({
    id: `j${i}`,
    workload: WORKLOADS[r.workload] ?? small,
    gpus: r.gpus,
    priority: (r.background ? 'background' : 'foreground') as Priority,
    arrival: r.arrival,
    work: r.work,
    memoryGiB: r.memory,
    profile: null,
  }));
}

/** Wraps a policy with checks of the view at every decision point. */
function checked(policy: Policy, maxSharers: number, seen: { decisions: number }): Policy {
  let busy: { gpu: number; start: number; profile: string; job: string }[] = [];
  return {
    name: policy.name,
    decide(view, ctx) {
      const holders = new Map<string, number>();
      for (const g of view.gpus) {
        const ids = [...g.instances.map((i) => i.job).filter((j): j is string => j !== null), ...g.wholeGpuJobs];
        for (const id of ids) holders.set(id, (holders.get(id) ?? 0) + 1);
        if (g.migEnabled) expect(g.wholeGpuJobs).toEqual([]);
        else expect(g.instances).toEqual([]);
        expect(g.wholeGpuJobs.length).toBeLessThanOrEqual(maxSharers);
        let mem = 0;
        for (const id of g.wholeGpuJobs) mem += view.running.get(id)?.spec.memoryGiB ?? view.running.get(id)?.spec.workload.memoryGiB ?? 0;
        expect(mem).toBeLessThanOrEqual(g.model.memoryGB);
        for (const i of g.instances) {
          if (i.job === null) continue;
          const r = view.running.get(i.job);
          expect(r?.spec.gpus).toBe(1);
          if (r) expect(ctx.fits(r.spec, { kind: 'instance', model: g.model, profile: i.profile.name })).toBe(true);
        }
      }
      for (const [id, r] of view.running) {
        expect(holders.get(id)).toBe(r.placement.kind === 'gpus' ? r.spec.gpus : 1);
        expect(r.started).toBeGreaterThanOrEqual(r.spec.arrival);
        expect(r.done).toBeLessThanOrEqual((r.spec.estimate ?? Infinity) + 1e-9);
      }
      expect(holders.size).toBe(view.running.size);
      for (const q of view.queue) {
        expect(view.running.has(q.id)).toBe(false);
        expect(q.arrival).toBeLessThanOrEqual(view.now);
      }
      for (const b of busy) {
        if (!view.running.has(b.job)) continue;
        const inst = view.gpus[b.gpu]?.instances.find((i) => i.start === b.start);
        expect(inst?.profile.name).toBe(b.profile);
        expect(inst?.job).toBe(b.job);
      }
      busy = view.gpus.flatMap((g) => g.instances.filter((i) => i.job !== null).map((i) => ({ gpu: g.id, start: i.start, profile: i.profile.name, job: i.job as string })));
      const decisions = policy.decide(view, ctx);
      seen.decisions += decisions.length;
      return decisions;
    },
    // The policy's own wake-ups (tiresias, migpool: threshold crossings, minimum runs), so that the
    // checked run makes the same decisions as the plain one.
    ...(policy.wakeAt ? { wakeAt: (view: ClusterView) => policy.wakeAt!(view) } : {}),
  };
}

describe('simulate: invariants on random traces', () => {
  for (const [name, sharers] of POLICIES) {
    it(`${name}: nothing over-committed, every job once, busy instances kept, reproducible`, () => {
      fc.assert(
        fc.property(fc.array(jobArb, { minLength: 1, maxLength: 25 }), fc.constantFrom(...FLEETS), fc.integer(), (raw, fleetSpec, seed) => {
          const jobs = toJobs(raw);
          const fleet = parseFleet(fleetSpec);
          const seen = { decisions: 0 };
          const r = simulate({ fleet, jobs, seed, policy: checked(parsePolicy(name), sharers, seen), sampleEverySeconds: 100 });
          const runnable = jobs.filter((j) => j.gpus <= fleet.gpus.length);
          expect(r.metrics.completed).toBe(runnable.length);
          expect(r.jcts).toHaveLength(runnable.length);
          expect(r.byPriority.foreground.completed + r.byPriority.background.completed).toBe(runnable.length);
          runnable.forEach((j, k) => expect(r.jcts[k]).toBeGreaterThanOrEqual(j.work * 0.999));
          expect(r.metrics.utilization).toBeLessThanOrEqual(1 + 1e-9);
          for (const s of r.timeline) expect(s.utilization).toBeLessThanOrEqual(1 + 1e-9);
          expect(simulate({ fleet, jobs, seed, policy: parsePolicy(name), sampleEverySeconds: 100 })).toEqual(r);
        }),
        { numRuns: 60, seed: 42 },
      );
      // 60 random traces, each simulated twice and compared whole (timelines included): about
      // 25 s for migpool on an idle 2-core machine, more under load.
    }, 180_000);
  }
});
