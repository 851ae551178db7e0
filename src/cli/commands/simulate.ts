import { workloadFiles } from '../workload-file.js';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import cliProgress from 'cli-progress';
import { badInput, MigpoolError } from '../../errors.js';
import { decimalValue } from '../../decimal-number.js';
import { loadHighs } from '../../exec/highs.js';
import { parsePolicies, parsePolicy, policyHelp, POLICY_NAMES } from '../../sched/registry.js';
import { durationText } from '../../sched/duration-text.js';
import type { Policy, Priority } from '../../sched/types.js';
import { DEFAULT_RECONFIGURE_SECONDS, simulate } from '../../sim/engine.js';
import { DEFAULT_INFO_MODE, INFO_MODES, parseInfoMode } from '../../sim/info.js';
import { parseFleet } from '../../sim/fleet.js';
import { assignUsers, parseUsersSpec } from '../../sim/users-spec.js';
import { usersTable } from '../../sim/users-table.js';
import { createRandom } from '../../random.js';
import { priorityMetricColumns, priorityRows } from '../../sim/metric-columns.js';
import { simulationReportHtml } from '../../sim/report.js';
import {
  DEFAULT_MIX_SPEC,
  DEFAULT_MULTI_GPU_SIZES,
  deepPoolTrace,
  meanDeepPoolJobGpuSeconds,
  formatMix,
  meanJobGpuSeconds,
  parseMix,
  readAlibabaTrace,
  readPhillyTrace,
  syntheticTrace,
  TRACE_FORMATS,
  traceFormatHelp,
  traceFormatOf,
  type SkippedRows,
  type WorkloadMix,
} from '../../sim/traces/index.js';
import type { Fleet, PriorityMetrics, SimMetrics, SimulationResult, TraceJob } from '../../sim/types.js';
import { readUserText, writeJson, writeUserFile, type Io } from '../io.js';
import { renderTable } from '../table.js';
import { builtInScalingModel, packageRoot } from '../package-data.js';

/** The flags of `migpool simulate` (as commander gives them); `loadTrace` reads trace, arrivalRate. */
export interface SimulateOptions {
  trace: string;
  fleet: string;
  policies: string;
  mix: string;
  workload: string[];
  seed: string;
  limit?: string;
  reconfigureSeconds?: string;
  arrivalRate?: string;
  json?: boolean;
  report?: string;
  info: string;
  infoSeed?: string;
  preemptionCost: string;
  seeds: string;
  users?: string;
}

/**
 * ASSUMPTION: seconds of progress a preempted job loses when it starts again, by default: a
 * checkpoint reload and the warm-up of a training job (data loaders, CUDA context, first
 * iterations) take tens of seconds to minutes. Not measured; the issue that asked for it named 60.
 */
export const DEFAULT_PREEMPTION_COST_SECONDS = 60;

/** Jobs of the synthetic trace when --limit does not say. */
export const DEFAULT_SYNTHETIC_JOBS = 1000;

/**
 * The most jobs the synthetic and deeppool generators make: six times the Philly trace's 82,247
 * jobs. 300,000 took 11 s and 0.6 GB with one policy; --limit 100000000 had taken 4 GB within a
 * minute, still generating.
 */
const MAX_GENERATED_JOBS = 500_000;

/**
 * The most seeds of one run: the mean over 1,000 seeds is within 3% of one seed's standard
 * deviation (1/sqrt(1000)); every run's results are kept (about 0.3 MB each for 100 jobs), and
 * --seeds 100000 had taken 2.7 GB within a minute.
 */
const MAX_SEEDS = 1000;

/** The built-in traces, as files under the package's data/traces. */
export const BUILT_IN_TRACES = {
  philly: 'philly/philly.csv',
  alibaba: 'alibaba-v2023/openb_pod_list_default.csv',
} as const;

function builtInTraceText(path: string): string {
  const file = join(packageRoot(), 'data', 'traces', path);
  if (!existsSync(file)) throw new MigpoolError('RUNTIME', `trace data missing: ${file} is not there (this install lacks data/traces); pass the trace as a FILE instead`);
  return readFileSync(file, 'utf8');
}

function wholeNumber(value: string, flag: string, min: number): number {
  if (!/^\d+$/.test(value.trim()) || Number(value) < min) throw badInput(`${flag} must be a whole number of at least ${min}, got '${value}'`);
  return Number(value);
}

