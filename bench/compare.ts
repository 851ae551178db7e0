import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Worker } from 'node:worker_threads';
import { badInput, MigpoolError } from '../src/errors.js';
import { parsePolicy } from '../src/sched/registry.js';
import { checkTargets, markdownTable, markdownTargets, summarize, type RunFigures, type RunRecord } from '../src/sim/compare.js';
import { INFO_MODES } from '../src/sim/info.js';
import { DEFAULT_INFO_MODES, DEFAULT_POLICIES, DEFAULT_PREEMPTION_COST, DEFAULT_SEEDS, INFO_BLIND_POLICIES, matrixTraces, type MatrixTrace } from './compare-matrix.js';
import type { RunTask } from './compare-run.js';

/**
 * `npm run compare`: issue 17's comparison matrix (traces x policies x information models x
 * seeds) through the simulator's library, in worker threads, with progress on stderr; writes
 * `compare.md` (a table per trace and the target check of migpool) and `compare.json` (every
 * run's figures, the summaries, the checks and the timings) into `--out`.
 */

const HELP = `usage: npm run compare -- [options]
  --traces LIST          trace keys (default all): ${matrixTraces()
    .map((t) => t.key)
    .join(',')}
  --policies LIST        policies (default ${DEFAULT_POLICIES.join(',')}; miso is slow)
  --info LIST            information models (default ${DEFAULT_INFO_MODES.join(',')})
  --seeds N              seeds per cell, from --seed up (default ${DEFAULT_SEEDS})
  --seed N               first seed (default 1)
  --preemption-cost S    seconds a preempted job loses (default ${DEFAULT_PREEMPTION_COST})
  --workers N            worker threads (default 2, at most the cores)
  --out DIR              where compare.md and compare.json go (default compare-results)
  --reuse FILE.json      take the runs of policies not in --policies from an earlier compare.json
  --rerun-blind          run tiresias and gavel under every --info too (they read no estimate)
  --report-from FILES    simulate nothing: write the tables from the runs in these compare.json files
                         (comma-separated; a later file's runs of a policy on a trace replace all earlier ones)`;

interface Settings {
  readonly traces: MatrixTrace[];
  readonly policies: string[];
  readonly infos: string[];
  readonly seeds: number[];
  readonly preemptionCostSeconds: number;
  readonly workers: number;
  readonly out: string;
  readonly reuse: string | null;
  readonly rerunBlind: boolean;
  readonly reportFrom: string[] | null;
}

function list(value: string | undefined, fallback: readonly string[]): string[] {
  return value === undefined ? [...fallback] : value.split(',').map((s) => s.trim()).filter((s) => s !== '');
}

function whole(value: string | undefined, fallback: number, flag: string, min: number): number {
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value) || Number(value) < min) throw badInput(`${flag} must be a whole number of at least ${min}, got '${value}'`);
  return Number(value);
}

/** The settings; node:util parseArgs's errors (an unknown option, a missing value) as one-line bad input. */
function settingsOf(argv: string[]): Settings | null {
  try {
    return settingsFrom(argv);
  } catch (e) {
    if (e instanceof MigpoolError) throw e;
    throw badInput(`${e instanceof Error ? e.message : String(e)}; see npm run compare -- --help`);
  }
}

