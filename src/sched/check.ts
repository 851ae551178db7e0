import { countingViolation } from '../mig/geometry.js';
import type { GiProfile } from '../mig/types.js';
import { fitsMemory, memoryOf, profileOf, unknownMemoryAllowed } from './context.js';
import { foreignPidsOf, foreignText, isInstanceUsable, isSettled, profileAllows } from './policies/common.js';
import { quotaProblem } from './shares.js';
import { NO_HISTORY, type ClusterView, type Decision, type GpuView, type JobHistory, type JobSpec } from './types.js';

/**
 * The check of a decision against the cluster view, written once for both clocks: the simulator
 * throws on a decision that fails it (a bug in the policy), the service logs it, skips that
 * decision and keeps running. Decisions of one batch are checked in order, each against the
 * state the earlier ones left (the caller applies each before checking the next).
 *
 * What it does not check, because only the simulator has it: strong scaling (`parallelism`,
 * `fill`), which the simulator checks beside this.
 */

/** Fast look-ups a caller may offer (the simulator's); without them the view is scanned. */
export interface CheckLookup {
  /** The queued job with this id, or undefined when it is not queued. */
  queued(id: string): JobSpec | undefined;
  /** What a job that is not queued is (`running`, `done`, `not yet arrived`, `unknown`), for messages. */
  status?(id: string): string;
}

/** A look-up over the view's queue (built once; for callers without a faster one). */
export function queueLookup(view: ClusterView): CheckLookup {
  const byId = new Map(view.queue.map((q) => [q.id, q]));
  return { queued: (id) => byId.get(id) };
}

/** Whether a job may run on whole GPUs (a job bound to an exact profile may not). */
export function wholeAllowed(job: JobSpec): boolean {
  return !(job.profile !== null && job.exactProfile === true);
}

/**
 * What is wrong with a decision given the view now, or null when it may be applied. Messages say
 * what the decision asked and why it cannot be (`start job '7' on GPU 1 instance at 4: the
 * instance runs job '3'`).
 */
