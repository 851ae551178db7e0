/** Builds a packing problem from GPU models and workloads, with speeds from the performance model. */
import type { GpuModel } from '../mig/types.js';
import { predict } from '../perf/model.js';
import type { Workload } from '../perf/types.js';
import { FULL_GPU, type PackingJob, type PackingProblem } from './types.js';

/** A job given by its workload. */
export interface PackingWorkloadJob {
  readonly workload: Workload;
  /** Default 1. */
  readonly weight?: number;
  /** Default: the workload's name. */
  readonly name?: string;
}

/**
 * Each job's normalised throughput on every profile of every model in `gpus` and on each whole GPU:
 * predicted samples/s there over predicted samples/s on the whole GPU with MIG off (0 where it does
 * not fit in memory; all 0 when it fits nowhere on that model).
 */
export function buildProblem(gpus: readonly GpuModel[], jobs: readonly PackingWorkloadJob[], options: { placeAll?: boolean } = {}): PackingProblem {
  const models = [...new Map(gpus.map((m) => [m.name, m])).values()];
  const cache = new Map<string, Record<string, Record<string, number>>>();
  const speedsOf = (workload: Workload) => {
    const hit = cache.get(workload.name);
    if (hit) return hit;
    const speeds: Record<string, Record<string, number>> = {};
    for (const gpu of models) {
      const full = predict(workload, { kind: 'full', gpu }).samplesPerSecond;
      const bySlot: Record<string, number> = { [FULL_GPU]: full ? 1 : 0 };
      for (const p of gpu.giProfiles) {
        const s = predict(workload, { kind: 'mig', gpu, profile: p.name }).samplesPerSecond;
        bySlot[p.name] = full && s ? s / full : 0;
      }
      speeds[gpu.name] = bySlot;
    }
    cache.set(workload.name, speeds);
    return speeds;
  };
  const packingJobs: PackingJob[] = jobs.map((j) => ({ name: j.name ?? j.workload.name, weight: j.weight ?? 1, speeds: speedsOf(j.workload) }));
  return { gpus, jobs: packingJobs, ...(options.placeAll ? { placeAll: true } : {}) };
}
