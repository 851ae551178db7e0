/**
 * `migpool advise`: the layouts and job placements that maximise predicted throughput on N GPUs of
 * one model, as a mig-parted config plus a placement table.
 *
 * The jobs file is CSV, in one of two shapes, told apart by its first non-comment line:
 * - a job list, `workload[,count][,weight]` per line (count default 1, weight default 1), with an
 *   optional header line `workload,count,weight`;
 * - the simulator's trace CSV, a header naming at least `workload` (e.g.
 *   `arrival,workload,gpus,duration[,priority,memory,profile]`), one job per row; `arrival`,
 *   `duration` and the other columns are ignored, except an optional `weight` column; a row asking
 *   for more than one GPU is an error (advise packs single-GPU jobs).
 * Blank lines and lines starting with `#` are skipped. Errors name FILE:LINE.
 */
import { loadHighs } from '../../exec/highs.js';
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import type { Command } from 'commander';
import { badInput } from '../../errors.js';
import { decimalValue } from '../../decimal-number.js';
import { resolveGpuModel } from '../../mig/catalog/index.js';
import type { GpuModel } from '../../mig/types.js';
import { buildProblem, optimizePacking, type PackingResult, type PackingWorkloadJob } from '../../optimize/index.js';
import { exportMigPartedConfig, exportMigPartedYaml, type ExportGpu } from '../../partition/export.js';
import { predict } from '../../perf/model.js';
import type { Workload } from '../../perf/types.js';
import { isWorkloadFile } from '../../perf/workload-ref.js';
import { loadWorkload } from '../workload-file.js';
import { writeJson, type Io } from '../io.js';
import { renderTable } from '../table.js';

interface AdviseOptions {
  gpu: string;
  count: string;
  jobs: string;
  json?: boolean;
  placeAll?: boolean;
  timeLimit: string;
  exactMaxJobs: string;
}

/** One job read from the file, with where it came from. */
export interface AdviseJob extends PackingWorkloadJob {
  readonly line: number;
}

const MAX_JOBS = 1_000_000;

function wholeNumber(text: string, where: string, what: string): number {
  if (!/^\d+$/.test(text.trim())) throw badInput(`${where}: ${what} must be a whole number, got '${text}'`);
  return Number(text.trim());
}

/**
 * The largest job weight. Weights are relative; with up to MAX_JOBS jobs, weights up to 10^6 keep
 * the objective under 10^12, far below the cost HiGHS treats as infinite (10^20, its
 * `infinite_cost` option). A weight of 1e308 made the throughput "Infinity" and the gap "NaN%".
 */
const MAX_WEIGHT = 1e6;

function weightOf(text: string | undefined, where: string): number {
  if (text === undefined || text.trim() === '') return 1;
  const w = decimalValue(text);
  if (!Number.isFinite(w) || w < 0) throw badInput(`${where}: weight must be a non-negative number, got '${text}'`);
  if (w > MAX_WEIGHT) throw badInput(`${where}: weight ${text.trim()} is over the limit of ${MAX_WEIGHT}; weights are relative, so scale them all down`);
  return w;
}

/** The workload a job line names; a relative YAML path is read from the jobs file's directory. */
function workloadAt(name: string | undefined, where: string, file: string): Workload {
  if (!name || name.trim() === '') throw badInput(`${where}: the workload is empty; name one such as small, medium or large, or a workload YAML file`);
  try {
    return loadWorkload(isWorkloadFile(name) && !isAbsolute(name.trim()) ? join(dirname(file), name.trim()) : name.trim());
  } catch (e) {
    throw badInput(`${where}: ${e instanceof Error ? e.message : String(e)}`);
  }
}

