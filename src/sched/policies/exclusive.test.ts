import { describe, expect, it } from 'vitest';
import { resolveWorkload } from '../../perf/workloads.js';
import { simulate } from '../../sim/engine.js';
import { parseFleet } from '../../sim/fleet.js';
import type { TraceJob } from '../../sim/types.js';
import { exclusivePolicy } from './exclusive.js';

const small = resolveWorkload('small');
const job = (id: string, arrival: number, work: number, gpus = 1): TraceJob => ({ id, workload: small, gpus, priority: 'foreground', arrival, work, memoryGiB: null, profile: null });

describe('exclusive', () => {
  it('runs FIFO on whole GPUs', () => {
    const r = simulate({ fleet: parseFleet('2xA100-40GB'), jobs: [job('a', 0, 100), job('b', 0, 50), job('c', 0, 30)], policy: exclusivePolicy(), seed: 1 });
    expect(r.jcts).toEqual([100, 50, 80]);
    expect(r.metrics.reconfigurations).toBe(0);
  });

  it('backfills short jobs that end before the head can start, not long ones', () => {
    // a holds GPU 0 until 100; b (2 GPUs) must wait for it: shadow time 100, no extra GPU.
    // c (ends at 22) backfills GPU 1; d (would end at 203) must not delay b.
    const r = simulate({
      fleet: parseFleet('2xA100-40GB'),
      jobs: [job('a', 0, 100), job('b', 1, 50, 2), job('c', 2, 20), job('d', 3, 200)],
      policy: exclusivePolicy(),
      seed: 1,
    });
    expect(r.jcts).toEqual([100, 149, 20, 347]);
  });

  it('backfills long jobs on GPUs the head will not need', () => {
    // 3 GPUs: a holds one until 100; b wants 2 of the 3 -> at 100 one GPU is extra, so d may take it.
    const r = simulate({
      fleet: parseFleet('3xA100-40GB'),
      jobs: [job('a', 0, 100), job('x', 0, 100), job('b', 1, 50, 2), job('d', 3, 200)],
      policy: exclusivePolicy(),
      seed: 1,
    });
    // a, x on GPUs 0, 1; b waits (1 free); d takes the free GPU (extra: at 100, 2 free + 1 = 3 > 2).
    expect(r.jcts).toEqual([100, 100, 149, 200]);
  });

  it('turns MIG off on idle partitioned GPUs', () => {
    // A policy that leaves GPU 0 partitioned, then exclusive takes over.
    const excl = exclusivePolicy();
    let first = true;
    const r = simulate({
      fleet: parseFleet('1xA100-40GB'),
      jobs: [job('a', 0, 100)],
      seed: 1,
      policy: {
        name: 'mixed',
        decide(view, ctx) {
          if (first) {
            first = false;
            return [{ kind: 'repartition', gpu: 0, layout: [{ profile: '7g.40gb', start: 0 }] }];
          }
          return excl.decide(view, ctx);
        },
      },
    });
    // MIG on until 10, off until 20, then a runs 100 s.
    expect(r.jcts).toEqual([120]);
    expect(r.metrics.reconfigurations).toBe(2);
  });
});
