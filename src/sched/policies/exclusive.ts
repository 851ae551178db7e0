import type { Decision, GpuView, JobSpec, Policy } from '../types.js';
import { canEverRunWhole, estimatedReleases, migOffIdle, Picker, wholeGpusWith, expectedWork } from './common.js';

/**
 * `exclusive`: what most clusters do today. Whole GPUs, MIG off, one job per GPU, FIFO with EASY
 * backfill:
 * - the head of the queue starts as soon as enough idle GPUs whose memory holds it are free;
 * - when it cannot, its start is reserved at the "shadow time", the earliest time enough GPUs come
 *   free if every running job does the rest of its `work` at speed 1, and later jobs that fit the
 *   idle GPUs now start ahead of it if they are estimated to end (now + work) by the shadow time
 *   or use only GPUs the head will not need then ("extra" GPUs);
 * - GPUs found with MIG on are turned off as soon as all their instances are idle.
 * Jobs the fleet can never hold (more GPUs than it has, or more memory than a GPU) are skipped.
 */
export function exclusivePolicy(): Policy {
  return {
    name: 'exclusive',
    decide(view, ctx): Decision[] {
      const decisions: Decision[] = migOffIdle(view);
      const idle = wholeGpusWith(view, 0);
      let free = idle.size;
      if (free === 0 || view.queue.length === 0) return decisions;
      const picker = new Picker<GpuView>(idle);
      const fitsOn = (job: JobSpec) => (g: GpuView) => ctx.fits(job, { kind: 'whole', model: g.model });
      let blocked = false;
      let shadow = Number.POSITIVE_INFINITY;
      let extra = 0;
      for (const job of view.queue) {
        if (free === 0) break;
        if (!canEverRunWhole(view, ctx, job)) continue;
        if (!blocked) {
          const gs = job.gpus <= free ? picker.takeMany(job.gpus, fitsOn(job)) : null;
          if (gs) {
            decisions.push({ kind: 'start-on-gpus', job: job.id, gpus: gs.map((g) => g.id), sharing: 'exclusive' });
            free -= job.gpus;
            continue;
          }
          blocked = true;
          let avail = free;
          for (const rel of estimatedReleases(view)) {
            if (avail >= job.gpus && rel.at > shadow) break;
            avail += rel.gpus;
            if (avail >= job.gpus && shadow === Number.POSITIVE_INFINITY) shadow = rel.at;
          }
          extra = Math.max(0, avail - job.gpus);
          continue;
        }
        if (job.gpus > free) continue;
        const endsBy = view.now + expectedWork(job) <= shadow;
        if (!endsBy && job.gpus > extra) continue;
        const gs = picker.takeMany(job.gpus, fitsOn(job));
        if (!gs) continue;
        decisions.push({ kind: 'start-on-gpus', job: job.id, gpus: gs.map((g) => g.id), sharing: 'exclusive' });
        free -= job.gpus;
        if (!endsBy) extra -= job.gpus;
      }
      return decisions;
    },
  };
}
