import { durationText } from '../sched/duration-text.js';
import type { UserMetrics } from './user-metrics.js';

/** One policy's users, as the per-user table reads them. */
export interface PolicyUsers {
  /** The policy's name as the run names it. */
  readonly policy: string;
  /** Its run's figures per user (absent or empty: a run without users, no rows). */
  readonly byUser?: readonly UserMetrics[] | undefined;
}

/** The per-user table: a head per column, for the terminal (`QUOTA`) and for the HTML report (`quota (GPUs)`), and the cells. */
export interface UsersTable {
  /** Column heads as `migpool simulate` prints them. */
  readonly heads: readonly string[];
  /** The same columns' heads as the HTML report writes them. */
  readonly titles: readonly string[];
  /** One row per policy and user, policies in the given order, users in order of first job. */
  readonly rows: readonly (readonly string[])[];
}

const pct = (x: number): string => `${(x * 100).toFixed(1)}%`;

const COLUMNS: readonly { readonly head: string; readonly title: string; readonly cell: (u: UserMetrics) => string }[] = [
  { head: 'USER', title: 'user', cell: (u) => u.user },
  { head: 'WEIGHT', title: 'weight', cell: (u) => String(u.weight) },
  { head: 'QUOTA', title: 'quota (GPUs)', cell: (u) => (u.quotaGpus === null ? '-' : String(u.quotaGpus)) },
  { head: 'COMPLETED', title: 'completed', cell: (u) => `${u.completed}/${u.jobs}` },
  { head: 'SHARE', title: 'share', cell: (u) => pct(u.contendedShare) },
  { head: 'WEIGHT SHARE', title: 'weight share', cell: (u) => pct(u.weightShare) },
  { head: 'AVG GPUS', title: 'avg GPUs', cell: (u) => u.contendedGpus.toFixed(2) },
  { head: 'PEAK GPUS', title: 'peak GPUs', cell: (u) => u.peakGpus.toFixed(2) },
  { head: 'AVG SLOW', title: 'avg slowdown', cell: (u) => `${u.avgSlowdown.toFixed(2)}x` },
  { head: 'P50 SLOW', title: 'p50 slowdown', cell: (u) => `${u.p50Slowdown.toFixed(2)}x` },
  { head: 'AVG JCT', title: 'avg JCT', cell: (u) => durationText(u.avgJctSeconds) },
];

/**
 * Each user's share of the pool under contention against their weight's, and their slowdowns:
 * the table that `migpool simulate` prints and its HTML report shows, one row per policy and user.
 */
export function usersTable(policies: readonly PolicyUsers[]): UsersTable {
  return {
    heads: ['POLICY', ...COLUMNS.map((c) => c.head)],
    titles: ['policy', ...COLUMNS.map((c) => c.title)],
    rows: policies.flatMap((p) => (p.byUser ?? []).map((u) => [p.policy, ...COLUMNS.map((c) => c.cell(u))])),
  };
}
