import { randomUUID } from 'node:crypto';
import { badInput } from '../errors.js';
import { ARRAY_RANGE, MAX_ARRAY_JOBS, type ArrayMember, type JobSpecInput } from '../jobs/job-spec.js';

/**
 * Array jobs (`array: 0-99%8`, `migpool submit --array 0-99%8`): one spec stands for many jobs,
 * one per index, like Slurm's `sbatch --array` (sbatch(1): "--array=0-15%4 ... a maximum number
 * of simultaneously running tasks ... may be specified using a "%" separator"). The service
 * expands the range into jobs that each carry their place in the array; the scheduler's queue
 * then holds back members beyond the array's running limit (see `gate.ts`).
 */

/** The environment variable that tells each job of an array its index. */
export const ARRAY_INDEX_ENV = 'MIGPOOL_ARRAY_INDEX';

/** A range read from `0-99%8`: first and last index (inclusive) and the running limit, if any. */
export interface ArrayRange {
  readonly first: number;
  readonly last: number;
  readonly maxRunning: number | null;
}

/** Reads `A-B%N` (or `A`, `A-B`); `where` names it in errors. */
export function parseArrayRange(text: string, where: string): ArrayRange {
  const m = ARRAY_RANGE.exec(text.trim());
  if (!m) throw badInput(`${where} '${text}' is not a range: give one such as 0-99 or 0-99%8 (at most 8 running at once)`, { path: 'array' });
  const first = Number(m[1]);
  const last = m[2] === undefined ? first : Number(m[2]);
  const maxRunning = m[3] === undefined ? null : Number(m[3]);
  if (last < first) throw badInput(`${where} '${text}': the range ends before it starts; write it low-high, e.g. 0-99`, { path: 'array' });
  if (last - first + 1 > MAX_ARRAY_JOBS) throw badInput(`${where} '${text}': ${last - first + 1} jobs is more than ${MAX_ARRAY_JOBS}; split the array`, { path: 'array' });
  if (maxRunning === 0) throw badInput(`${where} '${text}': %0 would never run a job; give %1 or more, or leave the limit out`, { path: 'array' });
  return { first, last, maxRunning };
}

/**
 * Expands the specs that name an array range into one spec per index (each with its index in
 * `MIGPOOL_ARRAY_INDEX` and in `array.index`, and one id per array); other specs pass unchanged.
 * A spec that already carries an array member object was not submitted by a user as such:
 * refused. `newId` gives array ids (random UUIDs by default).
 */
export function expandArrays(specs: readonly JobSpecInput[], where: (i: number) => string, newId: () => string = randomUUID): JobSpecInput[] {
  const out: JobSpecInput[] = [];
  specs.forEach((spec, i) => {
    const a = spec.array;
    if (a === undefined) return out.push(spec);
    if (typeof a !== 'string') throw badInput(`${where(i)}: array: give a range such as 0-99%8; the service sets the array's id and indices itself`, { path: 'array' });
    const range = parseArrayRange(a, `${where(i)}: array`);
    const id = newId();
    for (let index = range.first; index <= range.last; index++) {
      const member: ArrayMember = { id, index, range: a, ...(range.maxRunning !== null ? { maxRunning: range.maxRunning } : {}) };
      out.push({ ...spec, env: { ...spec.env, [ARRAY_INDEX_ENV]: String(index) }, array: member });
    }
  });
  if (out.length > MAX_ARRAY_JOBS) throw badInput(`${out.length} jobs in one submission is more than ${MAX_ARRAY_JOBS}; split it`, { path: 'array' });
  return out;
}

/** True when the spec names an array range still to expand. */
export function isArraySubmission(spec: JobSpecInput): boolean {
  return typeof spec.array === 'string';
}
