import type { PoolService } from '../control/service-port.js';
import type { JobPlacement, JobRecord } from '../store/types.js';
import { canSee, type Caller } from './users.js';

/**
 * Job ids in a pending reason, as every reason writes them (sched/pending.ts, the policies'
 * explain): `job 12`, `job 12, 14, 15` (the service's ids are numbers).
 */
const JOB_REFS = /\bjob (\d+(?:, \d+)*)/g;

/**
 * Other users' jobs in words, for a reason that named them by id: `another user's job`,
 * `2 jobs of other users`; with the caller's own ids first (`job 12 and another user's job`).
 */
export function jobRefsText(own: readonly string[], others: number): string {
  const theirs = others === 1 ? "another user's job" : `${others} jobs of other users`;
  if (others === 0) return `job ${own.join(', ')}`;
  return own.length === 0 ? theirs : `job ${own.join(', ')} and ${theirs}`;
}

/**
 * A job record as `caller` may see it, as GET /v1/gpus shows GPUs (visible-gpus.ts): an admin sees
 * it as it is; another user sees the ids of their own jobs only, so the jobs its pending reason
 * names (`waiting for a 1g.5gb slice (held by job 12, 14)`, `GPUs are held for job 7`) and its MPS
 * neighbours are another user's when they are (`held by job 12 and another user's job`; neighbours
 * counted in `otherNeighbours`). Each job's owner is looked up once per call (`seen`).
 */
export async function visibleRecord(service: Pick<PoolService, 'getJob'>, caller: Caller, job: JobRecord, seen = new Map<string, Promise<boolean>>()): Promise<JobRecord> {
  if (caller.admin) return job;
  const maySee = (id: string): Promise<boolean> => {
    let ok = seen.get(id);
    if (ok === undefined) {
      ok = id === job.id ? Promise.resolve(true) : service.getJob(id).then((j) => j !== null && canSee(caller, j));
      seen.set(id, ok);
    }
    return ok;
  };
  let out = job;
  const pending = job.pending;
  if (typeof pending === 'string' && pending.includes('job ')) {
    const ids = [...pending.matchAll(JOB_REFS)].flatMap((m) => m[1]!.split(', '));
    const visible = new Map(await Promise.all(ids.map(async (id) => [id, await maySee(id)] as const)));
    const text = pending.replace(JOB_REFS, (_, list: string) => {
      const listed = list.split(', ');
      const own = listed.filter((id) => visible.get(id) === true);
      return jobRefsText(own, listed.length - own.length);
    });
    out = { ...out, pending: text };
  }
  const mps = mpsOf(job.placement);
  if (mps && mps.neighbours.length > 0) {
    const own: string[] = [];
    for (const id of mps.neighbours) if (await maySee(id)) own.push(id);
    if (own.length < mps.neighbours.length) {
      const placement = { ...job.placement, mps: { ...mps, neighbours: own, otherNeighbours: mps.neighbours.length - own.length } } as JobPlacement;
      out = { ...out, placement };
    }
  }
  return out;
}

type Mps = NonNullable<Extract<JobPlacement, { kind: 'gpus' }>['mps']>;

function mpsOf(p: JobPlacement | null): Mps | null {
  return p !== null && p.kind === 'gpus' ? (p.mps ?? null) : null;
}
