import { createRequire } from 'node:module';
import { durationText } from '../sched/duration-text.js';
import { metricColumns, priorityMetricColumns, priorityRows, type MetricColumns } from './metric-columns.js';
import type { SimulationResult } from './types.js';
import { usersTable } from './users-table.js';

// ECharts ships ESM without a default export but declares `export =` types; load its CommonJS
// build so that types and runtime agree (as src/bench/plot.ts does).
/** echarts, loaded on first use (it takes a few hundred ms to import: not at every command's start). */
let echartsModule: typeof import('echarts') | null = null;
const loadEcharts = (): typeof import('echarts') => (echartsModule ??= createRequire(import.meta.url)('echarts') as typeof import('echarts'));

/** What the report shows. */
export interface SimulationReportInput {
  /** The trace as the user named it (`philly`, `jobs.csv`). */
  readonly trace: string;
  /** The fleet spec (`64xA100-SXM4-40GB`). */
  readonly fleet: string;
  /** One result per policy, in the order to show them. */
  readonly results: readonly SimulationResult[];
  /** Jobs in the trace, when known. */
  readonly jobs?: number;
  /** Lines worth saying under the title (seed, mix, rows skipped). */
  readonly notes?: readonly string[];
}

/** Most points one line of a chart keeps (the rest are thinned out evenly). */
export const MAX_POINTS_PER_LINE = 500;

const WIDTH = 900;
const HEIGHT = 380;

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c);
}

/** Every `step`-th element and always the last, so that at most `max` remain. */
function thin<T>(items: readonly T[], max: number): T[] {
  if (items.length <= max) return [...items];
  const step = items.length / max;
  const out: T[] = [];
  for (let i = 0; i < max - 1; i++) {
    const item = items[Math.floor(i * step)];
    if (item !== undefined) out.push(item);
  }
  const last = items[items.length - 1];
  if (last !== undefined) out.push(last);
  return out;
}

function renderSvg(option: Record<string, unknown>): string {
  const chart = loadEcharts().init(null, null, { renderer: 'svg', ssr: true, width: WIDTH, height: HEIGHT });
  chart.setOption({ animation: false, legend: { top: 30, type: 'plain' }, grid: { left: 80, right: 40, top: 80, bottom: 60 }, ...option });
  const svg = chart.renderToSVGString();
  chart.dispose();
  return svg;
}

/** The share of jobs done within each completion time, one line per policy (log time axis). */
export function jctCdfSvg(results: readonly SimulationResult[]): string {
  return renderSvg({
    title: { text: 'Job completion time (CDF)', left: 'center', textStyle: { fontSize: 15 } },
    tooltip: { trigger: 'axis' },
    xAxis: { type: 'log', name: 'job completion time (s)', nameLocation: 'middle', nameGap: 32, logBase: 10 },
    yAxis: { type: 'value', name: 'share of jobs', min: 0, max: 1 },
    series: results.map((r) => {
      const sorted = r.jcts.filter((j) => Number.isFinite(j) && j > 0).sort((a, b) => a - b);
      const points = sorted.map((j, i) => [j, (i + 1) / sorted.length] as const);
      return { name: r.policy, type: 'line', step: 'end', showSymbol: false, data: thin(points, MAX_POINTS_PER_LINE).map(([x, y]) => [Number(x.toPrecision(6)), Number(y.toFixed(4))]) };
    }),
  });
}

/** The share of jobs within each slowdown (JCT over the run alone), one line per policy (log axis). */
export function slowdownCdfSvg(results: readonly SimulationResult[]): string {
  return renderSvg({
    title: { text: 'Slowdown (CDF): JCT over the run alone on what the job asked for', left: 'center', textStyle: { fontSize: 15 } },
    tooltip: { trigger: 'axis' },
    xAxis: { type: 'log', name: 'slowdown (x)', nameLocation: 'middle', nameGap: 32, logBase: 10 },
    yAxis: { type: 'value', name: 'share of jobs', min: 0, max: 1 },
    series: results.map((r) => {
      const sorted = r.slowdowns.filter((x) => Number.isFinite(x) && x > 0).sort((a, b) => a - b);
      const points = sorted.map((x, i) => [x, (i + 1) / sorted.length] as const);
      return { name: r.policy, type: 'line', step: 'end', showSymbol: false, data: thin(points, MAX_POINTS_PER_LINE).map(([x, y]) => [Number(x.toPrecision(6)), Number(y.toFixed(4))]) };
    }),
  });
}

function judgingTable(results: readonly SimulationResult[]): string {
  const head = '<tr><th>policy</th><th>p50 slowdown</th><th>p95 slowdown</th><th>p99 slowdown</th><th>big jobs (&ge;4 GPUs)</th><th>big avg JCT</th><th>big p99 JCT</th><th>preemptions</th><th>most per job</th></tr>';
  const body = results
    .map(
      (r) =>
        `<tr><td>${escapeHtml(r.policy)}</td><td>${r.slowdown.p50.toFixed(2)}</td><td>${r.slowdown.p95.toFixed(2)}</td><td>${r.slowdown.p99.toFixed(2)}</td><td>${r.bigJobs.completed}/${r.bigJobs.count}</td><td>${r.bigJobs.completed > 0 ? durationText(r.bigJobs.avgJctSeconds) : '-'}</td><td>${r.bigJobs.completed > 0 ? durationText(r.bigJobs.p99JctSeconds) : '-'}</td><td>${r.preemptions.total}</td><td>${r.preemptions.maxPerJob}</td></tr>`,
    )
    .join('\n');
  const b = results[0]?.bounds;
  const bounds = b ? `<p class="notes">Offline lower bounds: average JCT ${durationText(b.avgJctSeconds)} (each job alone on its fastest resource), makespan ${durationText(b.makespanSeconds)} (capacity, or the last arrival plus its run)${b.neverRun > 0 ? `, over the jobs that can run: ${b.neverRun} of the trace never can on this fleet` : ''}.</p>` : '';
  return `<table>\n<thead>${head}</thead>\n<tbody>\n${body}\n</tbody>\n</table>\n${bounds}`;
}

