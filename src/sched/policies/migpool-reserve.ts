import type { GpuView, JobSpec } from '../types.js';
import type { Estimates } from './migpool-estimates.js';
import type { Plan } from './migpool-plan.js';

/**
 * A multi-GPU job (whole GPUs, MIG off): starts on idle GPUs when there are enough (MIG-off ones
 * first; MIG-on ones are turned off and promised to it). Otherwise, when `mayReserve`, it holds
 * a reservation, as in EASY backfilling: the idle GPUs
 * and those expected to free first (by `releases`), until there are enough; the latest of their
 * releases is its shadow time, and until then the held GPUs take only work expected to end by it.
 * GPUs running whole-GPU jobs are held before cut ones: a cut GPU frees only when its last job
 * ends, and the slices its other jobs leave idle meanwhile would be lost to everyone.
 * Returns whether the job was started or promised.
 */
export function placeMulti(plan: Plan, job: JobSpec, mayReserve: boolean, releases: Estimates['releases']): boolean {
  const { ctx, view } = plan;
  const rc = ctx.reconfigureSeconds;
  const free = plan.idleGpus().filter((g) => plan.fitsWhole(job, g) && plan.usableBy(g, job, 1, g.migEnabled ? rc : 0));
  if (free.length >= job.gpus) {
    free.sort((a, b) => Number(a.migEnabled) - Number(b.migEnabled));
    const chosen = free.slice(0, job.gpus);
    const off = chosen.filter((g) => g.migEnabled);
    for (const g of off) plan.decisions.push({ kind: 'repartition', gpu: g.id, layout: null });
    if (off.length > 0) plan.promised.set(job.id, { kind: 'gpus', gpus: chosen.map((g) => g.id) });
    else plan.decisions.push({ kind: 'start-on-gpus', job: job.id, gpus: chosen.map((g) => g.id), sharing: 'exclusive' });
    for (const g of chosen) plan.touched.add(g.id);
    plan.placed.add(job.id);
    return true;
  }
  if (!mayReserve) return false;
  const held: number[] = plan
    .idleGpus()
    .filter((g) => plan.fitsWhole(job, g) && !plan.deadline.has(g.id))
    .map((g) => g.id);
  let shadow = plan.now;
  const pick = (wholeOnly: boolean) => {
    for (const rel of releases) {
      if (held.length >= job.gpus) break;
      const g = view.gpus[rel.gpu];
      if (!g || plan.deadline.has(g.id) || held.includes(g.id) || !plan.fitsWhole(job, g) || (wholeOnly && g.migEnabled)) continue;
      held.push(g.id);
      shadow = Math.max(shadow, rel.at);
    }
  };
  pick(true);
  pick(false);
  if (held.length < job.gpus) return false;
  plan.reserved.add(job.id);
  for (const id of held) {
    plan.deadline.set(id, shadow);
    const g = view.gpus[id] as GpuView;
    // Held idle GPUs are made whole now: the job will need them whole.
    if (g.migEnabled && !plan.touched.has(id) && g.instances.every((i) => i.job === null) && (g.busyUntil === null || g.busyUntil <= plan.now)) {
      plan.decisions.push({ kind: 'repartition', gpu: id, layout: null });
      plan.touched.add(id);
    }
  }
  return false;
}