function nonNegative(value: string, flag: string, positive = false): number {
  const n = decimalValue(value);
  if (!Number.isFinite(n) || n < 0 || (positive && n === 0)) throw badInput(`${flag} must be a ${positive ? 'positive' : 'non-negative'} number, got '${value}'`);
  return n;
}

function withFlag<T>(flag: string, f: () => T): T {
  try {
    return f();
  } catch (e) {
    if (e instanceof MigpoolError && e.code === 'BAD_INPUT') throw badInput(`${flag}: ${e.message}`);
    throw e;
  }
}

/** A trace as `loadTrace` reads it. */
export interface LoadedTrace {
  readonly jobs: TraceJob[];
  readonly skipped: readonly SkippedRows[];
  readonly notes: string[];
}

/**
 * Reads the jobs `--trace` names: a built-in trace, the synthetic generator, or a file in any of the
 * three formats (also the comparison runner's, bench/compare.ts).
 */
export function loadTrace(opts: Pick<SimulateOptions, 'trace' | 'arrivalRate'> & { readonly workload?: readonly string[] }, fleet: Fleet, mix: WorkloadMix, seed: number, limit: number | undefined): LoadedTrace {
  const random = createRandom(seed);
  const model = fleet.gpus[0];
  if (!model) throw badInput(`--fleet '${fleet.spec}' has no GPUs`);
  const notes: string[] = [];
  if ((opts.trace === 'synthetic' || opts.trace === 'deeppool') && limit !== undefined && limit > MAX_GENERATED_JOBS) {
    throw badInput(`--limit ${limit}: the ${opts.trace} trace makes at most ${MAX_GENERATED_JOBS} jobs (six times the Philly trace); give a smaller --limit`);
  }
  const alibaba = (text: string, file: string): LoadedTrace => {
    if (new Set(fleet.gpus.map((g) => g.name)).size > 1) notes.push(`fractional GPU requests are mapped to ${model.name} profiles (the fleet's first model)`);
    const t = readAlibabaTrace(text, { random, mix, gpuModel: model, file, ...(limit === undefined ? {} : { limit }) });
    return { ...t, notes };
  };
  const philly = (text: string, file: string): LoadedTrace => ({ ...readPhillyTrace(text, { random, mix, file, ...(limit === undefined ? {} : { limit }) }), notes });
  switch (opts.trace) {
    case 'philly':
      return philly(builtInTraceText(BUILT_IN_TRACES.philly), 'philly.csv');
    case 'alibaba':
      return alibaba(builtInTraceText(BUILT_IN_TRACES.alibaba), 'openb_pod_list_default.csv');
    case 'synthetic': {
      // Multi-GPU jobs no larger than the fleet, so that every job can run.
      const sizes = DEFAULT_MULTI_GPU_SIZES.filter((n) => n <= fleet.gpus.length);
      const shape = sizes.length > 0 ? { multiGpuSizes: sizes } : { multiGpuShare: 0 };
      const rate = opts.arrivalRate === undefined ? (fleet.gpus.length * 3600) / meanJobGpuSeconds(shape) : nonNegative(opts.arrivalRate, '--arrival-rate', true);
      notes.push(`synthetic: ${limit ?? DEFAULT_SYNTHETIC_JOBS} jobs, ${rate.toFixed(1)} arrivals per hour`);
      return { jobs: syntheticTrace({ jobs: limit ?? DEFAULT_SYNTHETIC_JOBS, arrivalRatePerHour: rate, mix, random, ...shape }), skipped: [], notes };
    }
    case 'deeppool': {
      // Strong-scaled foreground jobs (VGG-16, WRN-101-2, Inception-v3) and single-GPU background jobs.
      const n = fleet.gpus.length;
      const rate = opts.arrivalRate === undefined ? (n * 3600) / meanDeepPoolJobGpuSeconds(n) : nonNegative(opts.arrivalRate, '--arrival-rate', true);
      notes.push(`deeppool: ${limit ?? DEFAULT_SYNTHETIC_JOBS} jobs, ${rate.toFixed(1)} arrivals per hour, a tenth of them strong-scaled foreground jobs`);
      return { jobs: deepPoolTrace({ jobs: limit ?? DEFAULT_SYNTHETIC_JOBS, fleetGpus: n, arrivalRatePerHour: rate, mix, random }), skipped: [], notes };
    }
  }
  if (opts.arrivalRate !== undefined) throw badInput('--arrival-rate is for --trace synthetic or deeppool only');
  if (!existsSync(opts.trace)) throw badInput(`--trace '${opts.trace}': no such file; use philly, alibaba, synthetic, deeppool or a CSV file (header arrival,workload,gpus,duration)`);
  const text = readUserText(opts.trace, '--trace', 'give a CSV file (header arrival,workload,gpus,duration), or philly, alibaba, synthetic or deeppool');
  const format = traceFormatOf(text);
  if (format.name === 'alibaba') return alibaba(text, opts.trace);
  return { ...format.read(text, { random, mix, gpuModel: model, file: opts.trace, workloads: workloadFiles(opts.workload ?? []), ...(limit === undefined ? {} : { limit }) }), notes };
}

