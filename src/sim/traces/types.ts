import type { Workload } from '../../perf/types.js';
import { badInput } from '../../errors.js';
import type { TraceJob } from '../types.js';
import type { WorkloadMix } from './mix.js';

/** What every trace parser takes besides the text. */
export interface TraceOptions {
  /** Seeded random source in [0, 1) for the workload draws (see src/random.ts). */
  readonly random: () => number;
  /** Workloads of single-GPU jobs; default DEFAULT_MIX_SPEC. */
  readonly mix?: WorkloadMix;
  /** Keep only the first `limit` jobs by arrival (after skipping unusable rows); default all. */
  readonly limit?: number;
  /** Name of the file, for error messages. */
  readonly file?: string;
  /** Workloads besides the built-in ones that the trace's rows may name (`simulate --workload FILE.yaml`). */
  readonly workloads?: readonly Workload[];
}

/** Rows a parser left out, and why. */
export interface SkippedRows {
  readonly reason: string;
  readonly count: number;
}

/** Jobs read from a trace, in arrival order, with what was left out. */
export interface ParsedTrace {
  readonly jobs: TraceJob[];
  readonly skipped: readonly SkippedRows[];
}

/** Counts skipped rows by reason, in the order reasons first occur. */
export class SkipCounter {
  private readonly counts = new Map<string, number>();

  add(reason: string): void {
    this.counts.set(reason, (this.counts.get(reason) ?? 0) + 1);
  }

  list(): SkippedRows[] {
    return [...this.counts].map(([reason, count]) => ({ reason, count }));
  }
}

/** Checks a `limit` option: a positive whole number or undefined. */
export function checkedLimit(limit: number | undefined): number {
  if (limit === undefined) return Number.POSITIVE_INFINITY;
  if (!Number.isInteger(limit) || limit < 1) throw badInput(`the job limit must be a positive whole number, got ${limit}`);
  return limit;
}
