import { badInput } from '../errors.js';

/**
 * Jobs in one page of `GET /v1/jobs` when the caller names no `limit`. A choice, to keep an answer
 * to a few hundred KB: 500 jobs of a plain spec (a name, a 4-word command, a profile, one env
 * value), half of them running, came to 246 KB through this route (measured with the test fake
 * service, about 0.5 KB a job; pending reasons and progress add to it).
 */
export const DEFAULT_JOB_PAGE = 500;

/**
 * Most jobs a caller may ask for in one page (`?limit=`): the bound the route had before it paged
 * by default, kept so that callers that asked for up to this many still get them in one answer.
 */
export const MAX_JOB_PAGE = 10_000;

/** A page of jobs, and the `after` of the next page (null: this was the last). */
export interface JobPage<T> {
  readonly jobs: readonly T[];
  readonly next: string | null;
}

const HOW = `give a whole number from 1 to ${MAX_JOB_PAGE} (jobs per page, ${DEFAULT_JOB_PAGE} when absent), and ask for the following pages with ?after=<next>`;

/**
 * The page size a raw `?limit=` asks for ({@link DEFAULT_JOB_PAGE} when absent). BAD_INPUT (400)
 * naming `limit` and the fix for anything but one whole number from 1 to {@link MAX_JOB_PAGE}.
 */
export function pageLimit(raw: unknown): number {
  if (raw === undefined) return DEFAULT_JOB_PAGE;
  if (Array.isArray(raw)) throw badInput(`querystring limit is given ${raw.length} times: give it once; ${HOW}`, { path: 'limit' });
  const text = String(raw).trim();
  if (!/^\d+$/.test(text)) throw badInput(`querystring limit '${String(raw)}' is not a whole number: ${HOW}`, { path: 'limit' });
  const n = Number(text);
  if (n < 1 || n > MAX_JOB_PAGE) throw badInput(`querystring limit ${n} is out of range: ${HOW}`, { path: 'limit' });
  return n;
}

/**
 * Checks a raw `?after=` (a job id, as `next` gives it): BAD_INPUT (400) naming `after` and the
 * fix otherwise. Absent is fine.
 */
export function checkAfter(raw: unknown): void {
  if (raw === undefined) return;
  if (Array.isArray(raw)) throw badInput(`querystring after is given ${raw.length} times: give it once, the \`next\` of the page before`, { path: 'after' });
  const id = String(raw);
  // Job ids are the store's whole numbers from 1 (store/records.ts); 0 stands before the first.
  if (!/^(0|[1-9]\d{0,15})$/.test(id) || !Number.isSafeInteger(Number(id))) throw badInput(`querystring after '${String(raw)}' is not a job id: give the \`next\` of the page before (a job id such as 42), or leave it out for the first page`, { path: 'after' });
}

/**
 * One page out of `found`, the jobs read with a limit of `limit + 1`: the first `limit`, and as
 * `next` the last one's id when one more was found (another page follows), else null.
 */
export function pageOf<T extends { readonly id: string }>(found: readonly T[], limit: number): JobPage<T> {
  const jobs = found.slice(0, limit);
  return { jobs, next: found.length > limit && jobs.length > 0 ? jobs[jobs.length - 1]!.id : null };
}
