import { durationText } from '../sched/duration-text.js';
import type { SimulationResult } from './types.js';

/**
 * The comparison of policies that issue 17 asks for (`npm run compare`): each run's judging
 * figures, their mean and spread over seeds per trace, policy and information model, the markdown
 * tables, and the check of one policy against the issue's targets. Pure: the runner
 * (bench/compare.ts) does the simulating and the writing.
 */

/** The figures of one run that the comparison reads. */
export interface RunFigures {
  readonly jobs: number;
  readonly completed: number;
  readonly avgJctSeconds: number;
  readonly makespanSeconds: number;
  readonly p99Slowdown: number;
  /** Jobs of 4 GPUs or more (BIG_JOB_GPUS in metrics.ts); 0 when the trace has none. */
  readonly bigJobs: number;
  /** Their p99 JCT, null when the trace has none. */
  readonly bigP99JctSeconds: number | null;
  readonly preemptionsTotal: number;
  readonly maxPreemptionsPerJob: number;
  /** The trace's offline lower bounds on the fleet (the same for every policy of a trace and seed). */
  readonly boundAvgJctSeconds: number;
  readonly boundMakespanSeconds: number;
  /** Wall-clock seconds the run took (measured by the runner). */
  readonly wallSeconds: number;
}

/** One run of the matrix. */
export interface RunRecord {
  /** The matrix's name of the trace (`philly20k`, `alibaba8`, ...). */
  readonly trace: string;
  readonly policy: string;
  /** The information model the figures are reported under (`noisy`, `none`). */
  readonly info: string;
  readonly seed: number;
  readonly figures: RunFigures;
  /**
   * True when the policy reads no estimate, so the run was made once per seed and is reported under
   * every information model (tiresias, gavel).
   */
  readonly sharedAcrossInfo?: boolean;
}

/** The figures the runner keeps of a simulation. */
export function figuresOf(r: SimulationResult, wallSeconds: number): RunFigures {
  return {
    jobs: r.metrics.jobs,
    completed: r.metrics.completed,
    avgJctSeconds: r.metrics.avgJctSeconds,
    makespanSeconds: r.metrics.makespanSeconds,
    p99Slowdown: r.slowdown.p99,
    bigJobs: r.bigJobs.count,
    // None when no big job completed: a p99 of no JCTs is no figure (it read 0 s, and passed every target).
    bigP99JctSeconds: r.bigJobs.completed > 0 ? r.bigJobs.p99JctSeconds : null,
    preemptionsTotal: r.preemptions.total,
    maxPreemptionsPerJob: r.preemptions.maxPerJob,
    boundAvgJctSeconds: r.bounds.avgJctSeconds,
    boundMakespanSeconds: r.bounds.makespanSeconds,
    wallSeconds,
  };
}

/** Mean and (population) standard deviation. */
export interface MeanStd {
  readonly mean: number;
  readonly std: number;
}

export function meanStd(xs: readonly number[]): MeanStd {
  if (xs.length === 0) return { mean: Number.NaN, std: Number.NaN };
  const mean = xs.reduce((s, x) => s + x, 0) / xs.length;
  return { mean, std: Math.sqrt(xs.reduce((s, x) => s + (x - mean) ** 2, 0) / xs.length) };
}

/** One policy under one information model on one trace, over its seeds. */
export interface Cell {
  readonly policy: string;
  readonly info: string;
  readonly seeds: readonly number[];
  readonly completed: MeanStd;
  readonly jobs: number;
  readonly avgJctSeconds: MeanStd;
  readonly makespanSeconds: MeanStd;
  readonly p99Slowdown: MeanStd;
  /** Null when the trace has no big jobs. */
  readonly bigP99JctSeconds: MeanStd | null;
  /** The most any job was preempted, over all seeds. */
  readonly maxPreemptionsPerJob: number;
  /** Mean over seeds of avg JCT over its lower bound, and of makespan over its lower bound. */
  readonly avgJctOverBound: number;
  readonly makespanOverBound: number;
  readonly sharedAcrossInfo: boolean;
  readonly wallSeconds: number;
}

/** One trace's cells, policies in the order first seen and information models in that order too. */
export interface TraceSummary {
  readonly trace: string;
  readonly cells: readonly Cell[];
  readonly bounds: { readonly avgJctSeconds: number; readonly makespanSeconds: number };
}

