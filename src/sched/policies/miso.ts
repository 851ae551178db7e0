import type { ClusterView, Decision, GpuView, JobSpec, Policy, PolicyContext } from '../types.js';
import { profileAllows } from './common.js';
import { bestLayoutFor, hasLayout } from './packing.js';

/**
 * MISO (Li et al., "MISO: Exploiting Multi-Instance GPU Capability on Multi-Tenant GPU Clusters",
 * SoCC 2022) as a peer baseline. Every GPU runs in MIG mode. An arriving single-GPU job goes to the
 * least-loaded GPU that can still take it; that GPU's jobs are checkpointed and the GPU is
 * re-partitioned to the layout that maximises the sum of its jobs' predicted speeds (MISO predicts
 * per-slice speeds from a short MPS profile; here the performance model stands in for that
 * prediction, i.e. MISO with a perfect predictor). When a job ends, the GPU is re-optimised for the
 * jobs left. Multi-GPU jobs take whole idle GPUs with MIG off, first come first served. A job's
 * requested profile is a floor on its slice (as in every policy here; MISO's paper has no such
 * requests).
 *
 * State: the placements it has promised to jobs it checkpointed (restarted once the re-partition
 * is done). It is rebuilt from nothing but the decisions it made, so replaying the same events
 * gives the same decisions.
 */
/** Whether some slice of GPU g that the job's requested profile allows holds its memory. */
function fitsSomeSlice(ctx: PolicyContext, job: JobSpec, g: GpuView): boolean {
  return g.model.giProfiles.some((p) => profileAllows(job, p.name, g.model) && ctx.fits(job, { kind: 'instance', model: g.model, profile: p.name }));
}