/** Every job's profile must exist on some GPU of the fleet. */
function checkProfiles(jobs: readonly TraceJob[], fleet: Fleet): void {
  const offered = new Set(fleet.gpus.flatMap((g) => g.giProfiles.map((p) => p.name)));
  const bad = jobs.find((j) => j.profile !== null && !offered.has(j.profile));
  if (bad) {
    const models = [...new Set(fleet.gpus.map((g) => g.name))].join(', ');
    throw badInput(`job '${bad.id}' asks for MIG profile ${bad.profile}, which no GPU of fleet '${fleet.spec}' (${models}) offers; change the profile or the fleet`);
  }
}

const METRIC_KEYS = [
  'completed',
  'makespanSeconds',
  'avgJctSeconds',
  'p50JctSeconds',
  'p95JctSeconds',
  'p99JctSeconds',
  'avgQueueSeconds',
  'utilization',
  'throughputJobsPerHour',
  'reconfigurations',
] as const;

function metricsJson(m: SimMetrics): Record<(typeof METRIC_KEYS)[number], number> {
  return Object.fromEntries(METRIC_KEYS.map((k) => [k, m[k]])) as Record<(typeof METRIC_KEYS)[number], number>;
}

/** A priority's figures: a run's less its reconfigurations, which belong to no priority (PriorityMetrics). */
const PRIORITY_METRIC_KEYS = METRIC_KEYS.filter((k): k is Exclude<(typeof METRIC_KEYS)[number], 'reconfigurations'> => k !== 'reconfigurations');

function priorityMetricsJson(m: PriorityMetrics): Record<(typeof PRIORITY_METRIC_KEYS)[number], number> {
  return Object.fromEntries(PRIORITY_METRIC_KEYS.map((k) => [k, m[k]])) as Record<(typeof PRIORITY_METRIC_KEYS)[number], number>;
}

/** Mean, standard deviation, least and most of some numbers. */
export interface Spread {
  readonly mean: number;
  readonly std: number;
  readonly min: number;
  readonly max: number;
}

export function spreadOf(xs: readonly number[]): Spread {
  const n = xs.length;
  if (n === 0) return { mean: 0, std: 0, min: 0, max: 0 };
  const mean = xs.reduce((s, x) => s + x, 0) / n;
  const std = Math.sqrt(xs.reduce((s, x) => s + (x - mean) ** 2, 0) / n);
  return { mean, std, min: Math.min(...xs), max: Math.max(...xs) };
}

/** What a run's JSON says of itself. */
interface RunSettings {
  readonly info: string;
  readonly preemptionCostSeconds: number;
  readonly seed: number;
  readonly seeds: number;
}

/** The judging figures of one run, flat, for means and spreads. */
function judged(r: SimulationResult): Record<string, number> {
  return {
    ...metricsJson(r.metrics),
    'slowdown.p50': r.slowdown.p50,
    'slowdown.p95': r.slowdown.p95,
    'slowdown.p99': r.slowdown.p99,
    'bigJobs.count': r.bigJobs.count,
    'bigJobs.completed': r.bigJobs.completed,
    'bigJobs.avgJctSeconds': r.bigJobs.avgJctSeconds,
    'bigJobs.p99JctSeconds': r.bigJobs.p99JctSeconds,
    'preemptions.total': r.preemptions.total,
    'preemptions.maxPerJob': r.preemptions.maxPerJob,
  };
}

