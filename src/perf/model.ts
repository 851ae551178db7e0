import { badInput } from '../errors.js';
import type { GpuModel } from '../mig/types.js';
import { gpuWorkTime, iterationTime } from './curve.js';
import { fitsOn } from './fits.js';
import { effectiveCapacity, resourceShape, type ResourceShape } from './resources.js';
import type { Prediction, Resource, Workload } from './types.js';

/**
 * Time-slicing: N processes on one GPU without MIG or MPS take turns on the whole GPU; one context
 * runs kernels at a time, so their GPU work adds up, while each one's host-side time (Python,
 * kernel launches, data loading) overlaps the others' turns. The curve's latency floor L mixes
 * host time with GPU time of kernels too small to fill the GPU, which time-slicing cannot overlap
 * (MPS can): TIMESLICE_HOST_SHARE of it is taken as host time. One job's iteration is then
 * max(T, N x W, N x (T - h x L), T_N) / (1 - overhead), T its time alone, W the GPU work term of
 * T, T_N its time side by side with 1/N of the GPU (as under MPS, which overlaps more; first principles). Stated defaults, not calibrated (no measurement is at hand): overhead 0.05
 * (plausible 0 to 0.1), host share 0.5 (0: no overlap, the old flat (1 - overhead) / N; 1: all
 * of the floor overlaps). A user's measured `NxTIMESLICE` point (workload YAML `sharing:`)
 * replaces the model for that N on that GPU.
 */
export const TIMESLICE_OVERHEAD = 0.05;
export const TIMESLICE_HOST_SHARE = 0.5;

/**
 * MPS: N processes run kernels side by side on all SMs; each job's GPU work gets 1/N of the GPU's
 * effective capacity while its latency floor overlaps the others' work, and each loses a share of
 * its throughput to contention for the L2 cache and memory bandwidth, which MPS does not
 * partition. The loss grows with the other jobs present: `MPS_CONTENTION x (1 - 1/N)`, none for a
 * job alone (first principles). Stated default, not calibrated: 0 to 0.2 is the range we take as
 * plausible. A user's measured `NxMPS` point (workload YAML `sharing:`) replaces the model.
 */
export const MPS_CONTENTION = 0.1;

function shapeOf(resource: Resource): ResourceShape {
  return resourceShape(resource.gpu, resource.kind === 'mig' ? resource.profile : null);
}

function jobsOf(resource: Resource): number {
  if (resource.kind !== 'timeslice' && resource.kind !== 'mps') return 1;
  if (!Number.isInteger(resource.jobs) || resource.jobs < 1) {
    throw badInput(`${resource.kind} on ${resource.gpu.name}: the number of jobs must be a positive integer, got ${resource.jobs}`);
  }
  return resource.jobs;
}

/**
 * How fast one job of `workload` runs on `resource`: iteration time, samples/s and time per epoch,
 * and whether it fits in memory (a job that does not fit has no speed). For `timeslice` and `mps`
 * the answer is for each of the N jobs; all N must fit in the GPU's memory together.
 */
export function predict(workload: Workload, resource: Resource): Prediction {
  const shape = shapeOf(resource);
  const jobs = jobsOf(resource);
  const caveats = [...shape.caveats];
  const m = workload.curve.memoryBoundShare;
  const full = effectiveCapacity(shape, m);
  const capacity = resource.kind === 'mps' ? full / jobs : full;
  const memoryFit = fitsOn(workload.memoryGiB, resource);
  if (workload.memoryGiB === null) caveats.push(`${workload.name}: memory need unknown, fit unknown`);
  const fits = memoryFit !== false;
  if (!fits) return { fits, memoryFit, iterationMs: null, samplesPerSecond: null, epochSeconds: null, effectiveCapacity: capacity, caveats };
  let ms = iterationTime(workload.curve, workload.batchSize, capacity);
  if (resource.kind === 'timeslice') {
    const busy = Math.max(gpuWorkTime(workload.curve, workload.batchSize, capacity), ms - TIMESLICE_HOST_SHARE * workload.curve.latencyMs);
    // Taking turns never beats running side by side on the same GPU (the MPS bound, without contention).
    const sideBySide = iterationTime(workload.curve, workload.batchSize, capacity / jobs);
    ms = Math.max(ms, jobs * busy, sideBySide) / (1 - TIMESLICE_OVERHEAD);
  }
  if (resource.kind === 'mps') ms = ms / (1 - MPS_CONTENTION * (1 - 1 / jobs));
  if (resource.kind === 'timeslice' || resource.kind === 'mps') {
    const measured = workload.sharing?.find((p) => p.kind === resource.kind && p.jobs === jobs && p.gpu === resource.gpu.name);
    if (measured) ms = measured.iterationMs;
  }
  const samplesPerSecond = (workload.batchSize * 1000) / ms;
  return { fits, memoryFit, iterationMs: ms, samplesPerSecond, epochSeconds: workload.datasetSize / samplesPerSecond, effectiveCapacity: capacity, caveats };
}

/** N identical jobs of a workload on one GPU, and what they do together. */
export interface PackedPrediction {
  readonly jobs: number;
  /** Each job's prediction (they are identical). */
  readonly perJob: Prediction;
  /** Sum over the jobs; null when they do not fit. */
  readonly aggregateSamplesPerSecond: number | null;
}

/**
 * `jobs` copies of `workload`, each on its own MIG instance of `profile` (isolated: no interference
 * between instances is modelled), or on the whole GPU (`profile` null, jobs must be 1), or sharing
 * it by `timeslice` / `mps`.
 */
export function predictPacked(workload: Workload, gpu: GpuModel, how: { profile: string | null } | { sharing: 'timeslice' | 'mps' }, jobs: number): PackedPrediction {
  let resource: Resource;
  if ('sharing' in how) resource = { kind: how.sharing, gpu, jobs };
  else if (how.profile === null) {
    if (jobs !== 1) throw badInput(`a whole ${gpu.name} runs one job; for ${jobs} use MIG instances, time-slicing or MPS`);
    resource = { kind: 'full', gpu };
  } else resource = { kind: 'mig', gpu, profile: how.profile };
  const perJob = predict(workload, resource);
  return { jobs, perJob, aggregateSamplesPerSecond: perJob.samplesPerSecond === null ? null : perJob.samplesPerSecond * jobs };
}
