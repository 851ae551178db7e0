import { durationText } from '../sched/duration-text.js';
import type { Priority } from '../sched/types.js';
import type { PriorityMetrics, SimMetrics, SimulationResult } from './types.js';

/** Where a metrics table is shown: `migpool simulate`'s terminal table, or the HTML report. */
export type MetricsView = 'terminal' | 'report';

/**
 * One column of a metrics table, in both views: its head in the terminal (`AVG JCT`; absent: the
 * terminal leaves it out), its title in the report (`avg JCT`; absent: the report leaves it out),
 * its cell, and the terminal's cell where that differs.
 */
interface MetricColumn<M> {
  readonly head?: string;
  readonly title?: string;
  readonly cell: (m: M) => string;
  readonly terminalCell?: (m: M) => string;
}

/**
 * The columns of a policy's or one priority's figures. The terminal is narrower: it shows
 * completed over jobs in one column and throughput to 2 decimals; the report has a column each.
 */
const COLUMNS: readonly MetricColumn<PriorityMetrics>[] = [
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
];

/**
 * A whole run's columns: those, and its reconfigurations in the report (the terminal's policies
 * table has them in a column of its own). A re-partition belongs to no priority
 * (`PriorityMetrics`), so per-priority tables have no such column.
 */
const RUN_COLUMNS: readonly MetricColumn<SimMetrics>[] = [...COLUMNS, { title: 'reconfigurations', cell: (m) => String(m.reconfigurations) }];

/** The metric columns of one view: their heads, and one row's cells. */
export interface MetricColumns<M> {
  readonly heads: readonly string[];
  cells(m: M): string[];
}

function shownIn<M>(columns: readonly MetricColumn<M>[], view: MetricsView): MetricColumns<M> {
  const shown = columns.flatMap((c) => {
    const head = view === 'terminal' ? c.head : c.title;
    return head === undefined ? [] : [{ head, cell: (view === 'terminal' ? c.terminalCell : undefined) ?? c.cell }];
  });
  return { heads: shown.map((c) => c.head), cells: (m) => shown.map((c) => c.cell(m)) };
}

/** The columns of a whole run's figures as `view` shows them (the terminal's `simulate` tables, or the HTML report's). */
export function metricColumns(view: MetricsView): MetricColumns<SimMetrics> {
  return shownIn(RUN_COLUMNS, view);
}

/** The columns of one priority's figures as `view` shows them: a run's, less its reconfigurations. */
export function priorityMetricColumns(view: MetricsView): MetricColumns<PriorityMetrics> {
  return shownIn(COLUMNS, view);
}

/** One row of a per-priority table: the result it comes from (its index), the priority and its figures. */
export interface PriorityRow {
  readonly index: number;
  readonly priority: Priority;
  readonly metrics: PriorityMetrics;
}

/** The per-priority rows of results: each result's foreground then background figures, those with jobs. */
export function priorityRows(results: readonly Pick<SimulationResult, 'byPriority'>[]): PriorityRow[] {
  return results.flatMap((r, index) => (['foreground', 'background'] as const).filter((p) => r.byPriority[p].jobs > 0).map((priority) => ({ index, priority, metrics: r.byPriority[priority] })));
}