/** Per user: share of the pool under contention against their weight's, and slowdowns (runs with users only). */
function usersHtml(results: readonly SimulationResult[]): string {
  const table = usersTable(results);
  if (table.rows.length === 0) return '';
  return `<h2>Per user</h2>\n${htmlTable(table.titles, table.rows)}\n<p class="notes">Share: the user's part of the GPUs' worth held under contention (while every user had a job waiting); weight share: their weight over all weights. GPUs' worth: a MIG slice counts its compute slices over its GPU's, a shared GPU is split among its jobs.</p>`;
}

function timelineSvg(results: readonly SimulationResult[], title: string, yName: string, value: (s: SimulationResult['timeline'][number]) => number, yMax?: number): string {
  return renderSvg({
    title: { text: title, left: 'center', textStyle: { fontSize: 15 } },
    tooltip: { trigger: 'axis' },
    xAxis: { type: 'value', name: 'simulated time (h)', nameLocation: 'middle', nameGap: 32 },
    yAxis: { type: 'value', name: yName, min: 0, ...(yMax === undefined ? {} : { max: yMax }) },
    series: results.map((r) => ({
      name: r.policy,
      type: 'line',
      showSymbol: false,
      data: thin(r.timeline, MAX_POINTS_PER_LINE).map((s) => [Number((s.t / 3600).toFixed(4)), Number(value(s).toFixed(4))]),
    })),
  });
}

/** GPU utilisation (busy slice-seconds over all slice-seconds, %) over simulated time, one line per policy. */
export function utilizationSvg(results: readonly SimulationResult[]): string {
  return timelineSvg(results, 'GPU utilisation over time', 'busy compute slices (%)', (s) => s.utilization * 100, 100);
}

/** Jobs waiting over simulated time, one line per policy. */
export function queueLengthSvg(results: readonly SimulationResult[]): string {
  return timelineSvg(results, 'Queue length over time', 'jobs waiting', (s) => s.queueLength);
}

/** An HTML table of text cells, escaped. */
function htmlTable(heads: readonly string[], rows: readonly (readonly string[])[]): string {
  const row = (cells: readonly string[], tag: 'th' | 'td'): string => `<tr>${cells.map((c) => `<${tag}>${escapeHtml(c)}</${tag}>`).join('')}</tr>`;
  return `<table>\n<thead>${row(heads, 'th')}</thead>\n<tbody>\n${rows.map((r) => row(r, 'td')).join('\n')}\n</tbody>\n</table>`;
}

function metricsTable<M>(columns: MetricColumns<M>, rows: readonly { readonly label: string; readonly metrics: M }[], first: string): string {
  return htmlTable(
    [first, ...columns.heads],
    rows.map((r) => [r.label, ...columns.cells(r.metrics)]),
  );
}

/**
 * A self-contained HTML page comparing policies on one trace: the metrics table (all jobs, then
 * per priority), and three charts rendered server-side by ECharts as inline SVG (no scripts, no
 * network): the JCT distribution, utilisation over time and queue length over time per policy.
 */
export function simulationReportHtml(input: SimulationReportInput): string {
  const { trace, fleet, results } = input;
  const title = `migpool simulate: ${trace} on ${fleet}`;
  const byPriority = priorityRows(results).map((r) => ({ label: `${results[r.index]!.policy} (${r.priority})`, metrics: r.metrics }));
  const notes = [...(input.jobs === undefined ? [] : [`${input.jobs} jobs`]), ...(input.notes ?? [])];
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>${escapeHtml(title)}</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 960px; color: #222; }
table { border-collapse: collapse; font-size: 13px; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 4px 8px; text-align: right; }
th:first-child, td:first-child { text-align: left; }
th { background: #f4f4f4; }
figure { margin: 1.5em 0; }
.notes { color: #555; }
</style>
</head>
<body>
<h1>${escapeHtml(title)}</h1>
${notes.length > 0 ? `<p class="notes">${notes.map(escapeHtml).join('<br>\n')}</p>` : ''}
<h2>Policies</h2>
${metricsTable(metricColumns('report'), results.map((r) => ({ label: r.policy, metrics: r.metrics })), 'policy')}
${byPriority.length > 0 ? `<h2>Per priority</h2>\n${metricsTable(priorityMetricColumns('report'), byPriority, 'policy (priority)')}` : ''}
<h2>Slowdowns, big jobs, preemptions</h2>
${judgingTable(results)}
${usersHtml(results)}
<h2>Charts</h2>
<figure>${jctCdfSvg(results)}</figure>
<figure>${slowdownCdfSvg(results)}</figure>
<figure>${utilizationSvg(results)}</figure>
<figure>${queueLengthSvg(results)}</figure>
<p class="notes">Utilisation: busy compute-slice-seconds over all slice-seconds (a whole GPU counts all its slices). JCT: arrival to completion.</p>
</body>
</html>
`;
}
