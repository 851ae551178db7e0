import { describe, expect, it } from 'vitest';
import { MigpoolError } from '../../errors.js';
import { loadHighs } from '../../exec/highs.js';
import { resolveWorkload } from '../../perf/workloads.js';
import { createRandom } from '../../random.js';
import { simulate } from '../../sim/engine.js';
import { parseFleet } from '../../sim/fleet.js';
import { parsePolicy } from '../registry.js';
import type { ClusterView, Policy, RunningJobView } from '../types.js';
import type { TraceJob } from '../../sim/types.js';
import type { JobSpec } from '../types.js';
import { gavelPolicy } from './gavel.js';
import { maxMinFairShares } from './gavel-allocation.js';

const small = resolveWorkload('small');
const job = (id: string, arrival: number, work: number, gpus = 1): TraceJob => ({ id, workload: small, gpus, priority: 'foreground', arrival, work, memoryGiB: null, profile: null });
const run = (fleet: string, jobs: TraceJob[], policy: Policy) => simulate({ fleet: parseFleet(fleet), jobs, policy, seed: 1 });

/** The policy seeing jobs whose length it may not read: reading `work` or `estimate` throws. */
function blindfolded(policy: Policy): Policy {
  const blind = (spec: JobSpec): JobSpec =>
    new Proxy(spec, {
      get(target, key, receiver) {
        if (key === 'work' || key === 'estimate') throw new Error(`gavel read ${String(key)} of ${target.id}`);
        return Reflect.get(target, key, receiver) as unknown;
      },
    });
  const plainView = (view: ClusterView): ClusterView => {
    const running = new Map<string, RunningJobView>();
    for (const [id, r] of view.running) running.set(id, { spec: blind(r.spec), placement: r.placement, started: r.started, done: NaN, speed: NaN });
    return { now: view.now, gpus: view.gpus, queue: view.queue.map(blind), running };
  };
  return { name: policy.name, decide: (view, ctx) => policy.decide(plainView(view), ctx), wakeAt: (view) => policy.wakeAt?.(plainView(view)) ?? null };
}

describe('gavel fair shares', () => {
  it('water-fills one GPU type: equal GPU shares, small jobs capped at all the time', () => {
    // 8 GPUs, jobs of 1, 1, 4, 8 GPUs: level 3 GPUs each for the big ones (1 + 1 + 3 + 3 = 8).
    expect(maxMinFairShares([1, 1, 4, 8].map((gpus) => ({ gpus, speeds: [1] })), [8])).toEqual([[1], [1], [0.75], [0.375]]);
    // Enough GPUs for all: everyone runs all the time; a job larger than the type gets nothing.
    expect(maxMinFairShares([1, 2, 16].map((gpus) => ({ gpus, speeds: [1] })), [8])).toEqual([[1], [1], [0]]);
  });

  it('gives the fast GPU type to the job that gains from it (heterogeneity-aware, solved with HiGHS)', async () => {
    const highs = await loadHighs();
    // One GPU of each of two types; a runs twice as fast on type 0, b the same on both.
    const x = maxMinFairShares(
      [
        { gpus: 1, speeds: [2, 1] },
        { gpus: 1, speeds: [1, 1] },
      ],
      [1, 1],
      highs,
    );
    expect(x[0]?.[0]).toBeCloseTo(1, 6);
    expect(x[0]?.[1]).toBeCloseTo(0, 6);
    expect((x[1]?.[0] ?? 0) + (x[1]?.[1] ?? 0)).toBeCloseTo(1, 6);
    expect(x[1]?.[1]).toBeCloseTo(1, 6);
    expect(() => maxMinFairShares([{ gpus: 1, speeds: [1, 1] }], [1, 1])).toThrow(/needs the HiGHS solver/);
    // A job too large for every type gets nothing (and leaves nothing to solve).
    expect(maxMinFairShares([{ gpus: 4, speeds: [1, 1] }], [1, 2], highs)).toEqual([[0, 0]]);
  });
});

describe('gavel', () => {
  it('time-shares a GPU between two jobs in rounds by their fair shares', () => {
    // 1 GPU, rounds of 100 s, two 300-s jobs: each has half the GPU; they alternate round by round.
    const r = run('1xA100-40GB', [job('a', 0, 300), job('b', 0, 300)], gavelPolicy({ roundSeconds: 100 }));
    expect(r.jcts).toEqual([500, 600]);
  });

  it('starts newcomers at the next round boundary, not before', () => {
    // 2 GPUs: b arrives at 10 while a runs; the second GPU stays idle until the round ends at 100.
    const r = run('2xA100-40GB', [job('a', 0, 150), job('b', 10, 20)], gavelPolicy({ roundSeconds: 100 }));
    expect(r.jcts).toEqual([150, 110]);
  });

  it('never reads a job\'s length, completes every job and decides the same blindfolded', () => {
    const random = createRandom(5);
    const jobs = Array.from({ length: 150 }, (_, i) => job(`j${i}`, Math.floor(random() * 5000), 1 + Math.floor(random() * 3000), random() < 0.2 ? 1 + Math.floor(random() * 4) : 1));
    const open = run('6xA100-40GB', jobs, gavelPolicy());
    const blind = run('6xA100-40GB', jobs, blindfolded(gavelPolicy()));
    expect(open.metrics.completed).toBe(jobs.length);
    expect(blind.jcts).toEqual(open.jcts);
  });

  it('parses gavel and gavel:SECONDS', () => {
    expect(parsePolicy('gavel').name).toBe('gavel');
    const p = parsePolicy('Gavel:100');
    expect(p.name).toBe('Gavel:100');
    expect(run('1xA100-40GB', [job('a', 0, 300), job('b', 0, 300)], p).jcts).toEqual([500, 600]);
    for (const bad of ['gavel:0', 'gavel:abc', 'gavel:']) {
      let err: unknown;
      try {
        parsePolicy(bad);
      } catch (e) {
        err = e;
      }
      expect(err, bad).toBeInstanceOf(MigpoolError);
      expect((err as Error).message, bad).toContain('gavel:360');
    }
  });
});

describe('weighted max-min fair shares', () => {
  it('give a job of weight 2 twice the time of one of weight 1, on one GPU type and on several', async () => {
    const jobs = [
      { gpus: 1, speeds: [1, 1], weight: 2 },
      { gpus: 1, speeds: [1, 1], weight: 1 },
      { gpus: 1, speeds: [1, 1], weight: 1 },
    ];
    // One type of 2 GPUs: the level t with 2t + t + t = 2 is 1/2; shares 1, 1/2, 1/2.
    expect(maxMinFairShares(jobs.map((j) => ({ ...j, speeds: [1] })), [2]).map((x) => x[0])).toEqual([1, 0.5, 0.5]);
    // Unweighted: 2/3 each.
    expect(maxMinFairShares(jobs.map(({ gpus }) => ({ gpus, speeds: [1] })), [2]).map((x) => x[0])).toEqual([2 / 3, 2 / 3, 2 / 3]);
    // Two types of one GPU each (the LP): the weight-2 job gets twice the time of each other one.
    const x = maxMinFairShares(jobs, [1, 1], await loadHighs()).map((s) => s.reduce((a, b) => a + b, 0));
    expect(x[0]! / x[1]!).toBeCloseTo(2, 6);
    expect(x[1]).toBeCloseTo(x[2]!, 6);
  });
});
