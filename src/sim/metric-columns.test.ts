import { describe, expect, it } from 'vitest';
import { metricColumns, priorityMetricColumns, priorityRows } from './metric-columns.js';
import type { SimMetrics } from './types.js';

const m: SimMetrics = {
  jobs: 21,
  completed: 20,
  makespanSeconds: 4.91 * 86_400,
  avgJctSeconds: 20.91 * 3600,
  p50JctSeconds: 52 * 60,
  p95JctSeconds: 1.99 * 86_400,
  p99JctSeconds: 2.21 * 86_400,
  avgQueueSeconds: 18.42 * 3600,
  utilization: 0.444,
  throughputJobsPerHour: 0.178,
  reconfigurations: 16,
};

describe('metricColumns', () => {
  it("is migpool simulate's per-priority table in the terminal: completed over jobs, throughput to 2 decimals, no reconfigurations", () => {
    const t = priorityMetricColumns('terminal');
    expect(t.heads).toEqual(['COMPLETED', 'MAKESPAN', 'AVG JCT', 'P50 JCT', 'P95 JCT', 'P99 JCT', 'AVG QUEUE', 'UTIL', 'JOBS/H']);
    expect(t.cells(m)).toEqual(['20/21', '4.91 d', '20.91 h', '52.0 min', '1.99 d', '2.21 d', '18.42 h', '44.4%', '0.18']);
    expect(metricColumns('terminal').heads).toEqual(t.heads);
  });

  it("is the HTML report's table of runs there: jobs and completed apart, throughput to 1 decimal, reconfigurations", () => {
    const r = metricColumns('report');
    expect(r.heads).toEqual(['jobs', 'completed', 'makespan', 'avg JCT', 'p50 JCT', 'p95 JCT', 'p99 JCT', 'avg queue', 'utilisation', 'jobs/h', 'reconfigurations']);
    expect(r.cells(m)).toEqual(['21', '20', '4.91 d', '20.91 h', '52.0 min', '1.99 d', '2.21 d', '18.42 h', '44.4%', '0.2', '16']);
  });

  it("has no reconfigurations in a priority's row of the report: a re-partition belongs to no priority", () => {
    const { reconfigurations: _run, ...fg } = m;
    const p = priorityMetricColumns('report');
    expect(p.heads).toEqual(['jobs', 'completed', 'makespan', 'avg JCT', 'p50 JCT', 'p95 JCT', 'p99 JCT', 'avg queue', 'utilisation', 'jobs/h']);
    expect(p.cells(fg)).toEqual(['21', '20', '4.91 d', '20.91 h', '52.0 min', '1.99 d', '2.21 d', '18.42 h', '44.4%', '0.2']);
  });
});

describe('priorityRows', () => {
  it("lists each result's foreground then background figures, leaving out a priority without jobs", () => {
    const none: SimMetrics = { ...m, jobs: 0, completed: 0 };
    const bg: SimMetrics = { ...m, jobs: 5 };
    const rows = priorityRows([{ byPriority: { foreground: m, background: bg } }, { byPriority: { foreground: none, background: bg } }]);
    expect(rows.map((r) => [r.index, r.priority, r.metrics.jobs])).toEqual([
      [0, 'foreground', 21],
      [0, 'background', 5],
      [1, 'background', 5],
    ]);
  });
});
