import type { ClusterView, Decision, GpuView, JobSpec, Policy, PolicyContext, Priority } from '../types.js';
import { canEverRun, isInstanceUsable, isSettled, expectedWork } from './common.js';
import { estimate, isCritical, type MigpoolPromise } from './migpool-estimates.js';
import { growth } from './migpool-grow.js';
import { Plan, RESTART_SECONDS, SpeedMemo } from './migpool-plan.js';
import { placeMulti } from './migpool-reserve.js';
import { placeSingles } from './migpool-singles.js';

export { RESTART_SECONDS } from './migpool-plan.js';

/**
 * Sorts single-GPU jobs by highest response ratio first: (time waited + work) / work, ties in
 * queue order. Short jobs go first (most of the average completion time is queueing behind long
 * jobs when the queue is long), but a job's ratio grows as it waits, by 1 for every `work`
 * seconds, so a long job overtakes the short ones that keep arriving once it has waited a few
 * times its own run (no starvation, unlike shortest-job-first).
 */
export function byResponseRatio(jobs: JobSpec[], now: number): void {
  const ratio = new Map(jobs.map((j) => [j, (Math.max(0, now - j.arrival) + expectedWork(j)) / Math.max(expectedWork(j), 1e-9)]));
  jobs.sort((a, c) => (ratio.get(c) as number) - (ratio.get(a) as number) || a.arrival - c.arrival);
}

/**
 * migpool's policy. Principles:
 * - Whole GPUs while there are enough: when the single-GPU jobs waiting (and the GPUs waiting
 *   multi-GPU jobs want) do not outnumber the idle GPUs, each gets a whole GPU with MIG off (the
 *   fastest a job runs; MIG costs SMs). A profile a job asked for is a floor, as for the other
 *   policies here.
 * - Pack when jobs wait, and only where it pays (migpool-singles.ts): as few idle GPUs are cut
 *   as it takes to start the jobs in line (seven to a GPU), the jobs that would lose most on a
 *   slice keep whole GPUs, and a job takes a slice only where it does at least a whole GPU's work
 *   per compute slice and is expected to end sooner than by waiting in line for a whole GPU. When
 *   no GPU is free, a busy GPU may be shared with a waiting job (its jobs checkpointed and the GPU
 *   re-cut, as MISO does on every arrival) where that saves more time than it costs everyone
 *   (migpool-split.ts).
 * - Never lengthens the schedule by slicing, and serves first the jobs that would
 *   (migpool-estimates.ts): a job goes on (or is moved to) an instance only if it still ends
 *   within the committed horizon (when the work known can be done at the earliest), and a job
 *   that would end after it even started on whole GPUs as soon as they can be free is critical
 *   and is served first (longest first), so that the longest jobs do not become the tail.
 * - Never re-cuts a busy instance under its job, and charges every re-partition its time: a job
 *   promised an instance (or GPUs) being made waits for it; a job is moved only by checkpointing it
 *   first, and only when it gains much more than the re-partition and RESTART_SECONDS. When no
 *   single-GPU job waits, the jobs of a cut GPU that left part of it idle grow into it (a bigger
 *   layout, or the whole GPU for a lone job; migpool-grow.ts).
 * - When jobs wait, short ones go first, without starving anyone: the single-GPU jobs that are
 *   not critical go by highest response ratio, (time waited + work) / work (byResponseRatio).
 *   Under overload nearly all of a job's completion time is queueing, and serving the short jobs
 *   first cuts the average the most (what SRPT does); a long job's ratio grows as it waits, so it
 *   overtakes the short ones arriving after a few times its own run. Only the jobs that some
 *   resource could take now are looked at: when no GPU is idle, a job that no idle instance
 *   suits (a profile floor above them all) does not hold those instances back from the jobs
 *   behind it.
 * - Priorities: foreground jobs are placed before background ones; a foreground job that finds
 *   nothing may preempt a background single-GPU job (it is checkpointed and requeued).
 * - No starvation: the first multi-GPU job in line, and every critical one, holds an EASY
 *   reservation (the GPUs expected to free first, whole ones before cut ones); only work expected
 *   to end by its shadow time runs on those GPUs meanwhile, on their idle part or by sharing them
 *   where every job there still ends by then (migpool-reserve.ts, migpool-split.ts). Single-GPU
 *   jobs go before the other multi-GPU jobs.
 * Estimates use each job's `work` (its runtime alone on a whole GPU) and its current speed, as
 * EASY backfilling uses a user's runtime estimate; a job past its estimate is expected to run
 * half as long again.
 */
