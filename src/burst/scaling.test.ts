import { describe, expect, it } from 'vitest';
import { loadBuiltIn } from '../../test/burst-fixtures.js';
import { MigpoolError } from '../errors.js';
import { resolveWorkload } from '../perf/workloads.js';
import type { JobSpec } from '../sched/types.js';
import { DEFAULT_NETWORK } from './cost.js';
import { backgroundShareOf, DEFAULT_MULTIPLEX, multiplex } from './multiplex.js';
import { planBurst, planDataParallel, singleGpuMs } from './planner.js';
import { createScalingModel, DEFAULT_SCALING } from './scaling.js';

function job(model: string, globalBatch: number): JobSpec {
  return { id: 'j', workload: resolveWorkload('large'), gpus: 64, priority: 'foreground', arrival: 0, estimate: 1, memoryGiB: null, profile: null, strongScaling: { model, globalBatch } };
}

describe('createScalingModel', () => {
  const vgg = loadBuiltIn('vgg16');
  const scaling = createScalingModel([vgg]);
  const req = { gpus: 64, globalBatch: 1024, amplification: DEFAULT_SCALING.amplification, network: DEFAULT_NETWORK };
  const t1 = singleGpuMs(vgg, 1024);

  it('data-parallel: one GPU\'s iteration at the global batch over the data-parallel iteration, no idle time', () => {
    const r = scaling.run(job('vgg16', 1024), 64, 'data-parallel');
    expect(r.soloSpeed).toBeCloseTo(t1 / planDataParallel(vgg, req).iterationMs, 9);
    expect(r.sharedSpeed).toBe(r.soloSpeed);
    expect(r.backgroundShare(5)).toBe(0);
  });

  it('burst: the plan\'s speed alone, the gated speed beside background jobs, each rank\'s background share', () => {
    const r = scaling.run(job('vgg16', 1024), 64, 'burst');
    const m = multiplex(planBurst(vgg, req), 64, DEFAULT_MULTIPLEX);
    expect(r.soloSpeed).toBeCloseTo(t1 / m.soloMs, 9);
    expect(r.sharedSpeed).toBeCloseTo(t1 / m.sharedMs, 9);
    expect(r.sharedSpeed).toBeGreaterThanOrEqual(r.soloSpeed / 1.1 - 1e-12);
    for (const rank of [0, 1, 7, 63]) expect(r.backgroundShare(rank)).toBe(backgroundShareOf(m, rank));
    expect(scaling.run(job('vgg16', 1024), 64, 'burst')).toBe(r);
  });

  it('refuses unknown models and jobs without strongScaling', () => {
    expect(() => scaling.run(job('gpt', 1024), 64, 'burst')).toThrow(MigpoolError);
    expect(() => scaling.run({ ...job('vgg16', 1024), strongScaling: undefined }, 64, 'burst')).toThrow('no strongScaling');
  });
});