export function misoPolicy(): Policy {
  /** Job id -> where it restarts once its GPU's re-partition is done. */
  const promised = new Map<string, { gpu: number; start: number }>();
  /** GPUs whose jobs changed since they were last optimised. */
  const dirty = new Set<number>();
  let lastRunning = new Set<string>();

  const jobsOn = (view: ClusterView, g: GpuView): JobSpec[] => {
    const out: JobSpec[] = [];
    for (const i of g.instances) if (i.job) out.push((view.running.get(i.job) as { spec: JobSpec }).spec);
    for (const [id, p] of promised) if (p.gpu === g.id) {
      const spec = view.queue.find((q) => q.id === id);
      if (spec) out.push(spec);
    }
    return out;
  };

  /** Re-partition GPU g for `jobs` (its current jobs plus any new one): checkpoint, repartition, promise. */
  const reoptimise = (view: ClusterView, ctx: PolicyContext, g: GpuView, jobs: readonly JobSpec[], decisions: Decision[]): boolean => {
    // A requested profile is a floor, as for every policy here: a job never gets a smaller slice.
    const floor = (job: JobSpec, profile: string) => profileAllows(job, profile, g.model);
    const packed = bestLayoutFor(g.model, jobs, ctx, true, floor);
    if (!packed) return false;
    const same = hasLayout(g, packed.layout) && g.instances.every((i) => !i.job || packed.assignment.get(i.job) === i.start);
    // Re-cutting moves the GPU's jobs: not when one of them may not be preempted.
    if (!same && g.instances.some((i) => i.job !== null && view.running.get(i.job)?.spec.preemptible === false)) return false;
    for (const i of g.instances) if (i.job && !same) decisions.push({ kind: 'preempt', job: i.job });
    if (!same) decisions.push({ kind: 'repartition', gpu: g.id, layout: packed.layout });
    const readyNow = same && (g.busyUntil === null || g.busyUntil <= view.now);
    for (const job of jobs) {
      const start = packed.assignment.get(job.id);
      const running = g.instances.find((i) => i.job === job.id);
      if (start === undefined) continue;
      if (same && running) continue;
      if (readyNow) {
        // Nothing to re-partition: start at once (no event would come to keep a promise).
        decisions.push({ kind: 'start-on-instance', job: job.id, gpu: g.id, start });
        promised.delete(job.id);
      } else {
        promised.set(job.id, { gpu: g.id, start });
      }
    }
    return true;
  };

  return {
    name: 'miso',
    decide(view: ClusterView, ctx: PolicyContext): Decision[] {
      const decisions: Decision[] = [];
      // GPUs that lost a job since the last call are re-optimised for the jobs left.
      const running = new Set(view.running.keys());
      for (const id of lastRunning) {
        if (running.has(id)) continue;
        for (const g of view.gpus) if (g.instances.some((i) => i.job === null) && g.migEnabled) dirty.add(g.id);
        break;
      }
      lastRunning = running;
      const queued = new Set(view.queue.map((q) => q.id));
      // 1. Keep promises whose instances are ready.
      for (const [id, p] of promised) {
        if (!queued.has(id)) {
          promised.delete(id);
          continue;
        }
        const g = view.gpus[p.gpu];
        if (!g || (g.busyUntil !== null && g.busyUntil > view.now)) continue;
        const inst = g.instances.find((i) => i.start === p.start);
        if (inst && inst.job === null) {
          decisions.push({ kind: 'start-on-instance', job: id, gpu: p.gpu, start: p.start });
          promised.delete(id);
        }
      }
      const touched = new Set<number>(decisions.map((d) => (d.kind === 'start-on-instance' ? d.gpu : -1)));
      const load = (g: GpuView) => g.instances.filter((i) => i.job).length + [...promised.values()].filter((p) => p.gpu === g.id).length;
      // 2. Place queued jobs.
      const startedNow = new Set(decisions.map((d) => (d.kind === 'start-on-instance' ? d.job : '')));
      for (const job of view.queue) {
        if (promised.has(job.id) || startedNow.has(job.id)) continue;
        if (job.gpus > 1) {
          // Only GPUs whose memory holds the job (the decision check refuses the others).
          const idle = view.gpus.filter((g) => !touched.has(g.id) && (g.busyUntil === null || g.busyUntil <= view.now) && g.wholeGpuJobs.length === 0 && g.instances.every((i) => i.job === null) && load(g) === 0 && ctx.fits(job, { kind: 'whole', model: g.model }));
          if (idle.length < job.gpus) continue;
          const chosen = idle.slice(0, job.gpus);
          const off = chosen.filter((g) => g.migEnabled);
          for (const g of off) decisions.push({ kind: 'repartition', gpu: g.id, layout: null });
          if (off.length === 0) decisions.push({ kind: 'start-on-gpus', job: job.id, gpus: chosen.map((g) => g.id), sharing: 'exclusive' });
          for (const g of chosen) touched.add(g.id);
          continue;
        }
        let best: GpuView | null = null;
        let bestLoad = Infinity;
        for (const g of view.gpus) {
          if (touched.has(g.id) || g.wholeGpuJobs.length > 0 || (g.busyUntil !== null && g.busyUntil > view.now) || !fitsSomeSlice(ctx, job, g)) continue;
          const l = load(g);
          if (l >= 7 || l >= bestLoad) continue;
          best = g;
          bestLoad = l;
          if (l === 0) break;
        }
        if (!best) {
          // Every GPU is full (or busy): later single-GPU jobs cannot be placed either.
          if (bestLoad === Infinity) break;
          continue;
        }
        if (reoptimise(view, ctx, best, [...jobsOn(view, best), job], decisions)) touched.add(best.id);
        dirty.delete(best.id);
      }
      // 3. Re-optimise GPUs that lost a job, when nothing waits for them.
      if (view.queue.length === 0) {
        for (const id of dirty) {
          const g = view.gpus[id];
          if (!g || touched.has(id) || (g.busyUntil !== null && g.busyUntil > view.now)) continue;
          const jobs = jobsOn(view, g);
          if (jobs.length > 0) reoptimise(view, ctx, g, jobs, decisions);
          touched.add(id);
        }
        dirty.clear();
      }
      return decisions;
    },
  };
}
