import { describe, expect, it } from 'vitest';
import { resolveWorkload } from '../perf/workloads.js';
import { exclusivePolicy } from '../sched/policies/exclusive.js';
import type { ClusterView, Decision, Policy } from '../sched/types.js';
import { simulate } from './engine.js';
import { parseFleet } from './fleet.js';
import { createEstimator, parseInfoMode, PROGRESS_REVEAL_SECONDS, roundUpToPowerOfTwoHours } from './info.js';
import type { TraceJob } from './types.js';

const small = resolveWorkload('small');
const job = (id: string, arrival: number, work: number, more: Partial<TraceJob> = {}): TraceJob => ({ id, workload: small, gpus: 1, priority: 'foreground', arrival, work, memoryGiB: null, profile: null, ...more });

describe('information models', () => {
  const works = Array.from({ length: 2001 }, (_, i) => 100 + i);

  it('exact tells the truth, none tells nothing, progress tells the truth after five minutes of running', () => {
    expect(createEstimator({ mode: 'exact', seed: 1 }, works).estimate(3, 103, 0)).toBe(103);
    expect(createEstimator({ mode: 'none', seed: 1 }, works).estimate(3, 103, 1e9)).toBeNull();
    const p = createEstimator({ mode: 'progress', seed: 1 }, works);
    expect(p.dynamic).toBe(true);
    expect(p.estimate(0, 5000, PROGRESS_REVEAL_SECONDS - 1)).toBeNull();
    expect(p.estimate(0, 5000, PROGRESS_REVEAL_SECONDS)).toBe(5000);
  });

  it('noisy is the truth times e^N(0,1): seeded, median about right, spread about e', () => {
    const a = createEstimator({ mode: 'noisy', seed: 7 }, works);
    const b = createEstimator({ mode: 'noisy', seed: 7 }, works);
    const ratios = works.map((w, i) => (a.estimate(i, w, 0) as number) / w);
    expect(works.map((w, i) => b.estimate(i, w, 0))).toEqual(works.map((w, i) => a.estimate(i, w, 0)));
    const logs = ratios.map(Math.log).sort((x, y) => x - y);
    const median = logs[Math.floor(logs.length / 2)] as number;
    const sd = Math.sqrt(logs.reduce((s, x) => s + x * x, 0) / logs.length);
    expect(Math.abs(median)).toBeLessThan(0.1);
    expect(sd).toBeGreaterThan(0.9);
    expect(sd).toBeLessThan(1.1);
    expect(createEstimator({ mode: 'noisy', seed: 8 }, works).estimate(0, 100, 0)).not.toBe(a.estimate(0, 100, 0));
  });

  it('overestimate is like a wall-time limit: at least the truth, at most 20x, a power of two hours', () => {
    const e = createEstimator({ mode: 'overestimate', seed: 3 }, works);
    for (const [i, w] of works.entries()) {
      const est = e.estimate(i, w, 0) as number;
      expect(est).toBeGreaterThanOrEqual(w);
      expect(est).toBeLessThanOrEqual(20 * w);
      expect(Number.isInteger(Math.log2(est / 3600))).toBe(true);
    }
    expect(roundUpToPowerOfTwoHours(3 * 3600)).toBe(4 * 3600);
    expect(roundUpToPowerOfTwoHours(1800)).toBe(1800);
  });

  it('refuses an unknown mode with the list of modes', () => {
    expect(() => parseInfoMode('oracle')).toThrow(/exact, noisy, overestimate, none, progress/);
  });
});

