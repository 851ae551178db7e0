/**
 * Seeded random packing problems for tests and benchmarks: jobs whose speed grows with an
 * instance's compute and memory slices by a per-job exponent, that need a per-job amount of memory.
 */
import type { GpuModel } from '../mig/types.js';
import { createRandom } from '../random.js';
import { FULL_GPU, type PackingJob, type PackingProblem } from './types.js';

export interface RandomProblemOptions {
  readonly seed: number;
  /** GPU models to draw each GPU from (uniformly). */
  readonly models: readonly GpuModel[];
  readonly gpus: number;
  readonly jobs: number;
  /** Draw weights from 1..3 instead of all 1. Default false. */
  readonly weighted?: boolean;
  readonly placeAll?: boolean;
}

/**
 * A job's speed on a profile with compute share `c` and memory share `m` of the GPU is
 * `min(1, (c^(1-b) m^b)^a)` with `a` in [0.25, 1.1] (small jobs gain from slicing, large ones do
 * not) and `b` in [0, 0.5] (memory-bound share); it needs a share in [0, 0.6] of the GPU's memory.
 */
export function randomProblem(options: RandomProblemOptions): PackingProblem {
  const rnd = createRandom(options.seed);
  const gpus = Array.from({ length: options.gpus }, () => options.models[Math.floor(rnd() * options.models.length)] ?? options.models[0]);
  const models = [...new Set(gpus.filter((g): g is GpuModel => g !== undefined))];
  const jobs: PackingJob[] = Array.from({ length: options.jobs }, (_, j) => {
    const a = 0.25 + 0.85 * rnd();
    const b = 0.5 * rnd();
    const memoryShare = rnd() < 0.4 ? 0 : 0.6 * rnd();
    const weight = options.weighted ? 1 + Math.floor(rnd() * 3) : 1;
    const speeds: Record<string, Record<string, number>> = {};
    for (const model of models) {
      const bySlot: Record<string, number> = { [FULL_GPU]: 1 };
      for (const p of model.giProfiles) {
        const c = p.computeSlices / model.computeSlices;
        const m = p.memorySlices / model.memorySlices;
        bySlot[p.name] = m + 1e-9 < memoryShare ? 0 : Math.min(1, (c ** (1 - b) * m ** b) ** a);
      }
      speeds[model.name] = bySlot;
    }
    return { name: `job${j}`, weight, speeds };
  });
  return { gpus: gpus.filter((g): g is GpuModel => g !== undefined), jobs, ...(options.placeAll ? { placeAll: true } : {}) };
}
