import type { GpuModel } from '../mig/types.js';
import { wholeAllowed } from '../sched/check.js';
import { profileAllows } from '../sched/policies/common.js';
import { fitsOn, type SpeedTable } from '../sched/context.js';
import type { JobSpec, ScalingModel } from '../sched/types.js';

/**
 * How a run is judged, beside the classic JCT figures: slowdowns (how much longer than alone each
 * job took), the big jobs' tail, preemptions, and offline lower bounds that no policy can beat.
 */

/** Nearest-rank percentile of sorted values (0 for none). */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1] as number;
}

/** Slowdown percentiles: JCT over the job's run time alone on the resource it asked for. */
export interface SlowdownMetrics {
  readonly p50: number;
  readonly p95: number;
  readonly p99: number;
}

/** Jobs of BIG_JOB_GPUS GPUs or more: the tail a policy may starve. */
export interface BigJobMetrics {
  readonly count: number;
  readonly completed: number;
  readonly avgJctSeconds: number;
  readonly p99JctSeconds: number;
}

/** Preemptions over a run. */
export interface PreemptionMetrics {
  readonly total: number;
  readonly maxPerJob: number;
}

/**
 * Offline lower bounds of a trace on a fleet: what no policy can beat. Taken over the jobs that
 * can ever run there (a job asking for more GPUs than the fleet has, or than its user's quota, or
 * for memory no GPU of the fleet holds, completes under no policy and is left out, as the JCTs
 * and the makespan leave it out).
 */
export interface Bounds {
  /** The mean of each job's best run time (alone, on the fastest resource, no waiting). */
  readonly avgJctSeconds: number;
  /**
   * The larger of the capacity bound (all jobs' least compute-slice-seconds over the fleet's
   * slices) and the latest arrival plus best run time, from the start of the trace.
   */
  readonly makespanSeconds: number;
  /** Jobs of the trace the bounds leave out: no policy can ever run them on this fleet. */
  readonly neverRun: number;
}

/** Jobs asking for at least this many GPUs count as big. */
export const BIG_JOB_GPUS = 4;

/** What the judging needs of a job. */
export interface JudgedJob {
  readonly spec: JobSpec;
  readonly work: number;
}

/** The first model of the fleet offering `profile`, or undefined. */
function modelWith(models: readonly GpuModel[], profile: string): GpuModel | undefined {
  return models.find((m) => m.giProfiles.some((p) => p.name === profile));
}

/**
 * A job's speed alone on the resource it asked for: its profile's (first model offering it), a
 * strong-scaled job's data-parallel speed on its GPUs, else 1 (whole GPUs).
 */
export function askedSpeed(job: JobSpec, models: readonly GpuModel[], speeds: SpeedTable, scaling?: ScalingModel): number {
  if (job.profile !== null && job.gpus === 1) {
    const m = modelWith(models, job.profile);
    if (m) return speeds.relative(job.workload, m, 'mig', job.profile);
  }
  if (job.strongScaling && scaling) return scaling.run(job, job.gpus, 'data-parallel').soloSpeed;
  return 1;
}

/** A job's best speed anywhere on the fleet (whole GPUs are the fastest a single GPU runs; strong-scaled jobs: the better plan). */
function bestSpeed(job: JobSpec, speeds: SpeedTable, models: readonly GpuModel[], scaling?: ScalingModel): number {
  if (job.strongScaling && scaling) {
    try {
      return Math.max(scaling.run(job, job.gpus, 'data-parallel').soloSpeed, scaling.run(job, job.gpus, 'burst').soloSpeed);
    } catch {
      return 1;
    }
  }
  if (!wholeAllowed(job) && job.profile !== null) {
    const m = modelWith(models, job.profile);
    return m ? speeds.relative(job.workload, m, 'mig', job.profile) : 1;
  }
  return 1;
}