export function checkDecision(view: ClusterView, d: Decision, lookup: CheckLookup): string | null {
  const gpuAt = (id: number): GpuView | undefined => (Number.isInteger(id) ? view.gpus[id] : undefined);
  switch (d.kind) {
    case 'start-on-instance': {
      const what = `start job '${d.job}' on GPU ${d.gpu} instance at ${d.start}`;
      const job = lookup.queued(d.job);
      if (!job) return `${what}: job '${d.job}' is ${lookup.status?.(d.job) ?? 'not queued'}${lookup.status ? ', not queued' : ''}`;
      const g = gpuAt(d.gpu);
      if (!g) return `${what}: no GPU ${d.gpu} (the view has ${view.gpus.length})`;
      if (!g.migEnabled) return `${what}: GPU ${d.gpu} has MIG off`;
      const inst = g.instances.find((i) => i.start === d.start);
      if (!inst) return `${what}: GPU ${d.gpu} has no instance starting at ${d.start}`;
      if (inst.job !== null) return `${what}: the instance runs job '${inst.job}'`;
      if (foreignPidsOf(inst).length > 0) return `${what}: ${foreignText(inst)}`;
      if (!isInstanceUsable(g, inst, view.now)) {
        const readyAt = (inst as { readonly readyAt?: number }).readyAt ?? g.busyUntil;
        return `${what}: the instance is being created${readyAt === null || readyAt === undefined ? '' : ` until t=${readyAt}s`}`;
      }
      if (job.gpus !== 1) return `${what}: the job wants ${job.gpus} GPUs; MIG instances take single-GPU jobs only`;
      const need = memoryOf(job);
      if (!fitsMemory(need, inst.profile.memoryGiB)) return `${what}: the job needs ${need} GiB and ${inst.profile.name} has ${inst.profile.memoryGiB} GiB`;
      if (need === null && !unknownMemoryAllowed(job, { kind: 'instance', model: g.model, profile: inst.profile.name })) return `${what}: the job's memory is unknown and it asked for no profile: only a whole GPU is known to hold it`;
      if (!profileAllows(job, inst.profile.name, g.model)) {
        return job.exactProfile === true ? `${what}: the job asked for exactly ${job.profile}, not ${inst.profile.name}` : `${what}: the job asked for ${job.profile} and ${inst.profile.name} is smaller`;
      }
      return prefixed(what, quotaProblem(view, d, job));
    }
    case 'start-on-gpus': {
      const what = `start job '${d.job}' on GPUs ${d.gpus.join(',')} (${d.sharing})`;
      const job = lookup.queued(d.job);
      if (!job) return `${what}: job '${d.job}' is ${lookup.status?.(d.job) ?? 'not queued'}${lookup.status ? ', not queued' : ''}`;
      if (d.gpus.length !== job.gpus) return `${what}: the job wants ${job.gpus} GPUs, got ${d.gpus.length}`;
      if (new Set(d.gpus).size !== d.gpus.length) return `${what}: a GPU is named twice`;
      if (d.sharing !== 'exclusive' && d.sharing !== 'timeslice' && d.sharing !== 'mps') return `${what}: unknown sharing '${String(d.sharing)}'`;
      if (!wholeAllowed(job)) return `${what}: the job asked for exactly ${job.profile}, not whole GPUs`;
      if (d.fill === true) return prefixed(what, quotaProblem(view, d, job)); // a fill joins a burst-parallel job: the simulator checks it
      for (const id of d.gpus) {
        const g = gpuAt(id);
        if (!g) return `${what}: no GPU ${id} (the view has ${view.gpus.length})`;
        if (g.migEnabled) return `${what}: GPU ${id} has MIG on`;
        if (!isSettled(g, view.now)) return `${what}: GPU ${id} is being re-partitioned until t=${g.busyUntil}s`;
        if (foreignPidsOf(g).length > 0) return `${what}: ${foreignText(g)}`;
        const n = g.wholeGpuJobs.length;
        if (n > 0 && (d.sharing === 'exclusive' || g.sharing !== d.sharing)) return `${what}: GPU ${id} already runs ${g.wholeGpuJobs.join(', ')} (${g.sharing})`;
        const need = memoryOf(job);
        if (need !== null) {
          let mem = need;
          for (const other of g.wholeGpuJobs) {
            const r = view.running.get(other);
            mem += (r ? memoryOf(r.spec) : null) ?? 0;
          }
          if (!fitsMemory(mem, g.model.memoryGB)) return `${what}: GPU ${id} (${g.model.memoryGB} GB) cannot hold ${mem} GiB of jobs`;
        }
      }
      return prefixed(what, quotaProblem(view, d, job));
    }
    case 'repartition': {
      const what = `re-partition GPU ${d.gpu}`;
      const g = gpuAt(d.gpu);
      if (!g) return `${what}: no GPU ${d.gpu} (the view has ${view.gpus.length})`;
      if (!isSettled(g, view.now)) return `${what}: it is still being re-partitioned until t=${g.busyUntil}s`;
      if (d.layout === null) {
        const busy = g.migEnabled ? g.instances.find((i) => i.job !== null) : undefined;
        if (busy) return `${what} to MIG off: instance ${busy.profile.name} at ${busy.start} runs job '${busy.job}'`;
        const held = g.migEnabled ? g.instances.find((i) => foreignPidsOf(i).length > 0) : undefined;
        return held ? `${what} to MIG off: ${foreignText(held)}` : null;
      }
      // Turning MIG on under processes migpool did not start: the driver refuses it while they run.
      if (!g.migEnabled && foreignPidsOf(g).length > 0) return `${what}: ${foreignText(g)}`;
      if (g.wholeGpuJobs.length > 0) return `${what}: it runs whole-GPU jobs ${g.wholeGpuJobs.join(', ')}`;
      const wanted: { profile: GiProfile; start: number; size: number }[] = [];
      for (const e of d.layout) {
        let p: GiProfile;
        try {
          p = profileOf(g.model, e.profile);
        } catch (err) {
          return `${what}: ${(err as Error).message}`;
        }
        const pl = p.placements.find((x) => x.start === e.start);
        if (!pl) return `${what}: ${p.name} cannot start at ${e.start} on ${g.model.name} (starts: ${p.placements.map((x) => x.start).join(',')})`;
        wanted.push({ profile: p, start: e.start, size: pl.size });
      }
      const sorted = [...wanted].sort((a, b) => a.start - b.start);
      for (let k = 1; k < sorted.length; k++) {
        const a = sorted[k - 1]!;
        const b = sorted[k]!;
        if (a.start + a.size > b.start) return `${what}: ${a.profile.name} at ${a.start} overlaps ${b.profile.name} at ${b.start}`;
      }
      const violation = countingViolation(g.model, wanted.map((w) => w.profile));
      if (violation) return `${what}: ${violation}`;
      if (g.migEnabled) {
        for (const i of g.instances) {
          if (i.job === null) continue;
          if (!wanted.some((w) => w.start === i.start && w.profile.name === i.profile.name)) return `${what}: instance ${i.profile.name} at ${i.start} runs job '${i.job}' and the new layout drops it`;
        }
        for (const i of g.instances) {
          if (foreignPidsOf(i).length === 0) continue;
          if (!wanted.some((w) => w.start === i.start && w.profile.name === i.profile.name)) return `${what}: ${foreignText(i)} and the new layout drops it`;
        }
      }
      return null;
    }
    case 'preempt': {
      const r = view.running.get(d.job);
      if (!r) return `preempt job '${d.job}': it is not running`;
      if (r.spec.preemptible === false) return `preempt job '${d.job}': the job may not be preempted (it is not preemptible)`;
      return null;
    }
    default:
      return `unknown decision ${JSON.stringify(d)}`;
  }
}

/**
 * A view that stays as it is: the job histories it reports are read now and kept (a live view's
 * `history` reads the clock), so that a recorded view replays the same later.
 */
export function frozenView(view: ClusterView): ClusterView {
  const live = view.history;
  if (!live) return view;
  const kept = new Map<string, JobHistory>();
  for (const q of view.queue) kept.set(q.id, live(q.id));
  for (const id of view.running.keys()) kept.set(id, live(id));
  return { ...view, history: (id) => kept.get(id) ?? NO_HISTORY };
}

/** A problem prefixed with what the decision asked, or null. */
function prefixed(what: string, problem: string | null): string | null {
  return problem === null ? null : `${what}: ${problem}`;
}