function settingsFrom(argv: string[]): Settings | null {
  const { values } = parseArgs({
    args: argv,
    options: {
      traces: { type: 'string' },
      policies: { type: 'string' },
      info: { type: 'string' },
      seeds: { type: 'string' },
      seed: { type: 'string' },
      'preemption-cost': { type: 'string' },
      workers: { type: 'string' },
      out: { type: 'string' },
      reuse: { type: 'string' },
      'rerun-blind': { type: 'boolean' },
      'report-from': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return null;
  const all = matrixTraces();
  const traces = list(values.traces, all.map((t) => t.key)).map((k) => {
    const t = all.find((x) => x.key === k);
    if (!t) throw badInput(`--traces: no trace '${k}'; use some of ${all.map((x) => x.key).join(', ')}`);
    return t;
  });
  const policies = list(values.policies, DEFAULT_POLICIES);
  for (const p of policies) {
    try {
      parsePolicy(p);
    } catch (e) {
      throw badInput(`--policies: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
  const infos = list(values.info, DEFAULT_INFO_MODES);
  for (const m of infos) if (!(INFO_MODES as readonly string[]).includes(m)) throw badInput(`--info: no information model '${m}'; use some of ${INFO_MODES.join(', ')}`);
  const first = whole(values.seed, 1, '--seed', 0);
  const seeds = Array.from({ length: whole(values.seeds, DEFAULT_SEEDS, '--seeds', 1) }, (_, k) => first + k);
  const cost = values['preemption-cost'] === undefined ? DEFAULT_PREEMPTION_COST : Number(values['preemption-cost']);
  if (!(cost >= 0)) throw badInput(`--preemption-cost must be a non-negative number of seconds, got '${values['preemption-cost']}'`);
  const workers = Math.min(whole(values.workers, 2, '--workers', 1), availableParallelism());
  if (traces.length === 0 || policies.length === 0 || infos.length === 0) throw badInput('--traces, --policies and --info each need at least one entry');
  return { traces, policies, infos, seeds, preemptionCostSeconds: cost, workers, out: values.out ?? 'compare-results', reuse: values.reuse ?? null, rerunBlind: values['rerun-blind'] === true, reportFrom: values['report-from'] === undefined ? null : list(values['report-from'], []) };
}

/** A task and the (info) rows its figures are reported under. */
interface Planned {
  readonly task: RunTask;
  readonly reportAs: readonly string[];
}

function plan(s: Settings): Planned[] {
  const out: Planned[] = [];
  for (const trace of s.traces) {
    for (const seed of s.seeds) {
      for (const policy of s.policies) {
        const blind = !s.rerunBlind && INFO_BLIND_POLICIES.has(policy.split(':')[0] ?? policy);
        const runs = blind ? [{ info: 'none', reportAs: s.infos }] : s.infos.map((info) => ({ info, reportAs: [info] }));
        for (const r of runs) out.push({ task: { id: out.length, trace, policy, info: r.info, seed, preemptionCostSeconds: s.preemptionCostSeconds }, reportAs: r.reportAs });
      }
    }
  }
  return out;
}

/** Runs the tasks on `workers` threads, the earliest first; calls `done` as each ends. */
async function runAll(tasks: readonly RunTask[], workers: number, done: (t: RunTask, f: RunFigures | Error) => void): Promise<void> {
  const queue = [...tasks];
  const url = new URL('./compare-worker.js', import.meta.url);
  const one = (): Promise<void> =>
    new Promise((resolve, reject) => {
      const w = new Worker(url);
      let current: RunTask | undefined;
      const next = () => {
        current = queue.shift();
        if (current === undefined) {
          void w.terminate().then(() => resolve());
          return;
        }
        w.postMessage(current);
      };
      w.on('message', (m: { id: number; figures?: RunFigures; error?: string }) => {
        if (current) done(current, m.figures ?? new Error(m.error ?? 'no answer'));
        next();
      });
      w.on('error', reject);
      next();
    });
  await Promise.all(Array.from({ length: Math.min(workers, tasks.length) }, one));
}

function hms(seconds: number): string {
  const m = Math.floor(seconds / 60);
  return m > 0 ? `${m} min ${Math.round(seconds - m * 60)} s` : `${seconds.toFixed(1)} s`;
}

/** The runs of a compare.json that npm run compare wrote. */
function recordsOf(file: string, flag: string): RunRecord[] {
  let json: { records?: RunRecord[] };
  try {
    json = JSON.parse(readFileSync(file, 'utf8')) as { records?: RunRecord[] };
  } catch (e) {
    throw badInput(`${flag} '${file}': cannot read it as JSON (${e instanceof Error ? e.message : String(e)}); give a compare.json that npm run compare wrote`);
  }
  if (!Array.isArray(json.records)) throw badInput(`${flag} '${file}': no "records" list; give a compare.json that npm run compare wrote`);
  return json.records;
}

/** Earlier runs to keep: those of other policies, on the traces, models and seeds asked for. */
function reused(s: Settings): RunRecord[] {
  if (s.reuse === null) return [];
  const keys = new Set(s.traces.map((t) => t.key));
  return recordsOf(s.reuse, '--reuse').filter((r) => keys.has(r.trace) && !s.policies.includes(r.policy) && s.infos.includes(r.info) && s.seeds.includes(r.seed));
}

/**
 * `--report-from`: the saved runs of the traces, models and seeds asked for. A policy's runs on a
 * trace all come from the last file that has any (never one policy version's seeds beside another's).
 */
function saved(s: Settings, files: readonly string[]): RunRecord[] {
  const byPolicy = new Map<string, RunRecord[]>();
  const keys = new Set(s.traces.map((t) => t.key));
  for (const f of files) {
    const mine = new Map<string, RunRecord[]>();
    for (const r of recordsOf(f, '--report-from')) {
      if (!keys.has(r.trace) || !s.infos.includes(r.info) || !s.seeds.includes(r.seed)) continue;
      const k = `${r.trace}|${r.policy}`;
      mine.set(k, [...(mine.get(k) ?? []), r]);
    }
    for (const [k, runs] of mine) byPolicy.set(k, runs);
  }
  return [...byPolicy.values()].flat();
}

/** The markdown report and the JSON of the runs so far. */
function report(s: Settings, records: readonly RunRecord[], kept: readonly RunRecord[], failures: readonly string[], wall: number, total: number, final: boolean): { md: string; json: unknown } {
  // The matrix's order, whatever order the workers ended in.
  const order = (r: RunRecord) => s.traces.findIndex((t) => t.key === r.trace) * 1e6 + r.seed;
  const sorted = [...records].sort((a, b) => order(a) - order(b));
  const summaries = summarize(sorted);
  const targets = checkTargets(summaries);
  const timing = s.traces.map((t) => {
    const fresh = [...new Set(sorted.filter((r) => r.trace === t.key && !kept.includes(r)).map((r) => r.figures))];
    const perPolicy = s.policies.map((p) => ({ policy: p, seconds: [...new Set(sorted.filter((r) => r.trace === t.key && r.policy === p && !kept.includes(r)).map((r) => r.figures))].reduce((x, f) => x + f.wallSeconds, 0) }));
    return { trace: t.key, runs: fresh.length, seconds: fresh.reduce((x, f) => x + f.wallSeconds, 0), perPolicy };
  });
  const done = new Set(sorted.filter((r) => !kept.includes(r)).map((r) => r.figures)).size;
  const md: string[] = [
    `# Policy comparison (issue 17)`,
    '',
    `Seeds ${s.seeds.join(', ')}; --info ${s.infos.join(', ')}; --preemption-cost ${s.preemptionCostSeconds}; mean ± standard deviation over seeds.`,
    `Tiresias and gavel read no estimate: ${s.rerunBlind ? 'run under every --info (--rerun-blind).' : 'they ran once per seed (--info none) and that run stands in every --info row ("reads none").'}`,
    ...(kept.length > 0 ? [`Runs of ${[...new Set(kept.map((r) => r.policy))].join(', ')} reused from ${s.reuse}.`] : []),
    `${final ? 'Measured' : 'PARTIAL, still running'}: ${done} of ${total} runs in ${hms(wall)} wall on ${s.workers} worker thread(s).`,
  ];
  for (const t of s.traces) {
    const sum = summaries.find((x) => x.trace === t.key);
    const time = timing.find((x) => x.trace === t.key);
    md.push('', `## ${t.key}: ${t.note}`, '');
    if (!sum) {
      md.push('No runs yet.');
      continue;
    }
    md.push(markdownTable(sum), '', `Targets for migpool (means over seeds):`, '', markdownTargets(targets, t.key));
    if (time && time.runs > 0) md.push('', `Run time here: ${time.runs} runs, ${hms(time.seconds)} of simulation (${time.perPolicy.map((p) => `${p.policy} ${hms(p.seconds)}`).join(', ')}).`);
  }
  if (failures.length > 0) md.push('', '## Failed runs', '', ...failures.map((f) => `- ${f}`));
  const settings = { traces: s.traces, policies: s.policies, info: s.infos, seeds: s.seeds, preemptionCostSeconds: s.preemptionCostSeconds, workers: s.workers, reuse: s.reuse, rerunBlind: s.rerunBlind, reportFrom: s.reportFrom };
  return { md: `${md.join('\n')}\n`, json: { settings, final, wallSeconds: wall, timing, records: sorted, summaries, targets, failures } };
}

async function main(): Promise<void> {
  const s = settingsOf(process.argv.slice(2));
  if (s === null) {
    process.stdout.write(`${HELP}\n`);
    return;
  }
  if (s.reportFrom !== null) {
    const records = saved(s, s.reportFrom);
    const policies = [...new Set([...s.policies, ...records.map((r) => r.policy)])].filter((p) => records.some((r) => r.policy === p));
    const r = report({ ...s, policies }, records, [], [], 0, records.length, true);
    const md = r.md.replace(/^Measured: .*$/m, `Tables from the runs saved in ${s.reportFrom.join(', ')} (nothing simulated now; run times as measured then).`);
    mkdirSync(s.out, { recursive: true });
    writeFileSync(join(s.out, 'compare.md'), md);
    writeFileSync(join(s.out, 'compare.json'), `${JSON.stringify(r.json, null, 1)}\n`);
    process.stdout.write(`${md}\ncompare: wrote ${join(s.out, 'compare.md')} and ${join(s.out, 'compare.json')}\n`);
    return;
  }
  const kept = reused(s);
  const planned = plan(s);
  const byId = new Map(planned.map((p) => [p.task.id, p]));
  const records: RunRecord[] = [...kept];
  const failures: string[] = [];
  const t0 = performance.now();
  mkdirSync(s.out, { recursive: true });
  const mdPath = join(s.out, 'compare.md');
  const jsonPath = join(s.out, 'compare.json');
  const write = (final: boolean): string => {
    const r = report(s, records, kept, failures, (performance.now() - t0) / 1000, planned.length, final);
    writeFileSync(mdPath, r.md);
    writeFileSync(jsonPath, `${JSON.stringify(r.json, null, 1)}\n`);
    return r.md;
  };
  let n = 0;
  process.stderr.write(`compare: ${planned.length} runs on ${s.workers} worker thread(s)${kept.length > 0 ? `, ${kept.length} runs reused from ${s.reuse}` : ''}; ${mdPath} and ${jsonPath} are rewritten after every run\n`);
  await runAll(
    planned.map((p) => p.task),
    s.workers,
    (t, f) => {
      n++;
      const what = `${t.trace.key} ${t.policy} --info ${t.info} seed ${t.seed}`;
      const elapsed = (performance.now() - t0) / 1000;
      if (f instanceof Error) {
        failures.push(`${what}: ${f.message}`);
        process.stderr.write(`[${n}/${planned.length}] ${what}: FAILED: ${f.message}\n`);
      } else {
        const reportAs = byId.get(t.id)?.reportAs ?? [t.info];
        for (const info of reportAs) records.push({ trace: t.trace.key, policy: t.policy, info, seed: t.seed, figures: f, ...(reportAs.length > 1 || reportAs[0] !== t.info ? { sharedAcrossInfo: true } : {}) });
        const eta = (elapsed / n) * (planned.length - n);
        process.stderr.write(`[${n}/${planned.length}] ${what}: ${f.wallSeconds.toFixed(1)} s, avg JCT ${(f.avgJctSeconds / 3600).toFixed(2)} h, ${f.completed}/${f.jobs} done (elapsed ${hms(elapsed)}, about ${hms(eta)} left)\n`);
      }
      write(false);
    },
  );
  process.stdout.write(`${write(true)}\ncompare: wrote ${mdPath} and ${jsonPath}\n`);
  if (failures.length > 0) process.exitCode = 1;
}

main().catch((e: unknown) => {
  if (e instanceof MigpoolError && e.code === 'BAD_INPUT') {
    process.stderr.write(`compare: ${e.message}\n`);
    process.exitCode = 2;
    return;
  }
  process.stderr.write(`compare: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exitCode = 3;
});