/**
 * The `--json` shape: per policy the metric fields (means over the seeds), `slowdown`, `bigJobs`,
 * `preemptions` and `byPriority` (of the first seed), and with several seeds `spread` (mean, std,
 * min, max of every figure) and `seeds` (each seed's figures); once per run `bounds` (the mean
 * over seeds of the offline lower bounds) and the settings.
 */
export function simulationJson(trace: string, fleet: string, jobs: number, perPolicy: readonly PolicyRuns[], settings: RunSettings): unknown {
  const firstRuns = perPolicy.map((p) => p.runs[0]).filter((r): r is SimulationResult => r !== undefined);
  const boundsRuns = perPolicy[0]?.runs ?? [];
  return {
    trace,
    fleet,
    jobs,
    ...settings,
    bounds: {
      avgJctSeconds: spreadOf(boundsRuns.map((r) => r.bounds.avgJctSeconds)).mean,
      makespanSeconds: spreadOf(boundsRuns.map((r) => r.bounds.makespanSeconds)).mean,
    },
    unknownMemoryJobs: boundsRuns[0]?.unknownMemoryJobs ?? 0,
    policies: perPolicy.map((p, i) => {
      const flat = p.runs.map(judged);
      const keys = Object.keys(flat[0] ?? {});
      const spreads = Object.fromEntries(keys.map((k) => [k, spreadOf(flat.map((f) => f[k] as number))])) as Record<string, Spread>;
      const mean = (k: string) => spreads[k]?.mean ?? 0;
      const r = firstRuns[i] as SimulationResult;
      return {
        name: p.name,
        ...Object.fromEntries(METRIC_KEYS.map((k) => [k, mean(k)])),
        slowdown: { p50: mean('slowdown.p50'), p95: mean('slowdown.p95'), p99: mean('slowdown.p99') },
        bigJobs: { count: mean('bigJobs.count'), completed: mean('bigJobs.completed'), avgJctSeconds: mean('bigJobs.avgJctSeconds'), p99JctSeconds: mean('bigJobs.p99JctSeconds') },
        preemptions: { total: mean('preemptions.total'), maxPerJob: Math.max(0, ...flat.map((f) => f['preemptions.maxPerJob'] as number)) },
        byPriority: Object.fromEntries((['foreground', 'background'] as const).map((pr) => [pr, { jobs: r.byPriority[pr].jobs, ...priorityMetricsJson(r.byPriority[pr]) }])) as Record<Priority, unknown>,
        ...(r.byUser ? { byUser: r.byUser } : {}),
        ...(p.runs.length > 1 ? { spread: spreads, seeds: flat } : {}),
      };
    }),
  };
}

