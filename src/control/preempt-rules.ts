import type { JobRecord } from '../store/types.js';

/**
 * The service's side of the preemption contract: whatever a policy decides, a job is stopped to
 * be moved only when its spec says it may be (`preemptible: true`), after it has run a while, a
 * bounded number of times, and never for a GPU whose re-partitions keep failing.
 */

/**
 * Seconds a job runs before it may be preempted: enough for a training job to start (imports,
 * data loading) and write a first checkpoint, so that a move never costs all its work. The
 * issue's figure (60 s).
 */
export const MIN_RUN_BEFORE_PREEMPT_SECONDS = 60;
/** Preemptions one job may undergo; then it runs to its end where it is (no move loops). */
export const MAX_PREEMPTIONS_PER_JOB = 3;
/** First back-off after a failed re-partition of a GPU, doubled per failure in a row. */
export const REPARTITION_BACKOFF_BASE_MS = 5_000;
/** Longest back-off between re-partition tries of one GPU: 10 minutes. */
export const REPARTITION_BACKOFF_MAX_MS = 600_000;

/**
 * Why the service refuses to preempt `rec` now, or null when it may. `gpuBackoffMs`: time left
 * in the back-off of a GPU the job runs on (null when none backs off).
 */
export function preemptRefusal(
  rec: Pick<JobRecord, 'startedAt' | 'preemptions'>,
  preemptible: boolean,
  nowMs: number,
  gpuBackoffMs: number | null,
  minRunSeconds = MIN_RUN_BEFORE_PREEMPT_SECONDS,
): string | null {
  if (!preemptible) return 'its spec does not allow it (set preemptible: true for a job that checkpoints)';
  const ran = (nowMs - (rec.startedAt ?? nowMs)) / 1000;
  if (ran < minRunSeconds) return `it has run ${Math.floor(ran)} s, less than the ${minRunSeconds} s before any preemption`;
  const n = rec.preemptions ?? 0;
  if (n >= MAX_PREEMPTIONS_PER_JOB) return `it was preempted ${n} times already (at most ${MAX_PREEMPTIONS_PER_JOB})`;
  if (gpuBackoffMs !== null) return `re-partitions of its GPU are failing; none is tried for ${Math.ceil(gpuBackoffMs / 1000)} s`;
  return null;
}

/** Milliseconds a GPU waits after its `failures`-th failed re-partition in a row: 5 s, 10 s, 20 s, ... up to 10 min. */
export function repartitionBackoffMs(failures: number): number {
  return Math.min(REPARTITION_BACKOFF_MAX_MS, REPARTITION_BACKOFF_BASE_MS * 2 ** Math.max(0, Math.min(30, failures - 1)));
}

/**
 * How long after a failed re-partition's back-off has ended another failure of the same GPU still
 * counts as one more in a row: the longest back-off (10 minutes). A re-partition that succeeds
 * meanwhile does not end the run: a GPU that can go back to MIG off but not carve its slices
 * (a fault in GPU instance creation) succeeds at every other try, and its back-off would
 * otherwise never grow past the first 5 s.
 */
export const REPARTITION_STREAK_MS = REPARTITION_BACKOFF_MAX_MS;

/**
 * The failure in a row that a failed re-partition at `nowMs` is, given the GPU's previous one
 * (its number in the run and when its back-off ended), or undefined when it has none.
 */
export function failuresInARow(previous: { readonly count: number; readonly until: number } | undefined, nowMs: number): number {
  return previous !== undefined && nowMs - previous.until <= REPARTITION_STREAK_MS ? previous.count + 1 : 1;
}