/** Parses the jobs file (see the file comment); `file` names it in errors. */
export function parseJobsCsv(text: string, file: string): AdviseJob[] {
  const lines = text.split(/\r?\n/).map((raw, i) => ({ raw: raw.trim(), line: i + 1 })).filter((l) => l.raw !== '' && !l.raw.startsWith('#'));
  const first = lines[0];
  if (!first) throw badInput(`${file}: no jobs; write one 'workload[,count][,weight]' per line`);
  const header = first.raw.split(',').map((c) => c.trim().toLowerCase());
  const jobs: AdviseJob[] = [];
  const push = (job: AdviseJob, where: string) => {
    if (jobs.length >= MAX_JOBS) throw badInput(`${where}: more than ${MAX_JOBS} jobs`);
    jobs.push(job);
  };
  if (header.includes('workload') && header.some((h) => h !== 'workload' && h !== 'count' && h !== 'weight')) {
    const col = (name: string) => header.indexOf(name);
    const [w, g, wt] = [col('workload'), col('gpus'), col('weight')];
    for (const { raw, line } of lines.slice(1)) {
      const where = `${file}:${line}`;
      const cells = raw.split(',');
      if (cells.length !== header.length) throw badInput(`${where}: ${cells.length} fields, the header has ${header.length}`);
      if (g >= 0 && (cells[g] ?? '').trim() !== '' && wholeNumber(cells[g] ?? '', where, 'gpus') !== 1) {
        throw badInput(`${where}: the job asks for ${cells[g]} GPUs; advise packs single-GPU jobs only`);
      }
      const workload = workloadAt(cells[w], where, file);
      push({ workload, weight: weightOf(wt >= 0 ? cells[wt] : undefined, where), name: workload.name, line }, where);
    }
    return jobs;
  }
  const body = header[0] === 'workload' ? lines.slice(1) : lines;
  for (const { raw, line } of body) {
    const where = `${file}:${line}`;
    const cells = raw.split(',');
    if (cells.length > 3) throw badInput(`${where}: ${cells.length} fields; write workload[,count][,weight]`);
    const workload = workloadAt(cells[0], where, file);
    const count = cells[1] === undefined || cells[1].trim() === '' ? 1 : wholeNumber(cells[1], where, 'count');
    const weight = weightOf(cells[2], where);
    for (let k = 0; k < count; k++) push({ workload, weight, name: workload.name, line }, where);
  }
  if (jobs.length === 0) throw badInput(`${file}: no jobs; write one 'workload[,count][,weight]' per line`);
  return jobs;
}

/** The GPUs as mig-parted's exporter takes them, from the advised layouts. */
function exportGpus(model: GpuModel, result: PackingResult): ExportGpu[] {
  return result.layouts.map((plan) => {
    const migDevices: Record<string, number> = {};
    if (plan.layout !== 'mig-off') for (const s of plan.layout) migDevices[s.profile] = (migDevices[s.profile] ?? 0) + 1;
    return {
      index: plan.gpu,
      uuid: '',
      pciDeviceId: model.pciDeviceIds[0] ?? '0x000010DE',
      productName: model.productNames[0] ?? model.name,
      migEnabled: plan.layout !== 'mig-off',
      migDevices,
    };
  });
}

const LABEL = 'migpool-advise';

