import { parseFleet } from '../src/sim/fleet.js';
import { DEFAULT_MULTI_GPU_SIZES, meanJobGpuSeconds } from '../src/sim/traces/index.js';

/** One trace of issue 17's matrix: what `migpool simulate --trace ... --fleet ... [--limit] [--arrival-rate]` it stands for. */
export interface MatrixTrace {
  readonly key: string;
  readonly trace: 'philly' | 'alibaba' | 'synthetic' | 'deeppool';
  readonly fleet: string;
  readonly limit?: number;
  readonly arrivalRate?: number;
  /** Words for the report (how the rate was chosen, ...). */
  readonly note: string;
}

/** Issue 17: "synthetic at overload (arrival rate 1.5x the fleet)". */
export const SYNTHETIC_OVERLOAD = 1.5;
const SYNTHETIC_FLEET = '16xA100-SXM4-40GB';
/** Jobs of the synthetic and deeppool traces: the simulate command's default (DEFAULT_SYNTHETIC_JOBS). */
const GENERATED_JOBS = 1000;

/**
 * The arrival rate (jobs per hour) at which the synthetic trace brings `overload` times a fleet's
 * whole-GPU capacity: the fleet's GPU-hours per hour over the mean GPU-seconds of a job of the
 * synthetic generator (meanJobGpuSeconds: the lognormal mean of its durations, median 1800 s and
 * sigma 1.5, times the mean GPUs per job, 7% multi-GPU jobs of 2, 4 or 8 GPUs). This is the rate
 * `migpool simulate --trace synthetic` takes by default (overload 1), times `overload`. It counts
 * capacity in whole GPUs: MIG packing of small jobs can do more work than that.
 */
export function syntheticOverloadRate(fleetGpus: number, overload: number): number {
  const sizes = DEFAULT_MULTI_GPU_SIZES.filter((n) => n <= fleetGpus);
  const perJob = meanJobGpuSeconds(sizes.length > 0 ? { multiGpuSizes: sizes } : { multiGpuShare: 0 });
  return (overload * fleetGpus * 3600) / perJob;
}

/**
 * The traces of issue 17's targets, the cheapest first: the runner writes its files after every run,
 * so a matrix cut short still holds whole tables for the traces it got through.
 */
export function matrixTraces(): MatrixTrace[] {
  const syntheticGpus = parseFleet(SYNTHETIC_FLEET).gpus.length;
  const rate = syntheticOverloadRate(syntheticGpus, SYNTHETIC_OVERLOAD);
  const capacity = syntheticOverloadRate(syntheticGpus, 1);
  return [
    {
      key: 'synthetic',
      trace: 'synthetic',
      fleet: SYNTHETIC_FLEET,
      limit: GENERATED_JOBS,
      arrivalRate: rate,
      note: `synthetic, ${GENERATED_JOBS} jobs on ${SYNTHETIC_FLEET} at ${rate.toFixed(2)} arrivals/h = ${SYNTHETIC_OVERLOAD}x the fleet's whole-GPU capacity of ${capacity.toFixed(2)} jobs/h (${syntheticGpus} GPUs x 3600 s over the generator's mean ${((syntheticGpus * 3600) / capacity).toFixed(0)} GPU-seconds per job); 12.5/h would be ${(12.5 / capacity).toFixed(3)}x`,
    },
    { key: 'deeppool', trace: 'deeppool', fleet: SYNTHETIC_FLEET, limit: GENERATED_JOBS, note: `deeppool, ${GENERATED_JOBS} jobs on ${SYNTHETIC_FLEET} at the default rate (one fleet's whole-GPU work per hour)` },
    { key: 'alibaba64', trace: 'alibaba', fleet: '64xA100-SXM4-40GB', note: "Alibaba's GPU-sharing trace (openb_pod_list_default) on 64 A100-40GB" },
    { key: 'alibaba8', trace: 'alibaba', fleet: '8xA100-SXM4-40GB', note: "Alibaba's GPU-sharing trace (openb_pod_list_default) on 8 A100-40GB" },
    { key: 'philly20k', trace: 'philly', fleet: '256xA100-SXM4-40GB', limit: 20_000, note: 'Philly, the first 20,000 jobs, on 256 A100-40GB' },
    { key: 'philly82k', trace: 'philly', fleet: '2048xA100-SXM4-40GB', note: 'Philly, all jobs, on 2,048 A100-40GB' },
  ];
}

/** The policies of the comparison by default (miso is left out: over 10 minutes a run on Philly here). */
export const DEFAULT_POLICIES = ['exclusive', 'tiresias', 'gavel', 'migpool'] as const;
export const DEFAULT_INFO_MODES = ['noisy', 'none'] as const;
export const DEFAULT_SEEDS = 3;
export const DEFAULT_PREEMPTION_COST = 60;

/**
 * Policies that never read a job's estimate (tiresias.ts says so of itself; gavel's rounds share
 * GPUs by throughput alone; README's table gives both the same rows under exact, noisy and none):
 * run once per seed and reported under every information model, unless `--rerun-blind`.
 */
export const INFO_BLIND_POLICIES: ReadonlySet<string> = new Set(['tiresias', 'gavel']);
