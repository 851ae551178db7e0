import { badInput } from '../../errors.js';
import { resolveWorkload } from '../../perf/workloads.js';
import type { TraceJob } from '../types.js';
import { DEFAULT_MIX_SPEC, drawWorkload, parseMix, type WorkloadMix } from './mix.js';

/** Job durations: lognormal (seconds alone on one whole GPU), clamped to [minSeconds, maxSeconds]. */
export interface LognormalDurations {
  readonly medianSeconds: number;
  /** Standard deviation of the log of the duration. */
  readonly sigma: number;
  readonly minSeconds: number;
  readonly maxSeconds: number;
}

/**
 * Default durations: median 30 minutes, sigma 1.5 (mean about 1.5 hours, p90 about 3.8 hours),
 * clamped to [1 minute, 7 days]. Philly's single-GPU jobs are shorter and more spread (median 19
 * minutes, p90 3.1 hours, sigma about 1.8) but a tenth of them run under a minute.
 */
export const DEFAULT_DURATIONS: LognormalDurations = { medianSeconds: 1800, sigma: 1.5, minSeconds: 60, maxSeconds: 7 * 86_400 };

/** Default share of multi-GPU jobs: Philly's (5,620 of its 82,247 jobs ask for 2 GPUs or more). */
export const DEFAULT_MULTI_GPU_SHARE = 0.07;

/** Default sizes of multi-GPU jobs, drawn uniformly: Philly's common ones. */
export const DEFAULT_MULTI_GPU_SIZES: readonly number[] = [2, 4, 8];

/** What syntheticTrace generates. */
export interface SyntheticOptions {
  readonly jobs: number;
  /** Poisson arrivals: mean jobs per hour (exponential gaps). */
  readonly arrivalRatePerHour: number;
  /** Workloads of single-GPU jobs; default DEFAULT_MIX_SPEC. Multi-GPU jobs run `large`. */
  readonly mix?: WorkloadMix;
  /** Default DEFAULT_DURATIONS. */
  readonly durations?: LognormalDurations;
  /** Share of jobs that ask for several whole GPUs; default DEFAULT_MULTI_GPU_SHARE. */
  readonly multiGpuShare?: number;
  /** Sizes of multi-GPU jobs, drawn uniformly; default DEFAULT_MULTI_GPU_SIZES. */
  readonly multiGpuSizes?: readonly number[];
  /** Share of jobs in the background; default 0. */
  readonly backgroundShare?: number;
  /** Seeded random source in [0, 1). */
  readonly random: () => number;
}

function share(value: number, name: string): number {
  if (!Number.isFinite(value) || value < 0 || value > 1) throw badInput(`${name} must be between 0 and 1, got ${value}`);
  return value;
}

/** Mean GPU-seconds of work a synthetic job brings (clamping ignored): for an arrival rate that loads a fleet. */
export function meanJobGpuSeconds(options: Pick<SyntheticOptions, 'durations' | 'multiGpuShare' | 'multiGpuSizes'>): number {
  const d = options.durations ?? DEFAULT_DURATIONS;
  const m = options.multiGpuShare ?? DEFAULT_MULTI_GPU_SHARE;
  const sizes = options.multiGpuSizes ?? DEFAULT_MULTI_GPU_SIZES;
  const meanSize = sizes.length === 0 ? 1 : sizes.reduce((a, b) => a + b, 0) / sizes.length;
  return d.medianSeconds * Math.exp((d.sigma * d.sigma) / 2) * ((1 - m) + m * meanSize);
}

/**
 * A seeded synthetic trace: Poisson arrivals at `arrivalRatePerHour`, lognormal durations, a share
 * of multi-GPU jobs (whole GPUs, workload `large`), a share of background jobs, and single-GPU jobs
 * drawn from `mix`. Each job takes exactly seven numbers from `random` (gap, two for the
 * duration's normal, multi-GPU, size, background, workload), so changing one share leaves the
 * other attributes of every job unchanged. Ids are `syn-N`, N from 1.
 *
 * @throws MigpoolError `BAD_INPUT` for a non-positive job count or rate, or a share outside [0, 1]
 */
export function syntheticTrace(options: SyntheticOptions): TraceJob[] {
  const { jobs, arrivalRatePerHour, random } = options;
  if (!Number.isInteger(jobs) || jobs < 1) throw badInput(`the synthetic trace needs a positive whole number of jobs, got ${jobs}`);
  if (!Number.isFinite(arrivalRatePerHour) || arrivalRatePerHour <= 0) throw badInput(`the arrival rate must be a positive number of jobs per hour, got ${arrivalRatePerHour}`);
  const d = options.durations ?? DEFAULT_DURATIONS;
  if (!(d.medianSeconds > 0) || !(d.sigma >= 0) || !(d.minSeconds > 0) || !(d.maxSeconds >= d.minSeconds)) {
    throw badInput(`bad duration distribution: median ${d.medianSeconds} s, sigma ${d.sigma}, clamp [${d.minSeconds}, ${d.maxSeconds}] s`);
  }
  const multi = share(options.multiGpuShare ?? DEFAULT_MULTI_GPU_SHARE, 'the multi-GPU share');
  const background = share(options.backgroundShare ?? 0, 'the background share');
  const sizes = options.multiGpuSizes ?? DEFAULT_MULTI_GPU_SIZES;
  if (sizes.length === 0 || sizes.some((s) => !Number.isInteger(s) || s < 2)) throw badInput(`multi-GPU sizes must be whole numbers of at least 2, got ${sizes.join(', ')}`);
  const mix = options.mix ?? parseMix(DEFAULT_MIX_SPEC);
  const large = resolveWorkload('large');
  const meanGapSeconds = 3600 / arrivalRatePerHour;
  const out: TraceJob[] = [];
  let t = 0;
  for (let i = 0; i < jobs; i++) {
    const [uGap, uN1, uN2, uMulti, uSize, uBackground, uWorkload] = Array.from({ length: 7 }, () => random()) as [number, number, number, number, number, number, number];
    if (i > 0) t += -Math.log(1 - uGap) * meanGapSeconds;
    const normal = Math.sqrt(-2 * Math.log(1 - uN1)) * Math.cos(2 * Math.PI * uN2);
    const work = Math.min(d.maxSeconds, Math.max(d.minSeconds, d.medianSeconds * Math.exp(d.sigma * normal)));
    const gpus = uMulti < multi ? (sizes[Math.min(sizes.length - 1, Math.floor(uSize * sizes.length))] ?? 2) : 1;
    out.push({
      id: `syn-${i + 1}`,
      workload: gpus === 1 ? drawWorkload(mix, () => uWorkload) : large,
      gpus,
      priority: uBackground < background ? 'background' : 'foreground',
      arrival: t,
      work,
      memoryGiB: null,
      profile: null,
    });
  }
  return out;
}
