import type { GpuSnapshot, PoolService } from '../control/service-port.js';
import { canSee, type Caller } from './users.js';

/** A GPU as GET /v1/gpus answers it to one caller: the ids of the jobs they may see, the rest only counted. */
export interface VisibleGpu extends Omit<GpuSnapshot, 'instances'> {
  readonly instances: readonly (GpuSnapshot['instances'][number] & {
    /** A job holds the instance (`job` is null when it is another user's). */
    readonly busy: boolean;
  })[];
  /** Whole-GPU jobs of other users on it, counted: their ids are not the caller's to see (always 0 for an admin). */
  readonly wholeGpuOtherJobs: number;
}

/**
 * The GPUs as `caller` may see them: an admin sees every job's id; a user sees the ids of their own
 * jobs, and other users' jobs only as occupied (an instance with `job: null, busy: true`, a whole
 * GPU's `wholeGpuOtherJobs`), as another user's job answers 404 elsewhere. Each job's owner is
 * looked up once.
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
      const instances = await Promise.all(g.instances.map(async (i) => ({ ...i, job: i.job !== null && (await maySee(i.job)) ? i.job : null, busy: i.job !== null })));
      const whole = await Promise.all(g.wholeGpuJobs.map(async (id) => ((await maySee(id)) ? id : null)));
      const own = whole.filter((id): id is string => id !== null);
      return { ...g, instances, wholeGpuJobs: own, wholeGpuOtherJobs: whole.length - own.length };
    }),
  );
}
