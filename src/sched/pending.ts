import type { ClusterView, JobSpec, PolicyContext } from './types.js';
import { memoryOf } from './context.js';
import { canEverRun } from './policies/common.js';

/**
 * Why each queued job waits, in words, from the view alone (no policy's private reasoning): the
 * generic answer to "why is my job waiting?", which a policy's own `explain` may refine. Pure.
 *
 * In order, the first that holds: it does not fit any GPU here; a multi-GPU job waits for N whole
 * GPUs (K idle now); a GPU is being re-partitioned; a job that named a profile waits for such a
 * slice (held by job X); jobs of higher priority are ahead of it; else it waits for a free slice or
 * GPU (all busy), or for the next scheduling pass.
 */
export function explainPending(view: ClusterView, ctx: PolicyContext): Map<string, string> {
  const out = new Map<string, string>();
  const idleWhole = view.gpus.filter((g) => g.wholeGpuJobs.length === 0 && g.instances.every((i) => i.job === null)).length;
  const changing = view.gpus.filter((g) => g.busyUntil !== null && g.busyUntil > view.now).map((g) => g.id);
  const holders = new Map<string, string[]>();
  for (const g of view.gpus) for (const i of g.instances) if (i.job !== null) holders.set(i.profile.name, [...(holders.get(i.profile.name) ?? []), i.job]);
  const idleInstances = view.gpus.reduce((n, g) => n + g.instances.filter((i) => i.job === null).length, 0);
  const foregroundQueued = view.queue.filter((j) => j.priority === 'foreground').length;
  let foregroundAhead = 0;
  let ahead = 0;
  const runnable = new Map<string, boolean>();
  for (const job of view.queue) {
    const key = `${job.gpus}|${job.profile ?? ''}|${job.exactProfile === true}|${job.memoryGiB ?? ''}|${job.workload.name}`;
    let ok = runnable.get(key);
    if (ok === undefined) runnable.set(key, (ok = canEverRun(view, ctx, job)));
    out.set(job.id, reason(job, ok));
    if (job.priority === 'foreground') foregroundAhead++;
    ahead++;
  }
  return out;

  function reason(job: JobSpec, fits: boolean): string {
    if (!fits) return job.exactProfile === true ? `does not fit any GPU here: no GPU here offers ${job.profile} (or its memory does not hold the job)` : 'does not fit any GPU here';
    if (job.gpus > 1) return `waiting for ${job.gpus} whole GPUs (${idleWhole} idle)`;
    if (changing.length > 0) return `re-partitioning GPU ${changing.join(', ')}`;
    if (job.priority === 'background' && foregroundQueued > 0) return `behind ${foregroundQueued} job${foregroundQueued === 1 ? '' : 's'} of higher priority`;
    if (job.profile !== null) {
      const held = holders.get(job.profile) ?? [];
      if (held.length > 0 && idleInstances === 0) return `waiting for a ${job.profile} slice (held by job ${held.slice(0, 3).join(', ')}${held.length > 3 ? ', ...' : ''})`;
      return `waiting for a ${job.profile} slice`;
    }
    const before = job.priority === 'foreground' ? foregroundAhead : ahead;
    if (idleWhole === 0 && idleInstances === 0) return `waiting for a free slice or GPU (all busy; ${before} job${before === 1 ? '' : 's'} ahead in line)`;
    if (idleWhole === 0) {
      // Idle slices but no idle GPU: say which, and whether the job fits any of them.
      const idle = new Map<string, number>();
      let fitsOne = false;
      for (const g of view.gpus) {
        for (const i of g.instances) {
          if (i.job !== null) continue;
          idle.set(i.profile.name, (idle.get(i.profile.name) ?? 0) + 1);
          if (!fitsOne && ctx.fits(job, { kind: 'instance', model: g.model, profile: i.profile.name })) fitsOne = true;
        }
      }
      const list = [...idle].map(([p, n]) => `${n}x${p}`).join(', ');
      if (fitsOne) return `waiting: idle slices (${list}) were not given to it in the last pass; ${before} job${before === 1 ? '' : 's'} ahead in line`;
      if (memoryOf(job) === null) return `waiting for a whole GPU: its memory is unknown, so no slice is chosen for it on a guess (idle: ${list}); give resources.memory or a profile to let it use one`;
      return `waiting for a whole GPU or a larger slice: the idle slices (${list}) are too small for it`;
    }
    return `waiting for the next scheduling pass (${idleWhole} whole GPU${idleWhole === 1 ? '' : 's'} idle)`;
  }
}
