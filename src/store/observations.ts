import { badInput } from '../errors.js';
import { checkTime, parseJobId, type Dialect } from './records.js';
import { checkUserName } from './users.js';
import type { WorkloadObservation } from './types.js';

/** One row of `workload_observations`, as both adapters read it back. */
export interface ObservationRow {
  readonly job_id: number | string;
  readonly attempt: number;
  readonly workload: string;
  readonly gpu_model: string;
  readonly resource: string;
  readonly samples_per_second: number | null;
  readonly peak_memory_mib: number | null;
  readonly out_of_memory: number | boolean;
  readonly time: number | string;
  readonly owner: string | null;
  readonly shared: number | boolean;
}

function positiveOrNull(where: string, v: unknown): number | null {
  if (v === null) return null;
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) throw badInput(`workload observation: ${where} must be a positive number or null, got ${JSON.stringify(v)}`, { path: where });
  return v;
}

function text(where: string, v: unknown): string {
  if (typeof v !== 'string' || v === '' || v.length > 200) throw badInput(`workload observation: ${where} must be a non-empty string of at most 200 characters, got ${JSON.stringify(v)}`, { path: where });
  return v;
}

function checkShared(v: unknown): boolean {
  if (typeof v !== 'boolean') throw badInput(`workload observation: shared must be true or false, got ${JSON.stringify(v)}`, { path: 'shared' });
  return v;
}

/** The observation checked (BAD_INPUT, one line, naming the field) and its job id as a number. */
export function checkObservation(o: WorkloadObservation): WorkloadObservation & { readonly jobNumber: number } {
  const jobNumber = parseJobId(o.jobId);
  if (jobNumber === null) throw badInput(`workload observation: jobId must be a job id such as "12", got ${JSON.stringify(o.jobId)}`, { path: 'jobId' });
  if (!Number.isInteger(o.attempt) || o.attempt < 1) throw badInput(`workload observation: attempt must be a whole number from 1, got ${JSON.stringify(o.attempt)}`, { path: 'attempt' });
  return {
    workload: text('workload', o.workload),
    jobId: o.jobId,
    attempt: o.attempt,
    gpuModel: text('gpuModel', o.gpuModel),
    resource: text('resource', o.resource),
    samplesPerSecond: positiveOrNull('samplesPerSecond', o.samplesPerSecond),
    peakMemoryMiB: positiveOrNull('peakMemoryMiB', o.peakMemoryMiB),
    outOfMemory: o.outOfMemory === true,
    time: checkTime('time', o.time),
    owner: o.owner === null ? null : checkUserName(o.owner, 'workload observation: owner'),
    shared: checkShared(o.shared),
    jobNumber,
  };
}

/** A row read back as an observation. */
export function observationFromRow(r: ObservationRow): WorkloadObservation {
  return {
    workload: r.workload,
    jobId: String(r.job_id),
    attempt: Number(r.attempt),
    gpuModel: r.gpu_model,
    resource: r.resource,
    samplesPerSecond: r.samples_per_second === null ? null : Number(r.samples_per_second),
    peakMemoryMiB: r.peak_memory_mib === null ? null : Number(r.peak_memory_mib),
    outOfMemory: r.out_of_memory === true || r.out_of_memory === 1,
    time: Number(r.time),
    owner: r.owner ?? null,
    shared: r.shared === true || r.shared === 1,
  };
}

/** The columns of `workload_observations` that an observation writes, in the order of {@link putObservationSql}'s parameters. */
const COLUMNS = ['job_id', 'attempt', 'workload', 'gpu_model', 'resource', 'samples_per_second', 'peak_memory_mib', 'out_of_memory', 'time', 'owner', 'shared'] as const;

/**
 * The upsert of one checked observation (BAD_INPUT as {@link checkObservation} says): a job's
 * attempt measured again replaces its row. `INSERT ... ON CONFLICT (...) DO UPDATE SET col =
 * excluded.col` is the same in SQLite (3.24 and later, https://www.sqlite.org/lang_upsert.html) and
 * PostgreSQL (https://www.postgresql.org/docs/current/sql-insert.html#SQL-ON-CONFLICT); the dialect
 * writes the parameters and the boolean.
 */
export function putObservationSql(observation: WorkloadObservation, d: Dialect): { sql: string; params: unknown[] } {
  const o = checkObservation(observation);
  const params = [o.jobNumber, o.attempt, o.workload, o.gpuModel, o.resource, o.samplesPerSecond, o.peakMemoryMiB, d.bool(o.outOfMemory), o.time, o.owner, d.bool(o.shared)];
  const updated = COLUMNS.filter((c) => c !== 'job_id' && c !== 'attempt').map((c) => `${c} = excluded.${c}`);
  return {
    sql: `INSERT INTO workload_observations (${COLUMNS.join(', ')}) VALUES (${params.map((_, i) => d.param(i + 1)).join(', ')}) ON CONFLICT (job_id, attempt) DO UPDATE SET ${updated.join(', ')}`,
    params,
  };
}

/** The `SELECT` of observations, oldest first: of one workload, or of all. */
export function listObservationsSql(workload: string | undefined, d: Dialect): { sql: string; params: unknown[] } {
  const where = workload === undefined ? '' : ` WHERE workload = ${d.param(1)}`;
  return { sql: `SELECT * FROM workload_observations${where} ORDER BY time, job_id, attempt`, params: workload === undefined ? [] : [workload] };
}
