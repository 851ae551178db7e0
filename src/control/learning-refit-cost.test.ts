import { describe, expect, it, vi } from 'vitest';
import { resolveWorkload } from '../perf/workloads.js';
import type { WorkloadObservation } from '../store/types.js';

// The catalogue's look-up, counted (it normalizes every model's names: about 23 µs a call).
const lookups = vi.hoisted(() => ({ count: 0 }));
vi.mock('../mig/catalog/index.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../mig/catalog/index.js')>();
  return {
    ...real,
    resolveGpuModel: (input: string) => {
      lookups.count++;
      return real.resolveGpuModel(input);
    },
  };
});

const { learnedFit, learnedWorkload } = await import('./learning.js');

const observations = (n: number): WorkloadObservation[] =>
  Array.from({ length: n }, (_, i) => ({
    workload: 'small',
    jobId: String(i + 1),
    attempt: 1,
    gpuModel: i % 2 === 0 ? 'NVIDIA A100-SXM4-40GB' : 'NVIDIA H100 80GB HBM3',
    resource: ['1g.10gb', '3g.40gb', 'whole'][i % 3]!,
    samplesPerSecond: 1000 + (i % 50),
    peakMemoryMiB: 3000 + (i % 100),
    outOfMemory: false,
    time: i,
    owner: null,
    shared: true,
  }));

describe("a refit's cost as the history grows", () => {
  // A service refits a workload at each new observation: one catalogue look-up per observation made
  // a refit over 10,000 observations hold the event loop 0.24 s (a 50,000 one 1.1 s).
  it('looks each GPU model of the observations up once, however many observations there are', () => {
    lookups.count = 0;
    learnedWorkload(resolveWorkload('small'), observations(2000));
    expect(lookups.count).toBeLessThanOrEqual(2);
    lookups.count = 0;
    const fit = learnedFit('small', resolveWorkload('small'), observations(2000));
    expect(fit.points).toHaveLength(2000);
    expect(lookups.count).toBeLessThanOrEqual(4);
  });
});