function renderText(title: string, perPolicy: readonly PolicyRuns[]): string {
  const several = perPolicy.some((p) => p.runs.length > 1);
  const fmt = (xs: readonly number[], f: (v: number) => string): string => {
    const sp = spreadOf(xs);
    return several ? `${f(sp.mean)} ±${f(sp.std)}` : f(sp.mean);
  };
  const head = ['POLICY', 'COMPLETED', 'MAKESPAN', 'AVG JCT', 'P50 JCT', 'P99 JCT', 'P50 SLOW', 'P99 SLOW', 'BIG P99 JCT', 'PREEMPT (MAX)', 'UTIL', 'RECONFIGS'];
  const x = (v: number) => `${v.toFixed(2)}x`;
  const rows = perPolicy.map((p) => {
    const rs = p.runs;
    const pick = (f: (r: SimulationResult) => number) => rs.map(f);
    return [
      p.name,
      fmt(pick((r) => r.metrics.completed), (v) => v.toFixed(0)) + `/${rs[0]?.metrics.jobs ?? 0}`,
      fmt(pick((r) => r.metrics.makespanSeconds), durationText),
      fmt(pick((r) => r.metrics.avgJctSeconds), durationText),
      fmt(pick((r) => r.metrics.p50JctSeconds), durationText),
      fmt(pick((r) => r.metrics.p99JctSeconds), durationText),
      fmt(pick((r) => r.slowdown.p50), x),
      fmt(pick((r) => r.slowdown.p99), x),
      // '-' when no big job completed (a p99 of no JCTs is no figure); over the seeds where some did.
      rs.some((r) => r.bigJobs.completed > 0) ? fmt(rs.filter((r) => r.bigJobs.completed > 0).map((r) => r.bigJobs.p99JctSeconds), durationText) : '-',
      `${fmt(pick((r) => r.preemptions.total), (v) => v.toFixed(0))} (${Math.max(0, ...pick((r) => r.preemptions.maxPerJob))})`,
      fmt(pick((r) => r.metrics.utilization * 100), (v) => `${v.toFixed(1)}%`),
      fmt(pick((r) => r.metrics.reconfigurations), (v) => v.toFixed(0)),
    ];
  });
  const parts = [title, renderTable(head, rows)];
  const bounds = perPolicy[0]?.runs ?? [];
  if (bounds.length > 0) {
    parts.push(`lower bounds: avg JCT ${fmt(bounds.map((r) => r.bounds.avgJctSeconds), durationText)}, makespan ${fmt(bounds.map((r) => r.bounds.makespanSeconds), durationText)} (no policy can do better${(bounds[0]?.bounds.neverRun ?? 0) > 0 ? `; over the jobs that can run, ${bounds[0]?.bounds.neverRun} of the trace never can` : ''})`);
  }
  const unknown = bounds[0]?.unknownMemoryJobs ?? 0;
  if (unknown > 0) parts.push(`${unknown} of ${bounds[0]?.metrics.jobs ?? 0} jobs have unknown memory: placed only on a whole GPU or the profile they asked for, never on a slice on a guess`);
  const results = perPolicy.map((p) => p.runs[0]).filter((r): r is SimulationResult => r !== undefined);
  if (results.some((r) => r.byPriority.background.jobs > 0)) {
    const columns = priorityMetricColumns('terminal');
    const prioRows = priorityRows(results).map((r) => [perPolicy[r.index]?.name ?? results[r.index]!.policy, r.priority, ...columns.cells(r.metrics)]);
    parts.push('', `per priority${several ? ' (first seed)' : ''}`, renderTable(['POLICY', 'PRIORITY', ...columns.heads], prioRows));
  }
  return parts.join('\n');
}

/** A timeline sampling period that gives the report about 500 points over the trace's span. */
function samplePeriod(jobs: readonly TraceJob[]): number {
  const span = jobs.reduce((s, j) => Math.max(s, j.arrival + j.work), 0);
  return Math.max(60, span / 500);
}

/** `migpool simulate`: replay a trace through policies on a simulated fleet and compare them. */
export function registerSimulate(program: Command, io: Io): void {
  program
    .command('simulate')
    .description('replay a job trace through scheduling policies on a simulated fleet and compare them')
    .requiredOption(
      '--trace <trace>',
      `philly, alibaba, synthetic, deeppool (strong-scaled VGG-16/WRN/Inception foreground jobs on 8+ GPUs and single-GPU background jobs: compare --policies dp,deeppool), or a CSV file in any format below (${TRACE_FORMATS.map((f) => f.name).join(', ')})`,
    )
    .requiredOption('--fleet <spec>', 'GPUs by model, e.g. 64xA100-SXM4-40GB or 32xA100-40GB,8xH100-80GB')
    .requiredOption('--policies <list>', `comma-separated, each once: ${POLICY_NAMES.join(', ')} (see below)`)
    .option('--mix <mix>', 'workloads of single-GPU jobs and their shares', DEFAULT_MIX_SPEC)
    .option('--workload <file.yaml>', "a workload measured with 'migpool bench --out' that --mix and a jobs CSV's rows may name (repeatable)", (v: string, prev: string[]) => [...prev, v], [] as string[])
    .option('--seed <n>', 'seed of the workload draws, the synthetic trace and the policies', '1')
    .option('--limit <jobs>', 'only the first JOBS jobs by arrival (synthetic: how many to make; default 1000)')
    .option('--reconfigure-seconds <s>', `seconds a MIG re-partition takes (default ${DEFAULT_RECONFIGURE_SECONDS}, an assumption: see src/sim/engine.ts)`)
    .option('--arrival-rate <jobs/h>', 'synthetic and deeppool traces: arrivals per hour (default: one fleet\'s worth of whole-GPU work per hour)')
    .option('--info <mode>', `what policies learn of job lengths: ${INFO_MODES.join(', ')} (see README, "What a policy knows")`, DEFAULT_INFO_MODE)
    .option('--info-seed <n>', 'seed of the estimates\' noise (default: the seed)')
    .option('--preemption-cost <s>', 'seconds of progress a preempted job loses when it starts again', String(DEFAULT_PREEMPTION_COST_SECONDS))
    .option('--seeds <n>', 'repeat over N seeds (seed, seed+1, ...) and print mean and spread', '1')
    .option('--users <spec>', 'users sharing the pool, NAME[:WEIGHT[:qGPUS]],... (alice:2,bob:1,carol:1:q4): trace jobs go to them round robin in arrival order; reports each user\'s share under contention and slowdown')
    .option('--json', 'print JSON')
    .option('--report <file.html>', 'write an HTML report: the table, JCT distribution, utilisation and queue length over time')
    .addHelpText('after', `\n${policyHelp()}\n\n${traceFormatHelp()}`)
    .action((opts: SimulateOptions) => runSimulate(opts, io));
}

