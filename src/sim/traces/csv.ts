import { badInput, MigpoolError } from '../../errors.js';
import { GPU_MODELS, normalizeProfileName } from '../../mig/catalog/index.js';
import { resolveWorkload } from '../../perf/workloads.js';
import type { Workload } from '../../perf/types.js';
import type { Priority } from '../../sched/types.js';
import type { TraceJob } from '../types.js';
import { cell, readCsv, type CsvRow } from './records.js';

/** Columns of migpool's job CSV every file has. */
export const JOBS_CSV_REQUIRED = ['arrival', 'workload', 'gpus', 'duration'] as const;
/** Columns it may have: a priority (default foreground), memory in GiB, a MIG profile, and a job id (default `job-N`). */
export const JOBS_CSV_OPTIONAL = ['priority', 'memory', 'profile', 'id'] as const;

type Column = (typeof JOBS_CSV_REQUIRED)[number] | (typeof JOBS_CSV_OPTIONAL)[number];

const KNOWN_PROFILES = new Set(GPU_MODELS.flatMap((m) => m.giProfiles.map((p) => p.name)));

/**
 * The largest `arrival` and `duration`, in seconds: 10^9 (31.7 years), 200 times the longest job of
 * the Philly trace (4,628,226 s, 53.6 days; data/traces/philly) and 100 times its span (108 days).
 * Above it, sums over a trace lose their meaning: a duration of 1e308 gave a utilisation of NaN%.
 */
export const MAX_TRACE_SECONDS = 1e9;

/**
 * Parses migpool's own job CSV: header `arrival,workload,gpus,duration` (any order) plus optional
 * `priority` (foreground|background, default foreground), `memory` (GiB; empty for the
 * workload's), `profile` (a MIG profile such as `1g.5gb`, only with gpus = 1; empty to let the
 * policy choose) and `id`. `arrival` is seconds from the start; `duration` the job's seconds
 * alone on one whole GPU of its type; workloads by name or alias (resolveWorkload; `extra` first).
 * Blank lines and lines starting with `#` are ignored. Jobs come back in arrival order (file order
 * among equal arrivals).
 *
 * @throws MigpoolError `BAD_INPUT` as `FILE:LINE: field 'NAME': what was wrong` for the first bad cell
 */
export function parseJobsCsv(text: string, file: string, extra: readonly Workload[] = []): TraceJob[] {
  const table = readCsv(text, file);
  const known: readonly string[] = [...JOBS_CSV_REQUIRED, ...JOBS_CSV_OPTIONAL];
  const unknown = table.header.filter((h) => !known.includes(h));
  if (unknown.length > 0) throw badInput(`${file}:1: unknown column '${unknown[0]}': the header is ${JOBS_CSV_REQUIRED.join(',')} plus optional ${JOBS_CSV_OPTIONAL.join(', ')}`);
  const missing = JOBS_CSV_REQUIRED.filter((h) => !table.header.includes(h));
  if (missing.length > 0) throw badInput(`${file}:1: column '${missing[0]}' is missing: the header is ${JOBS_CSV_REQUIRED.join(',')} plus optional ${JOBS_CSV_OPTIONAL.join(', ')}`);
  const at = (row: CsvRow, name: Column): string => {
    const i = table.header.indexOf(name);
    return i < 0 ? '' : cell(row, i);
  };
  const fail = (row: CsvRow, field: Column, message: string): MigpoolError => badInput(`${file}:${row.line}: field '${field}': ${message}`);
  const ids = new Set<string>();
  const jobs = table.rows.map((row, n): TraceJob => {
    const arrivalText = at(row, 'arrival');
    const arrival = Number(arrivalText);
    if (arrivalText === '' || !Number.isFinite(arrival) || arrival < 0) throw fail(row, 'arrival', `expected seconds from the start (0 or more), got '${arrivalText}'`);
    if (arrival > MAX_TRACE_SECONDS) throw fail(row, 'arrival', `${arrivalText} seconds is over the limit of ${MAX_TRACE_SECONDS} (31.7 years); give seconds from the start of the trace`);
    const workloadText = at(row, 'workload');
    let workload: Workload;
    try {
      workload = resolveWorkload(workloadText, extra);
    } catch (e) {
      if (e instanceof MigpoolError) throw fail(row, 'workload', `unknown workload '${workloadText}' (try small, medium, large, bert-base-squad; 'migpool workloads' lists them all)`);
      throw e;
    }
    const gpusText = at(row, 'gpus');
    const gpus = Number(gpusText);
    if (!/^\d+$/.test(gpusText) || gpus < 1) throw fail(row, 'gpus', `expected a positive whole number of GPUs, got '${gpusText}'`);
    const durationText = at(row, 'duration');
    const work = Number(durationText);
    if (durationText === '' || !Number.isFinite(work) || work <= 0) throw fail(row, 'duration', `expected positive seconds alone on one whole GPU, got '${durationText}'`);
    if (work > MAX_TRACE_SECONDS) throw fail(row, 'duration', `${durationText} seconds is over the limit of ${MAX_TRACE_SECONDS} (31.7 years); give the job's seconds alone on one whole GPU`);
    const priorityText = at(row, 'priority').toLowerCase();
    if (priorityText !== '' && priorityText !== 'foreground' && priorityText !== 'background') {
      throw fail(row, 'priority', `expected foreground or background, got '${at(row, 'priority')}'`);
    }
    const priority: Priority = priorityText === 'background' ? 'background' : 'foreground';
    const memoryText = at(row, 'memory');
    const memory = Number(memoryText);
    if (memoryText !== '' && (!Number.isFinite(memory) || memory <= 0)) throw fail(row, 'memory', `expected GiB (a positive number) or nothing, got '${memoryText}'`);
    const profileText = at(row, 'profile');
    const profile = profileText === '' ? null : normalizeProfileName(profileText);
    if (profile !== null && !KNOWN_PROFILES.has(profile)) throw fail(row, 'profile', `'${profileText}' is no MIG profile of any GPU migpool knows (e.g. 1g.5gb, 3g.20gb; see 'migpool profiles')`);
    if (profile !== null && gpus !== 1) throw fail(row, 'profile', `a MIG profile is for single-GPU jobs, but gpus is ${gpus}`);
    const id = at(row, 'id') || `job-${n + 1}`;
    if (ids.has(id)) throw fail(row, 'id', `job id '${id}' appears twice`);
    ids.add(id);
    return { id, workload, gpus, priority, arrival, work, memoryGiB: memoryText === '' ? null : memory, profile };
  });
  return jobs.map((job, i) => ({ job, i })).sort((a, b) => a.job.arrival - b.job.arrival || a.i - b.i).map((x) => x.job);
}