/**
 * The least compute-slice-seconds a job needs on a model: the cheapest of a whole GPU (all its
 * slices for the whole run), a MIG instance it may use, or a share of a time-sliced or MPS GPU
 * (N = 2..7 jobs), by the performance model's speeds.
 */
function leastSliceSeconds(job: JobSpec, work: number, model: GpuModel, speeds: SpeedTable, scaling?: ScalingModel): number {
  const whole = model.computeSlices * work;
  if (job.gpus > 1) return job.gpus * whole / bestSpeed(job, speeds, [model], scaling);
  let best = wholeAllowed(job) ? whole : Number.POSITIVE_INFINITY;
  const tryCost = (f: () => number): void => {
    try {
      const c = f();
      if (Number.isFinite(c) && c > 0 && c < best) best = c;
    } catch {
      // The model has no speed there: not a candidate.
    }
  };
  for (const p of model.giProfiles) {
    if (!profileAllows(job, p.name, model) || !fitsOn(job, { kind: 'instance', model, profile: p.name })) continue;
    tryCost(() => (p.computeSlices * work) / speeds.relative(job.workload, model, 'mig', p.name));
  }
  if (wholeAllowed(job)) {
    for (const kind of ['timeslice', 'mps'] as const) {
      for (let n = 2; n <= 7; n++) {
        if (!fitsOn(job, { kind, model, jobs: n })) break;
        tryCost(() => (model.computeSlices / n) * work / speeds.relative(job.workload, model, kind, n));
      }
    }
  }
  return Number.isFinite(best) ? best : whole;
}

/** Offline lower bounds of a trace on a fleet (see Bounds). */
export function lowerBounds(all: readonly JudgedJob[], fleet: readonly GpuModel[], speeds: SpeedTable, startTime: number, scaling?: ScalingModel, everRuns: (job: JobSpec) => boolean = () => true): Bounds {
  const jobs = all.filter((j) => everRuns(j.spec));
  const neverRun = all.length - jobs.length;
  if (jobs.length === 0 || fleet.length === 0) return { avgJctSeconds: 0, makespanSeconds: 0, neverRun };
  const models = [...new Map(fleet.map((m) => [m.name, m])).values()];
  const totalSlices = fleet.reduce((s, m) => s + m.computeSlices, 0);
  let sumBest = 0;
  let lastEnd = startTime;
  let sliceSeconds = 0;
  for (const j of jobs) {
    const best = j.work / bestSpeed(j.spec, speeds, models, scaling);
    sumBest += best;
    lastEnd = Math.max(lastEnd, j.spec.arrival + best);
    let least = Number.POSITIVE_INFINITY;
    for (const m of models) least = Math.min(least, leastSliceSeconds(j.spec, j.work, m, speeds, scaling));
    sliceSeconds += least;
  }
  const capacityEnd = startTime + sliceSeconds / totalSlices;
  return { avgJctSeconds: sumBest / jobs.length, makespanSeconds: Math.max(capacityEnd, lastEnd) - startTime, neverRun };
}

/** Slowdown percentiles of completed jobs (jct and alone-time pairs). */
export function slowdownMetrics(slowdowns: readonly number[]): SlowdownMetrics {
  const sorted = [...slowdowns].sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p95: percentile(sorted, 95), p99: percentile(sorted, 99) };
}

/** Big-job figures from (gpus, jct or null when not completed) pairs. */
export function bigJobMetrics(jobs: readonly { readonly gpus: number; readonly jct: number | null }[]): BigJobMetrics {
  const big = jobs.filter((j) => j.gpus >= BIG_JOB_GPUS);
  const jcts = big.flatMap((j) => (j.jct === null ? [] : [j.jct])).sort((a, b) => a - b);
  return {
    count: big.length,
    completed: jcts.length,
    avgJctSeconds: jcts.length > 0 ? jcts.reduce((s, x) => s + x, 0) / jcts.length : 0,
    p99JctSeconds: percentile(jcts, 99),
  };
}
