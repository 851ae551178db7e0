import { badInput } from '../../errors.js';
import { resolveWorkload } from '../../perf/workloads.js';
import type { TraceJob } from '../types.js';
import { DEFAULT_MIX_SPEC, drawWorkload, parseMix, type WorkloadMix } from './mix.js';
import { DEFAULT_DURATIONS, type LognormalDurations } from './synthetic.js';

/** Models of the foreground jobs of the `deeppool` trace: the three of DeepPool's comparison. */
export const DEEPPOOL_TRACE_MODELS: readonly string[] = ['vgg16', 'wrn101-2', 'inception-v3'];

/** Default global batch of a foreground job (raised to its GPU count when smaller). */
export const DEEPPOOL_TRACE_GLOBAL_BATCH = 1024;

/** Default share of foreground jobs. */
export const DEEPPOOL_TRACE_FOREGROUND_SHARE = 0.1;

/** What deepPoolTrace generates. */
export interface DeepPoolTraceOptions {
  readonly jobs: number;
  /** GPUs of the fleet: foreground jobs ask for a power of two from 8 (or 2 on small fleets) up to it. */
  readonly fleetGpus: number;
  /** Poisson arrivals: mean jobs per hour. */
  readonly arrivalRatePerHour: number;
  /** Share of foreground jobs; default DEEPPOOL_TRACE_FOREGROUND_SHARE. */
  readonly foregroundShare?: number;
  /** Models of foreground jobs, drawn uniformly; default DEEPPOOL_TRACE_MODELS. */
  readonly models?: readonly string[];
  /** Global batch of foreground jobs; default DEEPPOOL_TRACE_GLOBAL_BATCH. */
  readonly globalBatch?: number;
  /**
   * Durations, lognormal (DEFAULT_DURATIONS by default): a background job's work (seconds alone on
   * one GPU); a foreground job's work is its duration times its GPUs (as if it scaled perfectly;
   * it runs longer, at its plan's speed).
   */
  readonly durations?: LognormalDurations;
  /** Workloads of background jobs; default DEFAULT_MIX_SPEC. */
  readonly mix?: WorkloadMix;
  readonly random: () => number;
}

/**
 * A seeded trace for DeepPool's comparison (`migpool simulate --trace deeppool`): strong-scaled
 * foreground jobs (`strongScaling` {model, globalBatch}, workload `large`) on many GPUs, and a
 * stream of single-GPU background jobs from the mix. Each job takes exactly seven numbers from
 * `random` (gap, two for the duration, foreground, size, model, workload). Ids `dp-N`, N from 1.
 *
 * @throws MigpoolError `BAD_INPUT` for a non-positive count, rate or fleet, or a share outside [0, 1]
 */
export function deepPoolTrace(options: DeepPoolTraceOptions): TraceJob[] {
  const { jobs, fleetGpus, arrivalRatePerHour, random } = options;
  if (!Number.isInteger(jobs) || jobs < 1) throw badInput(`the deeppool trace needs a positive whole number of jobs, got ${jobs}`);
  if (!Number.isInteger(fleetGpus) || fleetGpus < 1) throw badInput(`the deeppool trace needs a fleet of at least one GPU, got ${fleetGpus}`);
  if (!Number.isFinite(arrivalRatePerHour) || arrivalRatePerHour <= 0) throw badInput(`the arrival rate must be a positive number of jobs per hour, got ${arrivalRatePerHour}`);
  const share = options.foregroundShare ?? DEEPPOOL_TRACE_FOREGROUND_SHARE;
  if (!Number.isFinite(share) || share < 0 || share > 1) throw badInput(`the foreground share must be between 0 and 1, got ${share}`);
  const models = options.models ?? DEEPPOOL_TRACE_MODELS;
  if (models.length === 0) throw badInput('the deeppool trace needs at least one foreground model');
  const batch = options.globalBatch ?? DEEPPOOL_TRACE_GLOBAL_BATCH;
  if (!Number.isInteger(batch) || batch < 1) throw badInput(`the global batch must be a positive whole number, got ${batch}`);
  const d = options.durations ?? DEFAULT_DURATIONS;
  const mix = options.mix ?? parseMix(DEFAULT_MIX_SPEC);
  const large = resolveWorkload('large');
  const sizes: number[] = [];
  for (let g = fleetGpus >= 8 ? 8 : 2; g <= fleetGpus; g *= 2) sizes.push(g);
  const meanGap = 3600 / arrivalRatePerHour;
  const out: TraceJob[] = [];
  let t = 0;
  for (let i = 0; i < jobs; i++) {
    const [uGap, uN1, uN2, uFg, uSize, uModel, uWorkload] = Array.from({ length: 7 }, () => random()) as [number, number, number, number, number, number, number];
    if (i > 0) t += -Math.log(1 - uGap) * meanGap;
    const normal = Math.sqrt(-2 * Math.log(1 - uN1)) * Math.cos(2 * Math.PI * uN2);
    const seconds = Math.min(d.maxSeconds, Math.max(d.minSeconds, d.medianSeconds * Math.exp(d.sigma * normal)));
    const id = `dp-${i + 1}`;
    if (uFg < share && sizes.length > 0) {
      const gpus = sizes[Math.min(sizes.length - 1, Math.floor(uSize * sizes.length))] as number;
      const model = models[Math.min(models.length - 1, Math.floor(uModel * models.length))] as string;
      out.push({ id, workload: large, gpus, priority: 'foreground', arrival: t, work: seconds * gpus, memoryGiB: null, profile: null, strongScaling: { model, globalBatch: Math.max(batch, gpus) } });
    } else {
      out.push({ id, workload: drawWorkload(mix, () => uWorkload), gpus: 1, priority: 'background', arrival: t, work: seconds, memoryGiB: null, profile: null });
    }
  }
  return out;
}

/** Mean GPU-seconds of work a job of the trace brings (clamping ignored), for an arrival rate that loads a fleet. */
export function meanDeepPoolJobGpuSeconds(fleetGpus: number, foregroundShare = DEEPPOOL_TRACE_FOREGROUND_SHARE, durations: LognormalDurations = DEFAULT_DURATIONS): number {
  const sizes: number[] = [];
  for (let g = fleetGpus >= 8 ? 8 : 2; g <= fleetGpus; g *= 2) sizes.push(g);
  const meanSize = sizes.length === 0 ? 1 : sizes.reduce((a, b) => a + b, 0) / sizes.length;
  const share = sizes.length === 0 ? 0 : foregroundShare;
  return durations.medianSeconds * Math.exp((durations.sigma * durations.sigma) / 2) * (1 - share + share * meanSize);
}
