import { durationText } from '../sched/duration-text.js';
import type { Priority } from '../sched/types.js';
import type { SimMetrics, SimulationResult } from './types.js';

/** Where a metrics table is shown: `migpool simulate`'s terminal table, or the HTML report. */
export type MetricsView = 'terminal' | 'report';

/**
 * One column of a metrics table, in both views: its head in the terminal (`AVG JCT`; absent: the
 * terminal leaves it out), its title in the report (`avg JCT`; absent: the report leaves it out),
 * its cell, and the terminal's cell where that differs.
 */
interface MetricColumn {
  readonly head?: string;
  readonly title?: string;
  readonly cell: (m: SimMetrics) => string;
  readonly terminalCell?: (m: SimMetrics) => string;
}

/**
 * The columns of a policy's (or one priority's) figures. The terminal is narrower: it shows
 * completed over jobs in one column, throughput to 2 decimals, and no reconfigurations (the
 * policies table above it has them); the report has a column each.
 */
const COLUMNS: readonly MetricColumn[] = [
  { title: 'jobs', cell: (m) => String(m.jobs) },
  { head: 'COMPLETED', title: 'completed', cell: (m) => String(m.completed), terminalCell: (m) => `${m.completed}/${m.jobs}` },
  { head: 'MAKESPAN', title: 'makespan', cell: (m) => durationText(m.makespanSeconds) },
  { head: 'AVG JCT', title: 'avg JCT', cell: (m) => durationText(m.avgJctSeconds) },
  { head: 'P50 JCT', title: 'p50 JCT', cell: (m) => durationText(m.p50JctSeconds) },
  { head: 'P95 JCT', title: 'p95 JCT', cell: (m) => durationText(m.p95JctSeconds) },
  { head: 'P99 JCT', title: 'p99 JCT', cell: (m) => durationText(m.p99JctSeconds) },
  { head: 'AVG QUEUE', title: 'avg queue', cell: (m) => durationText(m.avgQueueSeconds) },
  { head: 'UTIL', title: 'utilisation', cell: (m) => `${(m.utilization * 100).toFixed(1)}%` },
  { head: 'JOBS/H', title: 'jobs/h', cell: (m) => m.throughputJobsPerHour.toFixed(1), terminalCell: (m) => m.throughputJobsPerHour.toFixed(2) },
  { title: 'reconfigurations', cell: (m) => String(m.reconfigurations) },
];

/** The metric columns of one view: their heads, and one row's cells. */
export interface MetricColumns {
  readonly heads: readonly string[];
  cells(m: SimMetrics): string[];
}

/** The metric columns as `view` shows them (the terminal's `simulate` tables, or the HTML report's). */
export function metricColumns(view: MetricsView): MetricColumns {
  const shown = COLUMNS.flatMap((c) => {
    const head = view === 'terminal' ? c.head : c.title;
    return head === undefined ? [] : [{ head, cell: (view === 'terminal' ? c.terminalCell : undefined) ?? c.cell }];
  });
  return { heads: shown.map((c) => c.head), cells: (m) => shown.map((c) => c.cell(m)) };
}

/** One row of a per-priority table: the result it comes from (its index), the priority and its figures. */
export interface PriorityRow {
  readonly index: number;
  readonly priority: Priority;
  readonly metrics: SimMetrics;
}

/** The per-priority rows of results: each result's foreground then background figures, those with jobs. */
export function priorityRows(results: readonly Pick<SimulationResult, 'byPriority'>[]): PriorityRow[] {
  return results.flatMap((r, index) => (['foreground', 'background'] as const).filter((p) => r.byPriority[p].jobs > 0).map((priority) => ({ index, priority, metrics: r.byPriority[priority] })));
}
