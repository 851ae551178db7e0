import { describe, expect, it } from 'vitest';
import { resolveGpuModel } from '../../mig/catalog/index.js';
import { predict } from '../../perf/model.js';
import { resolveWorkload } from '../../perf/workloads.js';
import { DEFAULT_RECONFIGURE_SECONDS, simulate } from '../../sim/engine.js';
import { parseFleet } from '../../sim/fleet.js';
import type { ClusterView, Decision, PolicyContext } from '../types.js';
import type { TraceJob } from '../../sim/types.js';
import { migpoolPolicy } from './migpool.js';
import { misoPolicy } from './miso.js';

const small = resolveWorkload('small');
const a100 = resolveGpuModel('A100-40GB');

function job(id: string, arrival: number, work: number, more: Partial<TraceJob> = {}): TraceJob {
  return { id, workload: small, gpus: 1, priority: 'foreground', arrival, work, memoryGiB: null, profile: null, ...more };
}

/** A small job's speed on a 1g.5gb slice, relative to a whole A100 (what the engine uses). */
const oneG = (predict(small, { kind: 'mig', gpu: a100, profile: '1g.5gb' }).samplesPerSecond ?? 0) / (predict(small, { kind: 'full', gpu: a100 }).samplesPerSecond ?? 1);

describe('migpool policy', () => {
  it('gives whole GPUs while they are plenty: two jobs on eight idle GPUs finish in their own time', () => {
    const r = simulate({ fleet: parseFleet('8xA100-40GB'), jobs: [job('a', 0, 100), job('b', 0, 50)], policy: migpoolPolicy(), seed: 1 });
    expect(r.jcts).toEqual([100, 50]);
    expect(r.metrics.reconfigurations).toBe(0);
  });

  it('packs when jobs wait: seven small jobs on one A100 run side by side on 1g slices after one re-partition (and MIG off once they are done)', () => {
    const jobs = Array.from({ length: 7 }, (_, k) => job(`j${k}`, 0, 100));
    const r = simulate({ fleet: parseFleet('1xA100-40GB'), jobs, policy: migpoolPolicy(), seed: 1 });
    expect(r.metrics.completed).toBe(7);
    expect(r.metrics.reconfigurations).toBe(2);
    // Each on a one-compute-slice instance (1g.5gb, or the one 1g.10gb that fits beside six).
    for (const jct of r.jcts) expect(jct).toBeLessThanOrEqual(DEFAULT_RECONFIGURE_SECONDS + 100 / oneG + 1e-6);
    // One after another on the whole GPU they would take 700 s; packed, about 10 + 100/0.45.
    expect(r.metrics.makespanSeconds).toBeLessThan(700);
  });

  it('a foreground job that finds nothing takes a background job\'s slice (checkpointed, requeued)', () => {
    const jobs = [...Array.from({ length: 7 }, (_, k) => job(`bg${k}`, 0, 1000, { priority: 'background' })), job('fg', 50, 10)];
    const r = simulate({ fleet: parseFleet('1xA100-40GB'), jobs, policy: migpoolPolicy(), seed: 1 });
    expect(r.metrics.completed).toBe(8);
    expect(r.byPriority.foreground.avgJctSeconds).toBeLessThan(10 / oneG + 1);
  });
});

describe('miso policy', () => {
  it('re-partitions a GPU when a second job arrives (checkpointing the first) and when one leaves', () => {
    const r = simulate({ fleet: parseFleet('1xA100-40GB'), jobs: [job('a', 0, 1000), job('b', 100, 100)], policy: misoPolicy(), seed: 1 });
    expect(r.metrics.completed).toBe(2);
    // MIG on for a, re-cut for a+b, re-cut for a alone when b ends.
    expect(r.metrics.reconfigurations).toBe(3);
    expect(r.jcts[0]).toBeGreaterThan(1000);
  });

  it('keeps a job that asked for a profile off smaller slices (a floor, as everywhere)', () => {
    const decisions: Decision[] = [];
    const inner = misoPolicy();
    const policy = { name: 'miso', decide: (v: ClusterView, c: PolicyContext) => inner.decide(v, c).map((d) => (decisions.push(d), d)) };
    // a asked for the whole 7g.40gb: b may not squeeze it onto a smaller slice, so b waits for it.
    const jobs = [job('a', 0, 1000, { profile: '7g.40gb' }), job('b', 100, 100)];
    const r = simulate({ fleet: parseFleet('1xA100-40GB'), jobs, policy, seed: 1 });
    expect(r.metrics.completed).toBe(2);
    let layout: readonly { profile: string; start: number }[] | null = null;
    const slicesOfA: number[] = [];
    for (const d of decisions) {
      if (d.kind === 'repartition') layout = d.layout;
      if (d.kind === 'start-on-instance' && d.job === 'a') {
        const profile = layout?.find((i) => i.start === d.start)?.profile;
        slicesOfA.push(a100.giProfiles.find((q) => q.name === profile)?.computeSlices ?? 0);
      }
    }
    expect(slicesOfA.length).toBeGreaterThan(0);
    expect(Math.min(...slicesOfA)).toBe(7);
  });

  it('starts a lone late job on an idle cluster (no event needed)', () => {
    const r = simulate({ fleet: parseFleet('2xA100-40GB'), jobs: [job('a', 0, 10), job('b', 5000, 10)], policy: misoPolicy(), seed: 1 });
    expect(r.metrics.completed).toBe(2);
  });
});