export function migpoolPolicy(): Policy {
  const promised = new Map<string, MigpoolPromise>();
  const speeds = new SpeedMemo();
  const runnable = new WeakMap<JobSpec, boolean>();

  /** Starts jobs whose promised resources are ready; drops promises that cannot be kept. */
  const keepPromises = (plan: Plan, queued: ReadonlyMap<string, JobSpec>): void => {
    const { view } = plan;
    for (const [id, p] of promised) {
      if (!queued.has(id)) {
        promised.delete(id);
        continue;
      }
      const ids = p.kind === 'instance' ? [p.gpu] : p.gpus;
      const gs = ids.map((x) => view.gpus[x]);
      if (gs.some((g) => g === undefined)) {
        promised.delete(id);
        continue;
      }
      if (gs.some((g) => !isSettled(g as GpuView, plan.now))) {
        for (const x of ids) plan.touched.add(x);
        continue;
      }
      if (p.kind === 'instance') {
        const g = gs[0] as GpuView;
        const inst = g.instances.find((i) => i.start === p.start);
        if (inst && isInstanceUsable(g, inst, plan.now)) {
          plan.decisions.push({ kind: 'start-on-instance', job: id, gpu: p.gpu, start: p.start });
          plan.placed.add(id);
          promised.delete(id);
          plan.touched.add(p.gpu);
        } else if (!inst || inst.job !== null) promised.delete(id);
        else plan.touched.add(p.gpu);
      } else {
        promised.delete(id);
        if (gs.every((g) => g !== undefined && !g.migEnabled && g.wholeGpuJobs.length === 0)) {
          plan.decisions.push({ kind: 'start-on-gpus', job: id, gpus: [...p.gpus], sharing: 'exclusive' });
          plan.placed.add(id);
          for (const x of ids) plan.touched.add(x);
        }
      }
    }
  };

  return {
    name: 'migpool',
    decide(view: ClusterView, ctx: PolicyContext): Decision[] {
      if (view.queue.length === 0 && promised.size === 0 && view.running.size === 0) return [];
      const plan = new Plan(view, ctx, promised, speeds);
      const queued = new Map(view.queue.map((q) => [q.id, q]));
      keepPromises(plan, queued);
      plan.scan();
      const waiting = view.queue.filter((q) => {
        if (plan.placed.has(q.id) || promised.has(q.id)) return false;
        let ok = runnable.get(q);
        if (ok === undefined) runnable.set(q, (ok = canEverRun(view, ctx, q)));
        return ok;
      });
      const singles = waiting.filter((q) => q.gpus === 1);
      const idleCount = plan.idleWhole.length + plan.idleMig.length;
      // (A job that asked for exactly one slice takes no whole GPU: it is placed under load.)
      if (singles.length === waiting.length && singles.length <= idleCount && !singles.some((q) => q.exactProfile === true)) {
        // Light load: a whole GPU for every waiting job.
        for (const job of singles) {
          const g = plan.takeIdle((h) => plan.fitsWhole(job, h));
          if (g) plan.giveWhole(job, g);
        }
      } else if (waiting.length > 0) {
        placeUnderLoad(plan, waiting, queued);
      }
      preemptForForeground(plan, singles);
      // Growth: when no single-GPU job waits for the space, the jobs of cut GPUs take it.
      if (!singles.some((q) => !plan.placed.has(q.id) && !promised.has(q.id))) {
        const gotJobs = new Set([...plan.gotJobs, ...plan.decisions.map((d) => (d.kind === 'start-on-instance' ? d.gpu : -1))]);
        for (const g of plan.cutBusy) {
          if (plan.touched.has(g.id) || gotJobs.has(g.id)) continue;
          const grown = growth(g, view.running, ctx, RESTART_SECONDS);
          if (!grown) continue;
          plan.decisions.push(...grown.decisions);
          for (const [id, p] of grown.promises) promised.set(id, p);
          plan.touched.add(g.id);
        }
      }
      return plan.decisions;
    },
  };

  /** Placement when jobs may outnumber the idle GPUs, or multi-GPU jobs wait. */
  function placeUnderLoad(plan: Plan, waiting: readonly JobSpec[], queued: ReadonlyMap<string, JobSpec>): void {
    const { releases, releaseAt, horizon } = estimate(plan.view, plan.ctx, promised, queued);
    const now = plan.now;
    // Serve order: foreground before background; within each, critical multi-GPU jobs (longest
    // first; each holds a reservation), then the first other multi-GPU job in line (it holds a
    // reservation on what is left), then critical single-GPU jobs (whole GPUs), then the other
    // single-GPU jobs (most jobs, and short: they pack) by highest response ratio, then the
    // other multi-GPU jobs in queue order. Criticality is judged from a job's earliest start: a
    // multi-GPU job can start only once enough GPUs are free (idle ones and expected releases
    // add up); a single-GPU job can start now, on a slice if need be.
    const idleNow = plan.idleWhole.length + plan.idleMig.length;
    const earliestStart = (q: JobSpec): number => {
      if (q.gpus <= idleNow) return now;
      const rel = releases[q.gpus - idleNow - 1];
      return rel === undefined ? now : Math.max(now, rel.at);
    };
    const CRITICAL_MULTI = 0;
    const HOLDER = 1;
    const CRITICAL = 2;
    const SINGLE = 3;
    const OTHER = 4;
    const CLASSES = 5;
    const buckets: JobSpec[][] = Array.from({ length: 2 * CLASSES }, () => []);
    const holder = new Set<Priority>();
    for (const q of waiting) {
      const base = q.priority === 'foreground' ? 0 : CLASSES;
      let r: number;
      // (Critical single-GPU jobs get whole GPUs: not a job that asked for exactly one slice.)
      if (isCritical(q, earliestStart(q), horizon) && q.exactProfile !== true) r = q.gpus > 1 ? CRITICAL_MULTI : CRITICAL;
      else if (q.gpus > 1 && !holder.has(q.priority)) {
        holder.add(q.priority);
        r = HOLDER;
      } else r = q.gpus === 1 ? SINGLE : OTHER;
      (buckets[base + r] as JobSpec[]).push(q);
    }
    for (const base of [0, CLASSES]) {
      for (const r of [CRITICAL_MULTI, CRITICAL]) (buckets[base + r] as JobSpec[]).sort((a, c) => expectedWork(c) - expectedWork(a) || a.arrival - c.arrival);
      byResponseRatio(buckets[base + SINGLE] as JobSpec[], now);
    }
    for (const base of [0, CLASSES]) {
      const of = (r: number) => buckets[base + r] as JobSpec[];
      for (const job of of(CRITICAL_MULTI)) placeMulti(plan, job, true, releases);
      for (const job of of(HOLDER)) placeMulti(plan, job, true, releases);
      for (const job of of(CRITICAL)) {
        // Critical single-GPU jobs run at full speed: whole GPUs only.
        const g = plan.takeIdle((h) => plan.wholeOk(job, h));
        if (g) plan.giveWhole(job, g);
      }
      if (of(SINGLE).length > 0) {
        // GPUs wanted by the multi-GPU jobs waiting, of this priority or a higher one (but for
        // those holding a reservation: their GPUs are kept for them already).
        let otherDemand = 0;
        for (const b of base === 0 ? [0] : [0, CLASSES]) {
          for (const r of [CRITICAL_MULTI, HOLDER, OTHER]) for (const m of buckets[b + r] as JobSpec[]) if (!plan.placed.has(m.id) && !plan.reserved.has(m.id)) otherDemand += m.gpus;
        }
        placeSingles(plan, of(SINGLE), { horizon, releases, releaseAt, otherDemand });
      }
      for (const job of of(OTHER)) placeMulti(plan, job, false, releases);
    }
  }

  /**
   * Foreground single-GPU jobs that found nothing may preempt a background single-GPU job: on an
   * instance the foreground job fits, or on a whole GPU.
   */
  function preemptForForeground(plan: Plan, singles: readonly JobSpec[]): void {
    const waitingForeground = singles.filter((q) => q.priority === 'foreground' && !plan.placed.has(q.id) && !promised.has(q.id));
    if (waitingForeground.length === 0) return;
    const victims = [...plan.view.running.values()].filter((v) => v.spec.priority === 'background' && v.spec.gpus === 1 && v.spec.preemptible !== false);
    for (const fg of waitingForeground) {
      if (victims.length === 0) break;
      const at = victims.findIndex((v) => {
        const gpu = v.placement.kind === 'instance' ? v.placement.gpu : v.placement.gpus[0];
        const g = gpu === undefined ? undefined : plan.view.gpus[gpu];
        if (!g || plan.touched.has(g.id)) return false;
        if (v.placement.kind === 'gpus') return g.wholeGpuJobs.length === 1 && plan.fitsWhole(fg, g);
        const start = v.placement.start;
        const inst = g.instances.find((i) => i.start === start);
        return inst !== undefined && plan.speedOn(fg, g.model, inst.profile.name) > 0;
      });
      const victim = at >= 0 ? victims.splice(at, 1)[0] : undefined;
      if (!victim) continue;
      plan.decisions.push({ kind: 'preempt', job: victim.spec.id });
      if (victim.placement.kind === 'instance') {
        plan.decisions.push({ kind: 'start-on-instance', job: fg.id, gpu: victim.placement.gpu, start: victim.placement.start });
      } else {
        plan.decisions.push({ kind: 'start-on-gpus', job: fg.id, gpus: [...victim.placement.gpus], sharing: 'exclusive' });
        for (const x of victim.placement.gpus) plan.touched.add(x);
      }
      plan.placed.add(fg.id);
    }
  }
}