/** One policy's results over the seeds of a run. */
interface PolicyRuns {
  readonly name: string;
  readonly runs: SimulationResult[];
}

async function runSimulate(opts: SimulateOptions, io: Io): Promise<void> {
  const seed = wholeNumber(opts.seed, '--seed', 0);
  const seeds = wholeNumber(opts.seeds, '--seeds', 1);
  if (seeds > MAX_SEEDS) throw badInput(`--seeds ${opts.seeds} is over the limit of ${MAX_SEEDS} (the mean over ${MAX_SEEDS} seeds is within 3% of one seed's spread); give fewer seeds`);
  const limit = opts.limit === undefined ? undefined : wholeNumber(opts.limit, '--limit', 1);
  const reconfigureSeconds = opts.reconfigureSeconds === undefined ? undefined : nonNegative(opts.reconfigureSeconds, '--reconfigure-seconds');
  const info = parseInfoMode(opts.info);
  const infoSeed = opts.infoSeed === undefined ? undefined : wholeNumber(opts.infoSeed, '--info-seed', 0);
  const preemptionCostSeconds = nonNegative(opts.preemptionCost, '--preemption-cost');
  const fleet = withFlag('--fleet', () => parseFleet(opts.fleet));
  // gavel solves its allocation with HiGHS on fleets of several GPU models.
  const highs = /gavel/i.test(opts.policies) && new Set(fleet.gpus.map((g) => g.name)).size > 1 ? await loadHighs() : undefined;
  const policies = withFlag('--policies', () => parsePolicies(opts.policies, highs ? { highs } : {}));
  const workloads = workloadFiles(opts.workload);
  const mix = withFlag('--mix', () => parseMix(opts.mix, workloads));
  const users = opts.users === undefined ? undefined : withFlag('--users', () => parseUsersSpec(opts.users as string));
  const names = policies.map((p) => p.name);
  const bar =
    !opts.json && process.stderr.isTTY
      ? new cliProgress.SingleBar({ format: 'simulate {policy} [{bar}] {percentage}% | run {n}/{count}', stream: process.stderr }, cliProgress.Presets.shades_classic)
      : null;
  const perPolicy: PolicyRuns[] = names.map((name) => ({ name, runs: [] }));
  const count = policies.length * seeds;
  let first: LoadedTrace | null = null;
  let scaled = false;
  try {
    bar?.start(count * 1000, 0, { policy: names[0] ?? '', n: 1, count });
    for (let k = 0; k < seeds; k++) {
      const runSeed = seed + k;
      const loaded = loadTrace(opts, fleet, mix, runSeed, limit);
      const trace = users ? { ...loaded, jobs: assignUsers(loaded.jobs, users.names) } : loaded;
      if (trace.jobs.length === 0) throw badInput(`--trace '${opts.trace}' has no jobs to simulate`);
      if (k === 0) {
        checkProfiles(trace.jobs, fleet);
        const tooLarge = trace.jobs.filter((j) => j.gpus > fleet.gpus.length).length;
        if (tooLarge > 0) trace.notes.push(`${tooLarge} jobs ask for more GPUs than the fleet's ${fleet.gpus.length}: they never run`);
        const overQuota = users ? trace.jobs.filter((j) => j.gpus > (users.users.get(j.user ?? '')?.quotaGpus ?? Number.POSITIVE_INFINITY)).length : 0;
        if (overQuota > 0) trace.notes.push(`${overQuota} jobs ask for more GPUs than their user's quota: they never run`);
        first = trace;
      }
      const sampleEverySeconds = samplePeriod(trace.jobs);
      // Strong-scaled jobs (the deeppool trace) run at the burst planner's speeds (src/burst/scaling.ts).
      const scaling = trace.jobs.some((j) => j.strongScaling !== undefined) ? builtInScalingModel() : undefined;
      scaled ||= scaling !== undefined;
      for (const [i, name] of names.entries()) {
        const n = k * policies.length + i;
        bar?.update(n * 1000, { policy: name, n: n + 1, count });
        // A fresh policy per run: policies may keep state between calls.
        const policy = k === 0 ? (policies[i] as Policy) : parsePolicy(name, highs ? { highs } : {});
        perPolicy[i]!.runs.push(
          simulate({
            fleet,
            jobs: trace.jobs,
            policy,
            seed: runSeed,
            info: { mode: info, seed: infoSeed === undefined ? runSeed : infoSeed + k },
            preemptionCostSeconds,
            sampleEverySeconds,
            ...(reconfigureSeconds === undefined ? {} : { reconfigureSeconds }),
            ...(scaling ? { scaling } : {}),
            ...(users ? { users: users.users } : {}),
            onProgress: (f) => bar?.update(Math.round((n + f) * 1000), { policy: name, n: n + 1, count }),
          }),
        );
      }
    }
    bar?.update(count * 1000);
  } finally {
    bar?.stop();
  }
  const trace = first as LoadedTrace;
  const results = perPolicy.map((p) => p.runs[0] as SimulationResult);
  const skipped = trace.skipped.map((x) => `${x.count} ${x.reason}`).join(', ');
  const notes = [
    `seed ${seed}${seeds > 1 ? ` to ${seed + seeds - 1} (${seeds} seeds: mean, and ± the standard deviation)` : ''}; info ${info}${infoSeed === undefined ? '' : ` (seed ${infoSeed})`}; preemption cost ${preemptionCostSeconds} s; mix ${formatMix(mix)}${reconfigureSeconds === undefined ? '' : `; re-partitions take ${reconfigureSeconds} s`}`,
    ...(skipped === '' ? [] : [`rows skipped: ${skipped}`]),
    ...trace.notes,
    ...(scaled
      ? results.map((r, i) => {
          const w = r.workDone ?? { foreground: 0, background: 0 };
          const span = r.metrics.makespanSeconds;
          const rate = (x: number) => (span > 0 ? x / span : 0).toFixed(1);
          return `${names[i] ?? r.policy}: ${rate(w.foreground + w.background)} GPUs' worth of work per second over the makespan (foreground ${rate(w.foreground)}, background ${rate(w.background)})`;
        })
      : []),
  ];
  if (opts.report) writeUserFile(opts.report, simulationReportHtml({ trace: opts.trace, fleet: fleet.spec, results, jobs: trace.jobs.length, notes }), '--report');
  if (opts.json) {
    writeJson(io, simulationJson(opts.trace, fleet.spec, trace.jobs.length, perPolicy, { info, preemptionCostSeconds, seed, seeds }));
    return;
  }
  io.out(renderText(`${opts.trace} on ${fleet.spec}: ${trace.jobs.length} jobs`, perPolicy));
  if (users) io.out(renderUsers(perPolicy, seeds > 1));
  for (const n of notes) io.err(`note: ${n}`);
  if (opts.report) io.out(`report: ${opts.report}`);
}

/** Each user's share of the pool under contention against their weight's, and their slowdowns (first seed). */
function renderUsers(perPolicy: readonly PolicyRuns[], several: boolean): string {
  const table = usersTable(perPolicy.map((p) => ({ policy: p.name, byUser: p.runs[0]?.byUser })));
  const contended = perPolicy.map((p) => `${p.name} ${durationText(p.runs[0]?.byUser?.[0]?.contendedSeconds ?? 0)}`).join(', ');
  return [
    '',
    `per user${several ? ' (first seed)' : ''}: SHARE is the user's part of the GPUs held under contention (while every user had a job waiting: ${contended}); AVG GPUS, GPUs' worth held then; PEAK GPUS, the most at once`,
    renderTable(table.heads, table.rows),
  ].join('\n');
}
