import type { JobSpecInput } from '../jobs/job-spec.js';
import { badInput, MigpoolError } from '../errors.js';
import { JOB_STATES, type EventRecord, type JobFilter, type JobPatch, type JobRecord, type JobState, type NewEvent } from './types.js';

/**
 * What the SQLite and PostgreSQL adapters share: argument checks, the SQL both dialects write the
 * same way, and decoding a row into a record. Both schemas use the same table and column names.
 */

const PRIORITIES: readonly string[] = ['foreground', 'background'];
const ID = /^[1-9]\d{0,15}$/;

function integer(where: string, value: unknown, min: number): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) {
    throw badInput(`store: ${where} must be a whole number ${min} or more, got ${JSON.stringify(value) ?? String(value)}`);
  }
  return value;
}

/** Milliseconds since the epoch, as every time the store is given must be. */
export function checkTime(where: string, value: unknown): number {
  return integer(where, value, 0);
}

/** A job id as a number, or null when `id` is not one the store could have given out. */
export function parseJobId(id: unknown): number | null {
  if (typeof id !== 'string' || !ID.test(id)) return null;
  const n = Number(id);
  return Number.isSafeInteger(n) ? n : null;
}

/** The spec as stored (JSON text) and its priority column; spec `index` names it in errors. */
export function encodeSpec(spec: JobSpecInput, index = 0): { json: string; priority: string } {
  if (typeof spec !== 'object' || spec === null || !PRIORITIES.includes(spec.priority)) {
    throw badInput(`store: job spec ${index}: priority must be foreground or background; validate specs with parseJobSpec before storing them`);
  }
  let json: string;
  try {
    json = JSON.stringify(spec);
  } catch (e) {
    throw badInput(`store: job spec ${index} cannot be stored as JSON (${(e as Error).message}); pass plain data as parseJobSpec returns it`);
  }
  return { json, priority: spec.priority };
}

/** A filter with its defaults filled in and checked. */
export interface ListQuery {
  /** null: any state. */
  readonly states: readonly JobState[] | null;
  readonly priority: JobSpecInput['priority'] | null;
  readonly owner: string | null;
  readonly after: number | null;
  readonly limit: number | null;
  readonly order: 'asc' | 'desc';
}

/** Checks a `listJobs` filter (BAD_INPUT naming the bad field) and fills in its defaults. */
export function checkFilter(filter: JobFilter = {}): ListQuery {
  const states = filter.states ?? null;
  for (const s of states ?? []) {
    if (!JOB_STATES.includes(s)) throw badInput(`store: listJobs: unknown state ${JSON.stringify(s)}; use one of ${JOB_STATES.join(', ')}`);
  }
  const priority = filter.priority ?? null;
  if (priority !== null && !PRIORITIES.includes(priority)) {
    throw badInput(`store: listJobs: unknown priority ${JSON.stringify(priority)}; use foreground or background`);
  }
  const owner = filter.owner ?? null;
  if (owner !== null && (typeof owner !== 'string' || owner === '')) throw badInput(`store: listJobs: owner must be a user name, got ${JSON.stringify(owner)}`);
  let after: number | null = null;
  if (filter.after !== undefined) {
    after = filter.after === '0' ? 0 : parseJobId(filter.after);
    if (after === null) throw badInput(`store: listJobs: after must be a job id such as "42", got ${JSON.stringify(filter.after)}`);
  }
  const limit = filter.limit === undefined ? null : integer('listJobs: limit', filter.limit, 0);
  const order = filter.order ?? 'asc';
  if (order !== 'asc' && order !== 'desc') throw badInput(`store: listJobs: order must be asc or desc, got ${JSON.stringify(order)}`);
  return { states, priority, owner, after, limit, order };
}

/** How one SQL dialect writes a bound parameter (1-based) and a boolean value. */
export interface Dialect {
  param(n: number): string;
  bool(value: boolean): unknown;
}

/** `SELECT` for a checked filter; null when it can match nothing. */
export function listJobsSql(q: ListQuery, d: Dialect): { sql: string; params: unknown[] } | null {
  if (q.states?.length === 0 || q.limit === 0) return null;
  const where: string[] = [];
  const params: unknown[] = [];
  const bind = (v: unknown): string => {
    params.push(v);
    return d.param(params.length);
  };
  if (q.states) where.push(`state IN (${q.states.map(bind).join(', ')})`);
  if (q.priority !== null) where.push(`priority = ${bind(q.priority)}`);
  if (q.owner !== null) where.push(`owner = ${bind(q.owner)}`);
  if (q.after !== null) where.push(`id ${q.order === 'asc' ? '>' : '<'} ${bind(q.after)}`);
  let sql = 'SELECT * FROM jobs';
  if (where.length > 0) sql += ` WHERE ${where.join(' AND ')}`;
  sql += ` ORDER BY id ${q.order === 'asc' ? 'ASC' : 'DESC'}`;
  if (q.limit !== null) sql += ` LIMIT ${bind(q.limit)}`;
  return { sql, params };
}