/** `migpool advise --gpu MODEL --count N --jobs FILE`. */
export function registerAdvise(program: Command, io: Io): void {
  program
    .command('advise')
    .description('choose MIG layouts and job placements that maximise predicted throughput, with a bound on the best possible')
    .requiredOption('--gpu <model>', 'GPU model, e.g. A100-SXM4-40GB')
    .requiredOption('--count <n>', 'number of GPUs')
    .requiredOption('--jobs <file>', "CSV: 'workload[,count][,weight]' per line, or the simulator's trace CSV (arrival,workload,gpus,duration,...)")
    .option('--place-all', 'every job must be placed (fails when impossible)')
    .option('--time-limit <seconds>', 'time limit of the exact solver', '20')
    .option('--exact-max-jobs <n>', 'largest number of distinct jobs solved exactly (MIP); more use the heuristic', '64')
    .option('--json', 'print JSON')
    .action(async (opts: AdviseOptions) => {
      const model = resolveGpuModel(opts.gpu);
      const count = wholeNumber(opts.count, '--count', 'the GPU count');
      if (count < 1 || count > 100_000) throw badInput(`--count must be between 1 and 100000, got ${count}`);
      const timeLimit = decimalValue(opts.timeLimit);
      if (!Number.isFinite(timeLimit) || timeLimit <= 0) throw badInput(`--time-limit must be a positive number of seconds, got '${opts.timeLimit}'`);
      const exactMaxJobs = wholeNumber(opts.exactMaxJobs, '--exact-max-jobs', 'the job limit');
      let text: string;
      try {
        text = readFileSync(opts.jobs, 'utf8');
      } catch (e) {
        throw badInput(`cannot read --jobs ${opts.jobs}: ${e instanceof Error ? e.message : String(e)}`);
      }
      const jobs = parseJobsCsv(text, opts.jobs);
      const gpus = Array.from({ length: count }, () => model);
      const problem = buildProblem(gpus, jobs, { placeAll: opts.placeAll ?? false });
      const result = await optimizePacking(problem, { highs: await loadHighs(), timeLimitSeconds: timeLimit, exactMaxJobs });
      const fullSpeed = new Map<string, number>();
      const samplesPerSecond = result.assignments.reduce((s, a) => {
        const w = jobs[a.job]?.workload;
        if (!w) return s;
        let full = fullSpeed.get(w.name);
        if (full === undefined) {
          full = predict(w, { kind: 'full', gpu: model }).samplesPerSecond ?? 0;
          fullSpeed.set(w.name, full);
        }
        return s + a.speed * full;
      }, 0);
      const exported = exportGpus(model, result);
      const assignments = result.assignments.map((a) => ({
        job: a.job,
        workload: jobs[a.job]?.workload.name ?? '',
        line: jobs[a.job]?.line ?? 0,
        gpu: a.gpu,
        profile: a.profile,
        ...(a.start === undefined ? {} : { start: a.start }),
        speed: a.speed,
        weight: a.weight,
      }));
      if (opts.json) {
        writeJson(io, {
          gpu: model.name,
          count,
          jobs: jobs.length,
          layouts: result.layouts.map((l) => ({ gpu: l.gpu, layout: l.layout })),
          assignments,
          unassigned: result.unassigned.map((j) => ({ job: j, workload: jobs[j]?.workload.name ?? '', line: jobs[j]?.line ?? 0 })),
          objective: result.objective,
          samplesPerSecond,
          bound: result.bound,
          boundKind: result.boundKind,
          lpBound: result.lpBound,
          gap: result.gap,
          method: result.method,
          optimal: result.optimal,
          migPartedConfig: exportMigPartedConfig(exported, LABEL),
        });
        return;
      }
      io.out(`# mig-parted config: apply with nvidia-mig-parted apply -f FILE -c ${LABEL}`);
      io.out(exportMigPartedYaml(exported, LABEL).trimEnd());
      io.out('');
      io.out(
        renderTable(
          ['JOB', 'WORKLOAD', 'GPU', 'INSTANCE', 'SPEED'],
          assignments.map((a) => [String(a.job), a.workload, String(a.gpu), a.start === undefined ? 'whole GPU (MIG off)' : `${a.profile}@${a.start}`, a.speed.toFixed(3)]),
        ),
      );
      if (result.unassigned.length > 0) io.out(`not placed: ${result.unassigned.length} job(s): ${result.unassigned.map((j) => `${j} (${jobs[j]?.workload.name})`).join(', ')}`);
      io.out('');
      io.out(`predicted throughput: ${result.objective.toFixed(3)} whole-GPU equivalents (${samplesPerSecond.toFixed(0)} samples/s) on ${count} x ${model.name}`);
      const how = result.method === 'mip' ? (result.optimal ? 'optimal (MIP)' : 'best found by the MIP within the time limit') : 'heuristic';
      io.out(`upper bound: ${result.bound.toFixed(3)} (${result.boundKind}); gap ${(result.gap * 100).toFixed(2)}%; ${how}`);
    });
}
