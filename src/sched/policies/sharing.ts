import type { ClusterView, Decision, GpuView, JobSpec, Policy } from '../types.js';
import { canEverRunWhole, memoryNeed, migOffIdle, Picker, wholeGpusWith } from './common.js';

/** Most jobs `timeslice:N` / `mps:N` let share one GPU (MPS allows 48 clients per GPU on Volta+). */
export const MAX_SHARERS = 48;

function memoryOnGpu(view: ClusterView, g: GpuView): number {
  let sum = 0;
  for (const id of g.wholeGpuJobs) {
    const r = view.running.get(id);
    if (r) sum += memoryNeed(r.spec) ?? 0;
  }
  return sum;
}

/**
 * `timeslice:N` and `mps:N`: up to N jobs share a GPU with MIG off, taking turns (time-slicing)
 * or side by side (MPS); their speeds come from the performance model and change as sharers come
 * and go. Queue order (FIFO, no reservations between single-GPU jobs):
 * - a single-GPU job goes to an idle GPU if there is one (alone it runs fastest), else to the
 *   GPU with the fewest sharers below N whose memory holds all its jobs;
 * - a multi-GPU job takes whole idle GPUs, exclusively (no sharing). When the first such job in
 *   the queue cannot start, idle GPUs are kept for it: later jobs may only join GPUs that are
 *   already shared, so large jobs are not starved;
 * - GPUs found with MIG on are turned off as soon as all their instances are idle.
 * Jobs the fleet can never hold are skipped.
 */
export function sharingPolicy(mode: 'timeslice' | 'mps', n: number, name = `${mode}:${n}`): Policy {
  if (!Number.isInteger(n) || n < 1 || n > MAX_SHARERS) throw new RangeError(`${mode}:N needs N from 1 to ${MAX_SHARERS}, got ${n}`);
  return {
    name,
    decide(view, ctx): Decision[] {
      const decisions: Decision[] = migOffIdle(view);
      if (view.queue.length === 0) return decisions;
      const idle = new Picker<GpuView>(wholeGpusWith(view, 0));
      let idleLeft = wholeGpusWith(view, 0).size;
      /** Per sharer count k (1..n-1): GPUs from the index, and GPUs this call moved to k. */
      const levels: { index: Picker<GpuView>; local: GpuView[] }[] = [];
      for (let k = 1; k < n; k++) levels.push({ index: new Picker(wholeGpusWith(view, k, mode)), local: [] });
      const added = new Map<GpuView, number>();
      const exhausted = new Set<number>();
      let reserved = false;

      const fitsShared = (job: JobSpec, g: GpuView): boolean => {
        const need = memoryNeed(job);
        if (need === null) return true;
        return memoryOnGpu(view, g) + (added.get(g) ?? 0) + need <= g.model.memoryGB;
      };

      for (const job of view.queue) {
        if (!canEverRunWhole(view, ctx, job)) continue;
        const noIdle = reserved || idleLeft === 0;
        if (noIdle && exhausted.size === n - 1) break;
        if (job.gpus > 1) {
          if (reserved) continue;
          const gs = job.gpus <= idleLeft ? idle.takeMany(job.gpus, (g) => ctx.fits(job, { kind: 'whole', model: g.model })) : null;
          if (gs) {
            decisions.push({ kind: 'start-on-gpus', job: job.id, gpus: gs.map((g) => g.id), sharing: 'exclusive' });
            idleLeft -= job.gpus;
          } else reserved = true;
          continue;
        }
        if (!noIdle) {
          const g = idle.take((h) => ctx.fits(job, { kind: 'whole', model: h.model }));
          if (g) {
            idleLeft--;
            decisions.push({ kind: 'start-on-gpus', job: job.id, gpus: [g.id], sharing: mode });
            added.set(g, memoryNeed(job) ?? 0);
            if (n > 1) {
              levels[0]?.local.push(g);
              exhausted.delete(1);
            }
            continue;
          }
        }
        for (let k = 1; k < n; k++) {
          const level = levels[k - 1];
          if (!level || exhausted.has(k)) continue;
          let g: GpuView | undefined;
          const li = level.local.findIndex((h) => fitsShared(job, h));
          if (li >= 0) g = level.local.splice(li, 1)[0];
          else g = level.index.take((h) => fitsShared(job, h));
          if (!g) {
            if (level.local.length === 0 && !level.index.hasAny()) exhausted.add(k);
            continue;
          }
          decisions.push({ kind: 'start-on-gpus', job: job.id, gpus: [g.id], sharing: mode });
          added.set(g, (added.get(g) ?? 0) + (memoryNeed(job) ?? 0));
          if (k + 1 < n) {
            levels[k]?.local.push(g);
            exhausted.delete(k + 1);
          }
          break;
        }
      }
      return decisions;
    },
  };
}
