import { describe, expect, it } from 'vitest';
import { predict } from '../../perf/model.js';
import { resolveWorkload } from '../../perf/workloads.js';
import { simulate } from '../../sim/engine.js';
import { parseFleet } from '../../sim/fleet.js';
import type { TraceJob } from '../../sim/types.js';
import { sharingPolicy } from './sharing.js';

const small = resolveWorkload('small');
const job = (id: string, arrival: number, work: number, more: Partial<TraceJob> = {}): TraceJob => ({
  id,
  workload: small,
  gpus: 1,
  priority: 'foreground',
  arrival,
  work,
  memoryGiB: null,
  profile: null,
  ...more,
});
const a100 = parseFleet('1xA100-40GB').gpus[0];
/** The model's speed of one of N time-sliced jobs relative to the job alone on the whole GPU. */
const timesliceSpeed = (jobs: number): number => {
  const gpu = parseFleet('1xA100-40GB').gpus[0]!;
  return (predict(small, { kind: 'timeslice', gpu, jobs }).samplesPerSecond ?? 0) / (predict(small, { kind: 'full', gpu }).samplesPerSecond ?? 1);
};

describe('timeslice:N and mps:N', () => {
  it('timeslice:2 shares one GPU between two jobs, each at the speed the model gives one of two time-sliced jobs', () => {
    const s = timesliceSpeed(2);
    const r = simulate({ fleet: parseFleet('1xA100-40GB'), jobs: [job('a', 0, 100), job('b', 0, 50), job('c', 0, 10)], policy: sharingPolicy('timeslice', 2), seed: 1 });
    const bDone = 50 / s;
    // c joins a when b ends; a has done 50; together until c ends, then a alone at speed 1.
    const cDone = bDone + 10 / s;
    const aDone = cDone + (100 - 50 - 10);
    expect(r.jcts[1]).toBeCloseTo(bDone, 9);
    expect(r.jcts[2]).toBeCloseTo(cDone, 9);
    expect(r.jcts[0]).toBeCloseTo(aDone, 9);
  });

  it('prefers an idle GPU to sharing', () => {
    const r = simulate({ fleet: parseFleet('2xA100-40GB'), jobs: [job('a', 0, 100), job('b', 0, 100)], policy: sharingPolicy('timeslice', 2), seed: 1 });
    expect(r.jcts).toEqual([100, 100]);
  });

  it('mps:2 runs two jobs side by side at the model’s MPS speed', () => {
    if (!a100) throw new Error('no A100');
    const w = { ...small, memoryGiB: null };
    const s = (predict(w, { kind: 'mps', gpu: a100, jobs: 2 }).samplesPerSecond ?? 0) / (predict(w, { kind: 'full', gpu: a100 }).samplesPerSecond ?? 1);
    const r = simulate({ fleet: parseFleet('1xA100-40GB'), jobs: [job('a', 0, 100), job('b', 0, 100)], policy: sharingPolicy('mps', 2), seed: 1 });
    expect(r.jcts[0]).toBeCloseTo(100 / s, 9);
    expect(r.jcts[1]).toBeCloseTo(100 / s, 9);
    // A shared GPU is busy: utilisation 1.
    expect(r.metrics.utilization).toBeCloseTo(1, 12);
  });

  it('keeps idle GPUs for a waiting multi-GPU job and never shares it', () => {
    // a on GPU 0; big (2 GPUs) waits for it; c may only join a, not take GPU 1.
    const r = simulate({
      fleet: parseFleet('2xA100-40GB'),
      jobs: [job('a', 0, 10), job('big', 1, 100, { gpus: 2 }), job('c', 2, 1)],
      policy: sharingPolicy('timeslice', 2),
      seed: 1,
    });
    const s = timesliceSpeed(2);
    // a alone 0..2 (2 done), shares with c from 2 until c ends at 2 + 1/s.
    const cEnd = 2 + 1 / s;
    const aEnd = cEnd + (10 - 2 - 1);
    expect(r.jcts[2]).toBeCloseTo(cEnd - 2, 9);
    expect(r.jcts[0]).toBeCloseTo(aEnd, 9);
    expect(r.jcts[1]).toBeCloseTo(aEnd + 100 - 1, 9);
  });

  it('does not over-fill memory', () => {
    // Two 30 GiB jobs cannot share a 40 GB GPU.
    const r = simulate({
      fleet: parseFleet('1xA100-40GB'),
      jobs: [job('a', 0, 100, { memoryGiB: 30 }), job('b', 0, 100, { memoryGiB: 30 })],
      policy: sharingPolicy('mps', 4),
      seed: 1,
    });
    expect(r.jcts).toEqual([100, 200]);
  });

  it('rejects a bad N', () => {
    expect(() => sharingPolicy('timeslice', 0)).toThrow(RangeError);
  });
});
