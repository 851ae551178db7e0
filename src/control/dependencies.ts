import { badInput } from '../errors.js';
import type { JobSpecInput } from '../jobs/job-spec.js';
import type { JobRecord, JobState } from '../store/types.js';

/**
 * What holds a queued job back before the policy sees it: its dependencies (`after: [ids]`, it
 * starts once each has succeeded) and its array's running limit (`array: 0-99%8`). Pure: the
 * service gives it its open jobs and what it knows of the ended ones, and leaves the held jobs
 * out of the policy's queue, shows their reason as their pending note, and fails the jobs whose
 * dependency can no longer succeed.
 */

/** What the service knows of a job that is not open (or null when the store has no such job). */
export interface EndedJob {
  readonly state: JobState;
  readonly reason: string | null;
}

/** The outcome of {@link gateQueue}. */
export interface Gate {
  /** Queued jobs the policy must not see yet, with why they wait (for `pending`). */
  readonly held: ReadonlyMap<string, string>;
  /** Queued jobs that can never start, with the reason they fail. */
  readonly doomed: ReadonlyMap<string, string>;
}

/** Ids of the jobs the open jobs depend on that are not open themselves (to look up in the store). */
export function dependenciesToLookUp(open: ReadonlyMap<string, JobRecord>, known: ReadonlyMap<string, EndedJob | null>): string[] {
  const ids = new Set<string>();
  for (const r of open.values()) {
    if (r.state !== 'queued') continue;
    for (const dep of r.spec.after ?? []) if (!open.has(dep) && !known.has(dep)) ids.add(dep);
  }
  return [...ids];
}

function why(state: JobState, reason: string | null): string {
  return reason ? `${state}: ${reason}` : state;
}

/**
 * Splits the queued jobs of `open` into those held back (a dependency not yet succeeded, or their
 * array at its running limit: the array's lowest-id queued members fill the free places) and those
 * that can never start (a dependency failed, was cancelled, or does not exist). `ended` holds the
 * final jobs the service looked up (null: no such job).
 */
export function gateQueue(open: ReadonlyMap<string, JobRecord>, ended: ReadonlyMap<string, EndedJob | null>): Gate {
  const held = new Map<string, string>();
  const doomed = new Map<string, string>();
  const runningOfArray = new Map<string, number>();
  for (const r of open.values()) {
    const a = r.spec.array;
    if (typeof a === 'object' && (r.state === 'running' || r.state === 'starting')) runningOfArray.set(a.id, (runningOfArray.get(a.id) ?? 0) + 1);
  }
  // Only jobs with dependencies or an array limit can be held (the service asks on every view).
  const queued = [...open.values()].filter((r) => r.state === 'queued' && (r.spec.after !== undefined || (typeof r.spec.array === 'object' && r.spec.array.maxRunning !== undefined)));
  if (queued.length === 0) return { held, doomed };
  queued.sort((x, y) => Number(x.id) - Number(y.id));
  const admitted = new Map<string, number>();
  for (const r of queued) {
    let waitFor: string | null = null;
    for (const dep of r.spec.after ?? []) {
      const live = open.get(dep);
      if (live) {
        waitFor ??= `waits for job ${dep} to succeed (it is ${live.state})`;
        continue;
      }
      const done = ended.get(dep);
      if (done === undefined) {
        waitFor ??= `waits for job ${dep} to succeed`;
        continue;
      }
      if (done === null) {
        doomed.set(r.id, `dependency job ${dep} does not exist`);
        break;
      }
      if (done.state !== 'succeeded') {
        doomed.set(r.id, `dependency job ${dep} did not succeed (${why(done.state, done.reason)})`);
        break;
      }
    }
    if (doomed.has(r.id)) continue;
    if (waitFor !== null) {
      held.set(r.id, waitFor);
      continue;
    }
    const a = r.spec.array;
    if (typeof a === 'object' && a.maxRunning !== undefined) {
      const taken = (runningOfArray.get(a.id) ?? 0) + (admitted.get(a.id) ?? 0);
      if (taken >= a.maxRunning) {
        held.set(r.id, `array ${a.range}: ${runningOfArray.get(a.id) ?? 0} of its jobs run, at most ${a.maxRunning} at once`);
        continue;
      }
      admitted.set(a.id, (admitted.get(a.id) ?? 0) + 1);
    }
  }
  return { held, doomed };
}

/**
 * Refuses specs whose `after` names a job the service does not have (BAD_INPUT naming the spec
 * and the id). A dependency that has already failed is accepted: the job then fails at once, with
 * the reason, as it would had the dependency failed later.
 */
/**
 * `lookup` narrowed to the jobs a submitter may name in `after`: `owner`'s own, or every job when
 * `owner` is absent (a pool without users) or `seesAll` (an admin). Others' jobs read as absent.
 */
export function visibleLookup(lookup: (id: string) => Promise<JobRecord | null>, owner: string | undefined, seesAll: boolean): (id: string) => Promise<JobRecord | null> {
  if (owner === undefined || seesAll) return lookup;
  return async (id) => {
    const job = await lookup(id);
    return job !== null && job.owner === owner ? job : null;
  };
}

export async function checkDependencies(specs: readonly JobSpecInput[], where: (i: number) => string, lookup: (id: string) => Promise<JobRecord | null>): Promise<void> {
  for (const [i, spec] of specs.entries()) {
    for (const dep of spec.after ?? []) {
      if ((await lookup(dep)) === null) throw badInput(`${where(i)}: after: no job ${dep}: name jobs that exist (see \`migpool jobs\`)`, { path: 'after' });
    }
  }
}