/** Groups runs by trace, then policy and information model, with means and spreads over seeds. */
export function summarize(records: readonly RunRecord[]): TraceSummary[] {
  const traces = [...new Set(records.map((r) => r.trace))];
  return traces.map((trace) => {
    const mine = records.filter((r) => r.trace === trace);
    const policies = [...new Set(mine.map((r) => r.policy))];
    const infos = [...new Set(mine.map((r) => r.info))];
    const cells: Cell[] = [];
    for (const info of infos) {
      for (const policy of policies) {
        const runs = mine.filter((r) => r.policy === policy && r.info === info).sort((a, b) => a.seed - b.seed);
        if (runs.length > 0) cells.push(cellOf(policy, info, runs));
      }
    }
    return {
      trace,
      cells,
      bounds: { avgJctSeconds: meanStd(firstPerSeed(mine).map((r) => r.figures.boundAvgJctSeconds)).mean, makespanSeconds: meanStd(firstPerSeed(mine).map((r) => r.figures.boundMakespanSeconds)).mean },
    };
  });
}

function firstPerSeed(runs: readonly RunRecord[]): RunRecord[] {
  const seen = new Map<number, RunRecord>();
  for (const r of runs) if (!seen.has(r.seed)) seen.set(r.seed, r);
  return [...seen.values()];
}

function cellOf(policy: string, info: string, runs: readonly RunRecord[]): Cell {
  const f = runs.map((r) => r.figures);
  const big = f.filter((x) => x.bigP99JctSeconds !== null).map((x) => x.bigP99JctSeconds as number);
  return {
    policy,
    info,
    seeds: runs.map((r) => r.seed),
    completed: meanStd(f.map((x) => x.completed)),
    jobs: f[0]?.jobs ?? 0,
    avgJctSeconds: meanStd(f.map((x) => x.avgJctSeconds)),
    makespanSeconds: meanStd(f.map((x) => x.makespanSeconds)),
    p99Slowdown: meanStd(f.map((x) => x.p99Slowdown)),
    bigP99JctSeconds: big.length > 0 ? meanStd(big) : null,
    maxPreemptionsPerJob: Math.max(0, ...f.map((x) => x.maxPreemptionsPerJob)),
    avgJctOverBound: meanStd(f.map((x) => x.avgJctSeconds / x.boundAvgJctSeconds)).mean,
    makespanOverBound: meanStd(f.map((x) => x.makespanSeconds / x.boundMakespanSeconds)).mean,
    sharedAcrossInfo: runs.some((r) => r.sharedAcrossInfo === true),
    wallSeconds: f.reduce((s, x) => s + x.wallSeconds, 0),
  };
}

function pm(m: MeanStd, f: (v: number, unitOf: number) => string): string {
  return `${f(m.mean, m.mean)} ± ${f(m.std, m.mean)}`;
}

const duration = (v: number, unitOf = v): string => durationText(v, { unitOf });

const ratioText = (v: number): string => (v >= 100 ? v.toFixed(0) : v.toFixed(2));

/** A trace's markdown table: every policy under each information model, mean ± std over seeds, and the distance to the bounds. */
export function markdownTable(s: TraceSummary): string {
  const head = '| policy | --info | seeds | completed | avg JCT | makespan | p99 slowdown | big-job p99 JCT | max preemptions per job | avg JCT / bound | makespan / bound |';
  const rows = s.cells.map((c) =>
    [
      c.policy,
      c.info + (c.sharedAcrossInfo ? ' (reads none)' : ''),
      String(c.seeds.length),
      `${c.completed.mean.toFixed(0)}/${c.jobs}`,
      pm(c.avgJctSeconds, duration),
      pm(c.makespanSeconds, duration),
      pm(c.p99Slowdown, (v) => ratioText(v)),
      c.bigP99JctSeconds === null ? '-' : pm(c.bigP99JctSeconds, duration),
      String(c.maxPreemptionsPerJob),
      `${c.avgJctOverBound.toFixed(2)}x`,
      `${c.makespanOverBound.toFixed(3)}x`,
    ].join(' | '),
  );
  return [head, `|${'---|'.repeat(11)}`, ...rows.map((r) => `| ${r} |`), '', `Lower bounds (mean over seeds): avg JCT ${duration(s.bounds.avgJctSeconds)}, makespan ${duration(s.bounds.makespanSeconds)}.`].join('\n');
}

/** Issue 17's targets for the judged policy. */
export const TARGETS = {
  /** Average JCT at most this multiple of tiresias's. */
  avgJctOverTiresias: 0.9,
  /** p99 slowdown no worse than tiresias's. */
  p99SlowdownOverTiresias: 1,
  /** Big jobs' p99 JCT no worse than exclusive's. */
  bigP99OverExclusive: 1,
  /** Makespan within 2% of exclusive's (better is fine). */
  makespanOverExclusive: 1.02,
  /** No job preempted more than this many times. */
  maxPreemptionsPerJob: 10,
} as const;