type PatchField = keyof JobPatch;

const PATCH_COLUMNS: readonly { field: PatchField; column: string; check(v: unknown): boolean; expected: string }[] = [
  { field: 'state', column: 'state', check: (v) => JOB_STATES.includes(v as JobState), expected: `one of ${JOB_STATES.join(', ')}` },
  { field: 'startedAt', column: 'started_at', check: (v) => v === null || isTime(v), expected: 'a time in ms or null' },
  { field: 'endedAt', column: 'ended_at', check: (v) => v === null || isTime(v), expected: 'a time in ms or null' },
  { field: 'attempt', column: 'attempt', check: isTime, expected: 'a whole number 0 or more' },
  { field: 'placement', column: 'placement', check: isObjectOrNull, expected: 'a placement object or null' },
  { field: 'process', column: 'process', check: isObjectOrNull, expected: 'a process object or null' },
  { field: 'exitCode', column: 'exit_code', check: (v) => v === null || (Number.isInteger(v) && Math.abs(v as number) < 2 ** 31), expected: 'a 32-bit integer or null' },
  { field: 'reason', column: 'reason', check: (v) => v === null || typeof v === 'string', expected: 'text or null' },
  { field: 'cancelRequested', column: 'cancel_requested', check: (v) => typeof v === 'boolean', expected: 'true or false' },
  { field: 'preemptions', column: 'preemptions', check: isTime, expected: 'a whole number 0 or more' },
];

function isTime(v: unknown): boolean {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}

function isObjectOrNull(v: unknown): boolean {
  return v === null || (typeof v === 'object' && !Array.isArray(v));
}

const JSON_COLUMNS = new Set(['placement', 'process']);

/**
 * The compare-and-set `UPDATE` for a patch: sets the patch's defined fields, bumps `version`, and
 * returns the row only when `id` and `version` still match.
 */
export function updateJobSql(id: unknown, expectedVersion: number, patch: JobPatch, d: Dialect): { sql: string; params: unknown[] } {
  const params: unknown[] = [];
  const bind = (v: unknown): string => {
    params.push(v);
    return d.param(params.length);
  };
  const sets: string[] = [];
  for (const c of PATCH_COLUMNS) {
    const value = patch[c.field];
    if (value === undefined) continue;
    if (!c.check(value)) throw badInput(`store: updateJob: ${c.field} must be ${c.expected}, got ${JSON.stringify(value)}`);
    const stored = JSON_COLUMNS.has(c.column) && value !== null ? JSON.stringify(value) : typeof value === 'boolean' ? d.bool(value) : value;
    sets.push(`${c.column} = ${bind(stored)}`);
  }
  sets.push('version = version + 1');
  return { sql: `UPDATE jobs SET ${sets.join(', ')} WHERE id = ${bind(id)} AND version = ${bind(expectedVersion)} RETURNING *`, params };
}

/** A `jobs` row as either driver returns it (numbers may come as strings, JSON as text or parsed). */
export interface JobRow {
  readonly id: number | string;
  readonly spec: unknown;
  readonly state: string;
  readonly priority: string;
  readonly version: number | string;
  readonly submitted_at: number | string;
  readonly started_at: number | string | null;
  readonly ended_at: number | string | null;
  readonly attempt: number | string;
  readonly placement: unknown;
  readonly process: unknown;
  readonly exit_code: number | string | null;
  readonly reason: string | null;
  readonly cancel_requested: number | boolean;
  readonly preemptions?: number | string | null;
  readonly owner?: string | null;
}

/** JSON columns only ever hold objects, so a string is JSON text still to parse. */
function fromJson<T>(value: unknown): T {
  return (typeof value === 'string' ? JSON.parse(value) : value) as T;
}

function numberOrNull(value: number | string | null): number | null {
  return value === null ? null : Number(value);
}

/** The record a `jobs` row stands for. */
export function jobFromRow(row: JobRow): JobRecord {
  return {
    id: String(row.id),
    spec: fromJson(row.spec),
    state: row.state as JobState,
    version: Number(row.version),
    submittedAt: Number(row.submitted_at),
    startedAt: numberOrNull(row.started_at),
    endedAt: numberOrNull(row.ended_at),
    attempt: Number(row.attempt),
    placement: fromJson(row.placement),
    process: fromJson(row.process),
    exitCode: numberOrNull(row.exit_code),
    reason: row.reason,
    cancelRequested: Boolean(row.cancel_requested),
    preemptions: Number(row.preemptions ?? 0),
    owner: row.owner ?? null,
  };
}

