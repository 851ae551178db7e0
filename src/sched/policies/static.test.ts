import { describe, expect, it } from 'vitest';
import { MigpoolError } from '../../errors.js';
import { resolveGpuModel } from '../../mig/catalog/index.js';
import { predict } from '../../perf/model.js';
import { resolveWorkload } from '../../perf/workloads.js';
import { simulate } from '../../sim/engine.js';
import { parseFleet } from '../../sim/fleet.js';
import type { Decision, Policy } from '../types.js';
import type { TraceJob } from '../../sim/types.js';
import { parseStaticLayout, resolveStaticLayout, staticPolicy } from './static.js';

const small = resolveWorkload('small');
const a100 = resolveGpuModel('A100-40GB');
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
const rel = (profile: string): number => {
  const w = { ...small, memoryGiB: null };
  return (predict(w, { kind: 'mig', gpu: a100, profile }).samplesPerSecond ?? 0) / (predict(w, { kind: 'full', gpu: a100 }).samplesPerSecond ?? 1);
};
function recording(policy: Policy, log: { t: number; d: Decision }[]): Policy {
  return { name: policy.name, decide: (view, ctx) => policy.decide(view, ctx).map((d) => (log.push({ t: view.now, d }), d)) };
}

describe('static layouts', () => {
  it('parses terms, counts and +me suffixes', () => {
    expect(parseStaticLayout('7x1g.5gb')).toEqual([{ profile: '1g.5gb', count: 7 }]);
    expect(parseStaticLayout('3g.20gb+2g.10gb+1g.5gb+1g.5gb')).toHaveLength(4);
    expect(parseStaticLayout('1g.5gb+me+6x1g.5gb')).toEqual([
      { profile: '1g.5gb+me', count: 1 },
      { profile: '1g.5gb', count: 6 },
    ]);
    for (const bad of ['', '7x', 'x1g.5gb', '9x1g.5gb', '1g.7gb', 'big']) {
      expect(() => parseStaticLayout(bad), bad).toThrow(MigpoolError);
    }
  });

  it('resolves a layout on another model by compute slices, and refuses what does not fit', () => {
    const h100 = resolveGpuModel('H100-80GB');
    const l = resolveStaticLayout(parseStaticLayout('7x1g.5gb'), h100, '7x1g.5gb');
    expect(l.instances.map((i) => i.profile.name)).toEqual(Array(7).fill('1g.10gb'));
    expect(() => resolveStaticLayout(parseStaticLayout('2x4g.20gb'), a100, '2x4g.20gb')).toThrow(/does not fit on A100-40GB/);
  });
});

describe('static:LAYOUT', () => {
  it('partitions once, then runs each job on a slice', () => {
    const r = simulate({ fleet: parseFleet('1xA100-40GB'), jobs: [job('a', 0, 100)], policy: staticPolicy('7x1g.5gb'), seed: 1 });
    expect(r.metrics.reconfigurations).toBe(1);
    expect(r.jcts[0]).toBeCloseTo(10 + 100 / rel('1g.5gb'), 9);
  });

  it('gives each job the fastest idle instance, the smallest among equals', () => {
    const log: { t: number; d: Decision }[] = [];
    const jobs = ['a', 'b', 'c', 'd', 'e'].map((id) => job(id, 0, 1000));
    const r = simulate({ fleet: parseFleet('1xA100-40GB'), jobs, policy: recording(staticPolicy('3g.20gb+2g.10gb+1g.5gb+1g.5gb'), log), seed: 1 });
    const starts = log.filter((l) => l.d.kind === 'start-on-instance').map((l) => [l.t, l.d.kind === 'start-on-instance' ? `${l.d.job}@${l.d.start}` : '']);
    // A100 placements: 3g at 4, 2g at 0, 1g at 2 and 3 (placeProfiles' arrangement).
    expect(starts.slice(0, 4)).toEqual([
      [10, 'a@4'],
      [10, 'b@0'],
      [10, 'c@2'],
      [10, 'd@3'],
    ]);
    // e takes the 3g when a ends.
    expect(starts[4]).toEqual([10 + 1000 / rel('3g.20gb'), 'e@4']);
    expect(r.jcts[4]).toBeCloseTo(10 + 2000 / rel('3g.20gb'), 6);
    expect(r.jcts[1]).toBeCloseTo(10 + 1000 / rel('2g.10gb'), 6);
  });

  it('puts a job only where its memory fits', () => {
    const r = simulate({ fleet: parseFleet('1xA100-40GB'), jobs: [job('a', 0, 100, { memoryGiB: 8 })], policy: staticPolicy('2g.10gb+5x1g.5gb'), seed: 1 });
    expect(r.jcts[0]).toBeCloseTo(10 + 100 / rel('2g.10gb'), 9);
  });

  it('runs a multi-GPU job on GPUs still MIG off at the start', () => {
    const r = simulate({
      fleet: parseFleet('2xA100-40GB'),
      jobs: [job('a', 0, 100), job('big', 0, 50, { gpus: 2 })],
      policy: staticPolicy('7x1g.5gb'),
      seed: 1,
    });
    // big takes both GPUs at 0; they go to the layout at 50 (ready at 60), when a starts.
    expect(r.jcts[1]).toBe(50);
    expect(r.jcts[0]).toBeCloseTo(60 + 100 / rel('1g.5gb'), 9);
    expect(r.metrics.reconfigurations).toBe(2);
  });

  it('takes GPUs out of the layout for a multi-GPU job and puts them back', () => {
    // t=0 both GPUs to the layout (ready at 10); at 10 both go MIG off for big (ready at 20), big
    // runs 20..70; both go back to the layout (ready at 80); a, kept off idle GPUs meanwhile, runs from 80.
    const r = simulate({
      fleet: parseFleet('2xA100-40GB'),
      jobs: [job('a', 0, 100), job('big', 5, 50, { gpus: 2 })],
      policy: staticPolicy('7x1g.5gb'),
      seed: 1,
    });
    expect(r.jcts[1]).toBe(65);
    expect(r.jcts[0]).toBeCloseTo(80 + 100 / rel('1g.5gb'), 9);
    expect(r.metrics.reconfigurations).toBe(6);
  });

  it('runs a single-GPU job no instance can hold on a whole GPU', () => {
    const r = simulate({ fleet: parseFleet('1xA100-40GB'), jobs: [job('a', 1, 100, { memoryGiB: 30 })], policy: staticPolicy('7x1g.5gb'), seed: 1 });
    // layout at 0..10, MIG off 10..20, runs 20..120.
    expect(r.jcts).toEqual([119]);
  });
});
