import { describe, expect, it } from 'vitest';
import { resolveWorkload } from '../../perf/workloads.js';
import { simulate } from '../../sim/engine.js';
import { parseFleet } from '../../sim/fleet.js';
import { createRandom } from '../../random.js';
import { parsePolicy } from '../registry.js';
import type { ClusterView, JobSpec, Policy } from '../types.js';
import type { TraceJob } from '../../sim/types.js';
import { GPU_MODELS, resolveGpuModel } from '../../mig/catalog/index.js';
import { canEverRunWhole, Picker, profileAllows, requestedSlices } from './common.js';

/** The same policy seeing a plain view, without the simulator's index. */
function withoutIndex(policy: Policy): Policy {
  return {
    name: policy.name,
    decide: (view, ctx) => {
      const plain: ClusterView = { now: view.now, gpus: view.gpus, queue: view.queue, running: view.running };
      return policy.decide(plain, ctx);
    },
  };
}

describe('policy helpers', () => {
  it('requestedSlices: the profile\'s compute slices, on any model (a name says them)', () => {
    for (const g of GPU_MODELS) for (const p of g.giProfiles) expect(p.name.startsWith(`${p.computeSlices}g.`), `${g.name} ${p.name}`).toBe(true);
    const job = (profile: string | null): JobSpec => ({ id: 'a', workload: resolveWorkload('small'), gpus: 1, priority: 'foreground', arrival: 0, estimate: 1, memoryGiB: null, profile });
    const a100 = resolveGpuModel('A100-40GB');
    const h100 = resolveGpuModel('H100-80GB');
    expect(requestedSlices(job(null), a100)).toBe(0);
    expect(requestedSlices(job('3g.20gb'), a100)).toBe(3);
    expect(requestedSlices(job('3g.20gb'), h100)).toBe(3);
    expect(requestedSlices(job('1g.5gb+me'), h100)).toBe(1);
  });

  it('profileAllows: any profile for a job that named none, exactly its own when exact, else a floor', () => {
    const a100 = resolveGpuModel('A100-SXM4-40GB');
    const base: JobSpec = { id: 'x', workload: resolveWorkload('small'), gpus: 1, priority: 'foreground', arrival: 0, estimate: 10, memoryGiB: null, profile: null };
    expect(profileAllows(base, '1g.5gb', a100)).toBe(true);
    const floor = { ...base, profile: '2g.10gb' };
    expect([profileAllows(floor, '1g.5gb', a100), profileAllows(floor, '2g.10gb', a100), profileAllows(floor, '3g.20gb', a100)]).toEqual([false, true, true]);
    const exact = { ...floor, exactProfile: true };
    expect([profileAllows(exact, '1g.5gb', a100), profileAllows(exact, '2g.10gb', a100), profileAllows(exact, '3g.20gb', a100)]).toEqual([false, true, false]);
    const view: ClusterView = { now: 0, gpus: [{ id: 0, model: a100, migEnabled: false, instances: [], wholeGpuJobs: [], sharing: 'exclusive', busyUntil: null }], queue: [], running: new Map() };
    const ctx = { fits: () => true } as unknown as Parameters<typeof canEverRunWhole>[1];
    expect(canEverRunWhole(view, ctx, floor)).toBe(true);
    expect(canEverRunWhole(view, ctx, exact)).toBe(false);
  });

  it('Picker hands each item out once and keeps rejected ones for later', () => {
    const p = new Picker([1, 2, 3, 4]);
    expect(p.take((x) => x % 2 === 0)).toBe(2);
    expect(p.takeMany(2, (x) => x > 2)).toEqual([3, 4]);
    expect(p.takeMany(2)).toBeNull();
    expect(p.take()).toBe(1);
    expect(p.hasAny()).toBe(false);
  });

  it('policies decide the same with and without the index', () => {
    const random = createRandom(7);
    const names = ['small', 'medium', 'large'].map((n) => resolveWorkload(n));
    const jobs: TraceJob[] = Array.from({ length: 300 }, (_, i) => ({
      id: `j${i}`,
      workload: names[Math.floor(random() * 3)] ?? names[0]!,
      gpus: random() < 0.1 ? 2 : 1,
      priority: random() < 0.3 ? 'background' : 'foreground',
      arrival: Math.floor(random() * 2000),
      work: 1 + Math.floor(random() * 600),
      memoryGiB: null,
      profile: null,
    }));
    const fleet = parseFleet('6xA100-40GB');
    for (const name of ['exclusive', 'timeslice:3', 'mps:2', 'static:7x1g.5gb', 'static:3g.20gb+2g.10gb+1g.5gb+1g.5gb']) {
      const fast = simulate({ fleet, jobs, seed: 1, policy: parsePolicy(name) });
      const plain = simulate({ fleet, jobs, seed: 1, policy: withoutIndex(parsePolicy(name)) });
      expect(plain.metrics.completed, name).toBe(jobs.length);
      expect(plain.metrics.avgJctSeconds, name).toBeCloseTo(fast.metrics.avgJctSeconds, 6);
    }
  });
});