/** A checked event: its job as a number, its data as JSON text. */
export function checkEvent(event: NewEvent): { time: number; type: string; jobId: number | null; data: string } {
  const time = checkTime('appendEvent: time', event.time);
  if (typeof event.type !== 'string' || event.type.length === 0) throw badInput('store: appendEvent: type must be an event type such as job-submitted');
  let jobId: number | null = null;
  if (event.jobId !== null) {
    jobId = parseJobId(event.jobId);
    if (jobId === null) throw badInput(`store: appendEvent: jobId must be a job id such as "42" or null, got ${JSON.stringify(event.jobId)}`);
  }
  if (typeof event.data !== 'object' || event.data === null || Array.isArray(event.data)) {
    throw badInput(`store: appendEvent: data must be an object, got ${JSON.stringify(event.data)}`);
  }
  let data: string;
  try {
    data = JSON.stringify(event.data);
  } catch (e) {
    throw badInput(`store: appendEvent: data cannot be stored as JSON (${(e as Error).message}); pass plain data`);
  }
  return { time, type: event.type, jobId, data };
}

/** The error for an event whose job the store does not hold (a foreign-key refusal). */
export function missingEventJob(jobId: string | null): MigpoolError {
  return badInput(`store: appendEvent: job ${jobId} does not exist; events may only name stored jobs (or jobId null)`);
}

/** An `events` row as either driver returns it. */
export interface EventRow {
  readonly seq: number | string;
  readonly time: number | string;
  readonly type: string;
  readonly job_id: number | string | null;
  readonly data: unknown;
}

/** The record an `events` row stands for. */
export function eventFromRow(row: EventRow): EventRecord {
  return {
    seq: Number(row.seq),
    time: Number(row.time),
    type: row.type as EventRecord['type'],
    jobId: row.job_id === null ? null : String(row.job_id),
    data: fromJson(row.data),
  };
}

/** Checks `listEvents` arguments: whole numbers, 0 or more. */
export function checkListEvents(afterSeq: number, limit: number): void {
  integer('listEvents: afterSeq', afterSeq, 0);
  integer('listEvents: limit', limit, 0);
}

/** Checks an idempotency key and fingerprint (non-empty text). */
export function checkIdempotencyKey(key: unknown, fingerprint: unknown): void {
  if (typeof key !== 'string' || key.length === 0 || key.length > 1024) throw badInput(`store: idempotency key must be text of 1 to 1024 characters, got ${JSON.stringify(key)}`);
  if (typeof fingerprint !== 'string' || fingerprint.length === 0) throw badInput('store: idempotency fingerprint must be non-empty text');
}

/** The jobs a recorded idempotency key stands for, or the conflict when it came with another request. */
export function replayedIds(key: string, fingerprint: string, row: { fingerprint: string; job_ids: string }): string[] {
  const ids = row.job_ids.split(',').filter((x) => x !== '');
  if (row.fingerprint !== fingerprint) {
    throw new MigpoolError(
      'BAD_INPUT',
      `Idempotency-Key '${key.slice(key.lastIndexOf(' ') + 1)}' was used for a different submission (job ${ids.join(', ')}): send a new key for a new submission, the same body to retry it`,
      // 422: what the IETF draft "The Idempotency-Key HTTP Header Field" (draft-ietf-httpapi-idempotency-key-header, section "Error Scenarios") says a server SHOULD answer.
      { path: 'Idempotency-Key', httpStatus: 422 },
    );
  }
  return ids;
}

/** Checks a setting's key (non-empty text) and, when given, its value (text). */
export function checkSetting(key: unknown, value?: unknown): void {
  if (typeof key !== 'string' || key.length === 0) throw badInput(`store: setting key must be non-empty text, got ${JSON.stringify(key)}`);
  if (value !== undefined && typeof value !== 'string') throw badInput(`store: setting ${key}: value must be text, got ${typeof value}`);
}

/** Counts in a stable order: by state as JOB_STATES lists them, then foreground before background. */
export function sortCounts<T extends { state: JobState; priority: JobSpecInput['priority'] }>(counts: T[]): T[] {
  return counts.sort((a, b) => JOB_STATES.indexOf(a.state) - JOB_STATES.indexOf(b.state) || PRIORITIES.indexOf(a.priority) - PRIORITIES.indexOf(b.priority));
}

/**
 * The key an idempotency key is stored under: each user's keys are their own (user names hold no
 * `/`), so that one user's key can never return another user's jobs.
 */
export function scopedIdempotencyKey(key: string, owner: string | null): string {
  return owner === null ? key : `${owner}/${key}`;
}
