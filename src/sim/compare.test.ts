import { describe, expect, it } from 'vitest';
import { parsePolicy } from '../sched/registry.js';
import { resolveWorkload } from '../perf/workloads.js';
import { checkTargets, figuresOf, markdownTable, markdownTargets, summarize, type RunFigures, type RunRecord } from './compare.js';
import { simulate } from './engine.js';
import { parseFleet } from './fleet.js';
import type { TraceJob } from './types.js';

const H = 3600;
const base: RunFigures = {
  jobs: 10,
  completed: 10,
  avgJctSeconds: 10 * H,
  makespanSeconds: 100 * H,
  p99Slowdown: 20,
  bigJobs: 2,
  bigP99JctSeconds: 50 * H,
  preemptionsTotal: 0,
  maxPreemptionsPerJob: 0,
  boundAvgJctSeconds: 5 * H,
  boundMakespanSeconds: 80 * H,
  wallSeconds: 1,
};
const run = (policy: string, seed: number, f: Partial<RunFigures>, info = 'noisy'): RunRecord => ({ trace: 't', policy, info, seed, figures: { ...base, ...f } });

describe('the comparison of policies', () => {
  it('gives mean and standard deviation over seeds, the distance to the bounds, and the most preemptions of any seed', () => {
    const [s] = summarize([run('tiresias', 1, { avgJctSeconds: 8 * H, maxPreemptionsPerJob: 3 }), run('tiresias', 2, { avgJctSeconds: 12 * H, maxPreemptionsPerJob: 7 })]);
    const c = s!.cells[0]!;
    expect(c.avgJctSeconds.mean).toBe(10 * H);
    expect(c.avgJctSeconds.std).toBe(2 * H);
    expect(c.avgJctOverBound).toBe(2);
    expect(c.makespanOverBound).toBe(1.25);
    expect(c.maxPreemptionsPerJob).toBe(7);
    const table = markdownTable(s!);
    expect(table).toContain('| tiresias | noisy | 2 | 10/10 | 10.00 h ± 2.00 h | 4.17 d ± 0.00 d | 20.00 ± 0.00 | 2.08 d ± 0.00 d | 7 | 2.00x | 1.250x |');
    expect(table).toContain('Lower bounds (mean over seeds): avg JCT 5.00 h, makespan 3.33 d.');
  });

  it("checks migpool against each target: PASS, MISS with how far, and n/a without big jobs or a peer", () => {
    const records = [
      run('exclusive', 1, { makespanSeconds: 100 * H, bigP99JctSeconds: 40 * H }),
      run('tiresias', 1, { avgJctSeconds: 10 * H, p99Slowdown: 20 }),
      // avg JCT 0.8x tiresias (pass), p99 slowdown 1.5x (miss by 50%), big p99 1.25x exclusive (miss), makespan 1.01x (pass), 12 preemptions (miss by 2).
      run('migpool', 1, { avgJctSeconds: 8 * H, p99Slowdown: 30, bigP99JctSeconds: 50 * H, makespanSeconds: 101 * H, maxPreemptionsPerJob: 12 }),
      run('migpool', 1, { bigJobs: 0, bigP99JctSeconds: null }, 'none'),
    ];
    const results = checkTargets(summarize(records));
    const noisy = Object.fromEntries(results.filter((r) => r.info === 'noisy').map((r) => [r.target, r]));
    expect(noisy['avg JCT <= 0.9x tiresias']).toMatchObject({ verdict: 'PASS', value: 0.8 });
    expect(noisy['avg JCT <= 0.9x tiresias']?.detail).toBe('0.800x tiresias (limit 0.90x): 11.1% to spare');
    expect(noisy['p99 slowdown <= tiresias']).toMatchObject({ verdict: 'MISS', value: 1.5, detail: '1.500x tiresias (limit 1.00x): 50.0% over' });
    expect(noisy['big-job p99 JCT <= exclusive']).toMatchObject({ verdict: 'MISS', value: 1.25 });
    expect(noisy['makespan <= 1.02x exclusive']).toMatchObject({ verdict: 'PASS', value: 1.01 });
    expect(noisy['<= 10 preemptions per job']).toMatchObject({ verdict: 'MISS', value: 12, detail: 'most per job 12 (limit 10): 2 over' });
    const none = results.filter((r) => r.info === 'none');
    expect(none.find((r) => r.target.startsWith('big-job'))).toMatchObject({ verdict: 'n/a', detail: 'no job of 4 GPUs or more completed' });
    expect(none.find((r) => r.target.startsWith('avg JCT'))).toMatchObject({ verdict: 'n/a', detail: 'no tiresias run' });
    // No big job done under migpool while some were under exclusive: a miss, not a pass on a p99 of nothing.
    const starved = checkTargets(summarize([run('exclusive', 1, { bigP99JctSeconds: 40 * H }), run('migpool', 1, { bigJobs: 3, bigP99JctSeconds: null })]));
    expect(starved.find((r) => r.target.startsWith('big-job'))).toMatchObject({ verdict: 'MISS', detail: 'no job of 4 GPUs or more completed, while some did under exclusive' });
    // A peer at the lower bound: 0.9x of it cannot be reached, and the check says so.
    const bound = checkTargets(summarize([run('tiresias', 1, { avgJctSeconds: 5 * H }), run('migpool', 1, { avgJctSeconds: 5 * H })]));
    expect(bound.find((r) => r.target.startsWith('avg JCT'))?.detail).toBe('1.000x tiresias (limit 0.90x): 11.1% over; out of reach: the lower bound is 1.000x tiresias');
    // The same figure (as means of equal numbers may come out a hair apart) passes a limit of 1x.
    const tie = checkTargets(summarize([run('exclusive', 1, { bigP99JctSeconds: 0.3 }), run('migpool', 1, { bigP99JctSeconds: 0.1 + 0.2 })]));
    expect(tie.find((r) => r.target.startsWith('big-job'))?.verdict).toBe('PASS');
    expect(markdownTargets(results, 't')).toContain('| noisy | p99 slowdown <= tiresias | MISS | 1.500x tiresias (limit 1.00x): 50.0% over |');
  });

  it('judges real runs of a tiny synthetic trace: the same bounds for every policy, and exclusive never preempts', () => {
    const small = resolveWorkload('small');
    const jobs: TraceJob[] = [
      ...Array.from({ length: 6 }, (_, i): TraceJob => ({ id: `s${i}`, workload: small, gpus: 1, priority: 'foreground', arrival: i * 60, memoryGiB: null, profile: null, work: 1800 + i * 600 })),
      { id: 'big', workload: resolveWorkload('large'), gpus: 4, priority: 'foreground', arrival: 30, memoryGiB: null, profile: null, work: 3600 },
    ];
    const fleet = parseFleet('4xA100-SXM4-40GB');
    const records: RunRecord[] = ['exclusive', 'tiresias', 'migpool'].map((p) => {
      const r = simulate({ fleet, jobs, policy: parsePolicy(p), seed: 1, info: { mode: 'noisy', seed: 1 }, preemptionCostSeconds: 60 });
      return { trace: 'tiny', policy: p, info: 'noisy', seed: 1, figures: figuresOf(r, 0) };
    });
    for (const r of records) expect(r.figures.completed).toBe(7);
    expect(new Set(records.map((r) => r.figures.boundMakespanSeconds)).size).toBe(1);
    const [s] = summarize(records);
    expect(s!.cells.map((c) => c.policy)).toEqual(['exclusive', 'tiresias', 'migpool']);
    expect(s!.cells[0]!.maxPreemptionsPerJob).toBe(0);
    expect(s!.cells.every((c) => c.bigP99JctSeconds !== null && c.avgJctOverBound >= 1 && c.makespanOverBound >= 1)).toBe(true);
    const checks = checkTargets([s!]);
    expect(checks).toHaveLength(5);
    expect(checks.every((c) => c.verdict === 'PASS' || c.verdict === 'MISS')).toBe(true);
  });
});
