import type { GpuSnapshot, PoolService } from '../control/service-port.js';
import { canSee, type Caller } from './users.js';

/**
 * Processes migpool did not start, as one caller sees them: their count for everyone, their pids
 * for an admin only. They belong to no migpool user, but a pid names a process of some account on
 * the machine, which only an operator can act on (look it up, ask its owner, end it); a user
 * learns all they need, that the slice or GPU is taken and by nothing of the pool's, from the
 * count, as other users' jobs are only counted.
 */
export interface VisibleForeign {
  /** Processes not started by migpool running there (it takes no job while any do). */
  readonly foreignProcesses: number;
  /** Their process ids: an admin's to see; empty for other users. */
  readonly foreignPids: readonly number[];
}

/** A GPU as GET /v1/gpus answers it to one caller: the ids of the jobs they may see, the rest only counted. */
export interface VisibleGpu extends Omit<GpuSnapshot, 'instances' | 'foreignPids'>, VisibleForeign {
  readonly instances: readonly (Omit<GpuSnapshot['instances'][number], 'foreignPids'> &
    VisibleForeign & {
      /** A job holds the instance (`job` is null when it is another user's). */
      readonly busy: boolean;
    })[];
  /** Whole-GPU jobs of other users on it, counted: their ids are not the caller's to see (always 0 for an admin). */
  readonly wholeGpuOtherJobs: number;
}

function foreignFor(caller: Caller, pids: readonly number[] | undefined): VisibleForeign {
  const all = pids ?? [];
  return { foreignProcesses: all.length, foreignPids: caller.admin ? all : [] };
}

/**
 * The GPUs as `caller` may see them: an admin sees every job's id; a user sees the ids of their own
 * jobs, and other users' jobs only as occupied (an instance with `job: null, busy: true`, a whole
 * GPU's `wholeGpuOtherJobs`), as another user's job answers 404 elsewhere. Processes migpool did
 * not start are counted for everyone, their pids shown to admins (see {@link VisibleForeign}).
 * Each job's owner is looked up once.
 */
export async function visibleGpus(service: Pick<PoolService, 'getJob'>, caller: Caller, gpus: readonly GpuSnapshot[]): Promise<VisibleGpu[]> {
  const seen = new Map<string, Promise<boolean>>();
  const maySee = (id: string): Promise<boolean> => {
    if (caller.admin) return Promise.resolve(true);
    let ok = seen.get(id);
    if (ok === undefined) {
      ok = service.getJob(id).then((j) => j !== null && canSee(caller, j));
      seen.set(id, ok);
    }
    return ok;
  };
  return Promise.all(
    gpus.map(async (g) => {
      const instances = await Promise.all(
        g.instances.map(async ({ foreignPids, ...i }) => ({ ...i, job: i.job !== null && (await maySee(i.job)) ? i.job : null, busy: i.job !== null, ...foreignFor(caller, foreignPids) })),
      );
      const whole = await Promise.all(g.wholeGpuJobs.map(async (id) => ((await maySee(id)) ? id : null)));
      const own = whole.filter((id): id is string => id !== null);
      const { foreignPids, ...rest } = g;
      return { ...rest, instances, wholeGpuJobs: own, wholeGpuOtherJobs: whole.length - own.length, ...foreignFor(caller, foreignPids) };
    }),
  );
}