/** One target on one trace under one information model. */
export interface TargetResult {
  readonly trace: string;
  readonly info: string;
  readonly target: string;
  /** 'n/a' when a figure it needs is missing (no peer run, no big jobs). */
  readonly verdict: 'PASS' | 'MISS' | 'n/a';
  /** The judged policy's figure over the peer's (or the count), and the limit it is held to. */
  readonly value: number | null;
  readonly limit: number;
  /** Words: `1.53x tiresias (limit 0.90x): 70% over`. */
  readonly detail: string;
}

/** Checks `policy` (migpool) against the targets on every trace and information model it ran under, with the means over seeds. */
export function checkTargets(summaries: readonly TraceSummary[], policy = 'migpool'): TargetResult[] {
  const out: TargetResult[] = [];
  for (const s of summaries) {
    for (const info of [...new Set(s.cells.map((c) => c.info))]) {
      const at = (p: string) => s.cells.find((c) => c.policy === p && c.info === info);
      const me = at(policy);
      if (!me) continue;
      const tiresias = at('tiresias');
      const exclusive = at('exclusive');
      const ratio = (target: string, peerName: string, mine: number | undefined, peer: number | undefined, limit: number): TargetResult => {
        if (mine === undefined || peer === undefined || !Number.isFinite(mine) || !Number.isFinite(peer) || peer <= 0) {
          return { trace: s.trace, info, target, verdict: 'n/a', value: null, limit, detail: peer === undefined ? `no ${peerName} run` : 'not measured' };
        }
        const value = mine / peer;
        // Equal figures pass: means of the same numbers may differ in the last bits.
        const pass = value <= limit * (1 + 1e-9);
        const off = pass ? `${(Math.max(0, 1 - value / limit) * 100).toFixed(1)}% to spare` : `${((value / limit - 1) * 100).toFixed(1)}% over`;
        return { trace: s.trace, info, target, verdict: pass ? 'PASS' : 'MISS', value, limit, detail: `${value.toFixed(3)}x ${peerName} (limit ${limit.toFixed(2)}x): ${off}` };
      };
      const jct = ratio('avg JCT <= 0.9x tiresias', 'tiresias', me.avgJctSeconds.mean, tiresias?.avgJctSeconds.mean, TARGETS.avgJctOverTiresias);
      // Where tiresias is near the lower bound, 0.9x of it is below what any policy can reach.
      const floor = tiresias ? s.bounds.avgJctSeconds / tiresias.avgJctSeconds.mean : 0;
      out.push(jct.verdict === 'MISS' && floor > TARGETS.avgJctOverTiresias ? { ...jct, detail: `${jct.detail}; out of reach: the lower bound is ${floor.toFixed(3)}x tiresias` } : jct);
      out.push(ratio('p99 slowdown <= tiresias', 'tiresias', me.p99Slowdown.mean, tiresias?.p99Slowdown.mean, TARGETS.p99SlowdownOverTiresias));
      if (me.bigP99JctSeconds === null && exclusive?.bigP99JctSeconds != null) out.push({ trace: s.trace, info, target: 'big-job p99 JCT <= exclusive', verdict: 'MISS', value: null, limit: TARGETS.bigP99OverExclusive, detail: 'no job of 4 GPUs or more completed, while some did under exclusive' });
      else if (me.bigP99JctSeconds === null) out.push({ trace: s.trace, info, target: 'big-job p99 JCT <= exclusive', verdict: 'n/a', value: null, limit: TARGETS.bigP99OverExclusive, detail: 'no job of 4 GPUs or more completed' });
      else out.push(ratio('big-job p99 JCT <= exclusive', 'exclusive', me.bigP99JctSeconds.mean, exclusive?.bigP99JctSeconds?.mean, TARGETS.bigP99OverExclusive));
      out.push(ratio('makespan <= 1.02x exclusive', 'exclusive', me.makespanSeconds.mean, exclusive?.makespanSeconds.mean, TARGETS.makespanOverExclusive));
      const n = me.maxPreemptionsPerJob;
      const limit = TARGETS.maxPreemptionsPerJob;
      out.push({ trace: s.trace, info, target: `<= ${limit} preemptions per job`, verdict: n <= limit ? 'PASS' : 'MISS', value: n, limit, detail: `most per job ${n} (limit ${limit})${n > limit ? `: ${n - limit} over` : ''}` });
    }
  }
  return out;
}

/** The target check of one trace as a markdown table. */
export function markdownTargets(results: readonly TargetResult[], trace: string, policy = 'migpool'): string {
  const mine = results.filter((r) => r.trace === trace);
  if (mine.length === 0) return `No ${policy} run on ${trace}: no target check.`;
  return ['| --info | target | verdict | how far |', '|---|---|---|---|', ...mine.map((r) => `| ${r.info} | ${r.target} | ${r.verdict} | ${r.detail} |`)].join('\n');
}