describe('the simulator shows policies the estimate, never the truth', () => {
  /** exclusive, recording every estimate it is shown. */
  function spy(seen: (number | null)[]): Policy {
    const inner = exclusivePolicy();
    return {
      name: 'spy',
      decide(view: ClusterView, ctx): Decision[] {
        for (const q of view.queue) seen.push(q.estimate);
        for (const r of view.running.values()) seen.push(r.spec.estimate);
        return inner.decide(view, ctx);
      },
    };
  }
  const jobs = [job('a', 0, 1000), job('b', 0, 2000), job('c', 10, 500)];
  const fleet = parseFleet('1xA100-40GB');

  it('none: every estimate is null, and jobs still run to their true work', () => {
    const seen: (number | null)[] = [];
    const r = simulate({ fleet, jobs, policy: spy(seen), seed: 1, info: { mode: 'none', seed: 1 } });
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.every((x) => x === null)).toBe(true);
    expect(r.jcts).toEqual([1000, 3000, 3490]);
  });

  it('noisy: estimates differ from the truth; progress: null until the job ran five minutes', () => {
    const noisy: (number | null)[] = [];
    simulate({ fleet, jobs, policy: spy(noisy), seed: 1, info: { mode: 'noisy', seed: 1 } });
    expect(noisy.some((x) => x !== null && ![1000, 2000, 500].includes(x))).toBe(true);
    const progress: (number | null)[] = [];
    simulate({ fleet, jobs, policy: spy(progress), seed: 1, info: { mode: 'progress', seed: 1 } });
    expect(progress.filter((x) => x !== null).every((x) => [1000, 2000, 500].includes(x as number))).toBe(true);
    expect(progress.some((x) => x === null)).toBe(true);
  });
});

describe('preemption costs time', () => {
  /** Starts 'a' at 0, preempts it at 100 (when 'b' arrives), starts 'b', then 'a' again when 'b' ends. */
  const jobs = [job('a', 0, 1000), job('b', 100, 200)];
  const fleet = parseFleet('1xA100-40GB');
  const policy = (): Policy => ({
    name: 'bully',
    decide(view): Decision[] {
      const out: Decision[] = [];
      const g = view.gpus[0];
      if (!g || g.migEnabled) return out;
      const runningA = view.running.get('a');
      const queuedB = view.queue.find((q) => q.id === 'b');
      if (runningA && queuedB) return [{ kind: 'preempt', job: 'a' }, { kind: 'start-on-gpus', job: 'b', gpus: [0], sharing: 'exclusive' }];
      if (g.wholeGpuJobs.length === 0 && view.queue[0]) return [{ kind: 'start-on-gpus', job: view.queue[0].id, gpus: [0], sharing: 'exclusive' }];
      return out;
    },
  });

  it('a preempted job loses the cost when it starts again, and the preemption is counted', () => {
    const free = simulate({ fleet, jobs, policy: policy(), seed: 1 });
    const costly = simulate({ fleet, jobs, policy: policy(), seed: 1, preemptionCostSeconds: 60 });
    expect(free.jcts).toEqual([1200, 200]);
    expect(costly.jcts).toEqual([1260, 200]);
    expect(costly.preemptions).toEqual({ total: 1, maxPerJob: 1 });
  });

  it('judges slowdowns against the run alone and bounds what any policy could do', () => {
    const r = simulate({ fleet, jobs, policy: policy(), seed: 1, preemptionCostSeconds: 60 });
    expect(r.slowdowns).toEqual([1.26, 1]);
    expect(r.bounds.avgJctSeconds).toBe(600);
    // Capacity: both jobs are cheapest on a whole GPU or shared; the last arrival plus run is 300 s.
    expect(r.bounds.makespanSeconds).toBeGreaterThanOrEqual(300);
    expect(r.bounds.makespanSeconds).toBeLessThanOrEqual(r.metrics.makespanSeconds);
  });

  it('leaves out of the bounds the jobs no policy can run there, as the makespan and JCTs leave them out', () => {
    // Found with `simulate --trace philly --fleet 8xA100-SXM4-40GB --limit 500`: 11 jobs of more than 8 GPUs took the
    // "lower bound" of the makespan to 520 d while every policy ended by 464 d.
    const two = parseFleet('2xA100-SXM4-40GB');
    const trace = [job('a', 0, 1000), job('big', 0, 1e6, { gpus: 4 }), job('huge-memory', 0, 1e6, { memoryGiB: 500 })];
    const r = simulate({ fleet: two, jobs: trace, policy: exclusivePolicy(), seed: 1 });
    expect(r.metrics.completed).toBe(1);
    expect(r.bounds.neverRun).toBe(2);
    expect(r.bounds.avgJctSeconds).toBe(1000);
    expect(r.bounds.makespanSeconds).toBeLessThanOrEqual(r.metrics.makespanSeconds);
  });
});
