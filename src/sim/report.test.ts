import { describe, expect, it } from 'vitest';
import { simulationReportHtml } from './report.js';
import type { SimMetrics, SimulationResult } from './types.js';

const metrics = (jobs: number, avg: number): SimMetrics => ({
  jobs,
  completed: jobs,
  makespanSeconds: 7200,
  avgJctSeconds: avg,
  p50JctSeconds: avg * 0.8,
  p95JctSeconds: avg * 2,
  p99JctSeconds: avg * 3,
  avgQueueSeconds: 60,
  utilization: 0.5,
  throughputJobsPerHour: jobs / 2,
  reconfigurations: 3,
});

function result(policy: string, scale: number): SimulationResult {
  const jcts = Array.from({ length: 2000 }, (_, i) => (i + 1) * scale);
  return {
    policy,
    metrics: metrics(2000, 1000 * scale),
    byPriority: { foreground: metrics(1500, 900 * scale), background: metrics(500, 1300 * scale) },
    jcts,
    timeline: Array.from({ length: 3000 }, (_, i) => ({ t: i * 10, utilization: (i % 100) / 100, queueLength: i % 17 })),
    events: 4000,
    slowdowns: jcts.map((j) => 1 + j / 1000),
    slowdown: { p50: 2, p95: 5, p99: 9 },
    bigJobs: { count: 10, completed: 10, avgJctSeconds: 5000, p99JctSeconds: 9000 },
    preemptions: { total: 3, maxPerJob: 1 },
    bounds: { avgJctSeconds: 500, makespanSeconds: 7000, neverRun: 0 },
    unknownMemoryJobs: 0,
  };
}

/** Whether the tags of an XML fragment open and close in order (self-closing ones aside). */
function balanced(xml: string): boolean {
  const stack: string[] = [];
  for (const m of xml.matchAll(/<(\/?)([a-zA-Z][\w:-]*)[^>]*?(\/?)>/g)) {
    const [, closing, name, selfClosing] = m;
    if (selfClosing) continue;
    if (closing) {
      if (stack.pop() !== name) return false;
    } else stack.push(name ?? '');
  }
  return stack.length === 0;
}

describe('simulationReportHtml', () => {
  const policies = ['exclusive', 'static:3g.20gb+2g.10gb+1g.5gb+1g.5gb', 'migpool'];
  const html = simulationReportHtml({ trace: 'philly', fleet: '8xA100-SXM4-40GB', results: policies.map((p, i) => result(p, i + 1)), jobs: 2000, notes: ['seed 1 <&>'] });

  it('is one self-contained page naming the trace, the fleet and every policy', () => {
    expect(html.startsWith('<!DOCTYPE html>')).toBe(true);
    expect(html).toContain('philly on 8xA100-SXM4-40GB');
    for (const p of policies) {
      expect(html).toContain(`<td>${p}</td>`);
      expect(html).toContain(`<td>${p} (background)</td>`);
    }
    expect(html).toContain('seed 1 &lt;&amp;&gt;');
    expect(html).not.toMatch(/<script|https?:\/\/(?!www\.w3\.org)/);
  });

  it("puts the run's reconfigurations in the policies' table only, not in each priority's row", () => {
    const [runs, perPriority] = [...html.matchAll(/<table>[\s\S]*?<\/table>/g)].map((t) => t[0]);
    expect(runs).toContain('<th>reconfigurations</th>');
    expect(runs).toContain('<td>3</td></tr>');
    expect(perPriority).toContain('<td>exclusive (foreground)</td>');
    expect(perPriority).not.toContain('reconfigurations');
    // Each row ends with its jobs/h: 1500 jobs over 2 h, 750.0.
    expect(perPriority).toContain('<td>exclusive (foreground)</td><td>1500</td><td>1500</td><td>2.00 h</td><td>15.0 min</td><td>12.0 min</td><td>30.0 min</td><td>45.0 min</td><td>1.0 min</td><td>50.0%</td><td>750.0</td></tr>');
  });

  it('writes times as the CLI does, minutes included', () => {
    expect(html).toContain('<tr><td>exclusive</td><td>2000</td><td>2000</td><td>2.00 h</td><td>16.7 min</td><td>13.3 min</td><td>33.3 min</td><td>50.0 min</td><td>1.0 min</td>');
  });

  it('embeds four well-formed SVG charts (JCT, slowdown, utilisation, queue) with a line per policy', () => {
    const svgs = [...html.matchAll(/<svg[\s\S]*?<\/svg>/g)].map((m) => m[0]);
    expect(svgs).toHaveLength(4);
    for (const svg of svgs) {
      expect(svg).toContain('xmlns="http://www.w3.org/2000/svg"');
      expect(balanced(svg)).toBe(true);
      for (const p of policies) expect(svg).toContain(p);
    }
    expect(svgs[0]).toContain('Job completion time (CDF)');
    expect(svgs[1]).toContain('Slowdown (CDF)');
    expect(svgs[2]).toContain('GPU utilisation over time');
    expect(svgs[3]).toContain('Queue length over time');
  });

  it('has a per-user table only for runs with users: share against weight share, quota, slowdowns', () => {
    expect(html).not.toContain('<h2>Per user</h2>');
    const user = (name: string, weight: number, share: number, quotaGpus: number | null) => ({
      user: name,
      weight,
      quotaGpus,
      jobs: 10,
      completed: 9,
      contendedShare: share,
      weightShare: weight / 3,
      contendedSeconds: 3600,
      contendedGpus: 8 * share,
      peakGpus: 6,
      avgSlowdown: 2.5,
      p50Slowdown: 1.5,
      p99Slowdown: 9,
      avgJctSeconds: 4000,
    });
    const withUsers = simulationReportHtml({ trace: 't', fleet: 'f', results: [{ ...result('exclusive', 1), byUser: [user('alice', 2, 0.64, 6), user('b<b>', 1, 0.36, null)] }] });
    expect(withUsers).toContain('<h2>Per user</h2>');
    expect(withUsers).toContain('<td>exclusive</td><td>alice</td><td>2</td><td>6</td><td>9/10</td><td>64.0%</td><td>66.7%</td>');
    expect(withUsers).toContain('<td>b&lt;b&gt;</td><td>1</td><td>-</td>');
    expect(balanced(withUsers.slice(withUsers.indexOf('<h2>Per user</h2>'), withUsers.indexOf('<h2>Charts</h2>')))).toBe(true);
  });

  it('keeps element ids unique across the charts', () => {
    const ids = [...html.matchAll(/\sid="([^"]+)"/g)].map((m) => m[1]);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('stays small when results are large (lines thinned out)', () => {
    expect(html.length).toBeLessThan(1_500_000);
  });
});
