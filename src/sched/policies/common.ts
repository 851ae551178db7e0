import type { GpuModel } from '../../mig/types.js';
import { NO_HISTORY, type ClusterView, type GpuView, type InstanceView, type JobHistory, type JobSpec, type PolicyContext } from '../types.js';

/**
 * Optional fast paths a cluster view may carry (the simulator's does) so that policies need not
 * scan every GPU on every event. Every set is live and reflects the view at the time `decide` is
 * called; a policy must not rely on it changing while it plans (decisions are applied afterwards).
 * Policies reach it only through the helpers below, which fall back to scanning `view.gpus` when
 * a view has no index (the live service, tests that build views by hand).
 */
export interface ClusterIndex {
  /**
   * MIG-off GPUs without foreign processes that are not being re-partitioned and hold exactly `jobs` whole-GPU jobs shared
   * by `sharing` (ignored, and 'exclusive' assumed, when `jobs` is 0: idle GPUs).
   */
  wholeGpus(jobs: number, sharing: GpuView['sharing']): ReadonlySet<GpuView>;
  /**
   * Idle MIG instances of `profile` (a name) on GPUs of `model` (GpuModel.name) that a job may
   * start on now: `[on GPUs already running a job, on GPUs running none]`.
   */
  idleInstances(model: string, profile: string): readonly [ReadonlySet<InstanceView>, ReadonlySet<InstanceView>];
  /** MIG-on GPUs not being re-partitioned with no job and no foreign process on any instance. */
  idleMigGpus(): ReadonlySet<GpuView>;
  /** GPUs being re-partitioned now (busyUntil later than now). */
  reconfiguringGpus(): ReadonlySet<GpuView>;
}

/** A cluster view that may carry a ClusterIndex (see there). */
export interface IndexedClusterView extends ClusterView {
  readonly index?: ClusterIndex;
}

/** The view's index, if it has one. */
export function indexOf(view: ClusterView): ClusterIndex | undefined {
  return (view as IndexedClusterView).index;
}

/** Whether a GPU may be re-partitioned or given new work now (no re-partition in progress). */
export function isSettled(gpu: GpuView, now: number): boolean {
  return gpu.busyUntil === null || gpu.busyUntil <= now;
}

/**
 * Whether a job may start on an instance now: idle (no job, no foreign process), and not created by a re-partition still in
 * progress. Instances carry an optional `readyAt` (the simulator sets it); without it, every idle
 * instance of a GPU being re-partitioned counts as unavailable.
 */
export function isInstanceUsable(gpu: GpuView, inst: InstanceView, now: number): boolean {
  if (inst.job !== null || foreignPidsOf(inst).length > 0) return false;
  const readyAt = (inst as { readonly readyAt?: number }).readyAt;
  return readyAt !== undefined ? readyAt <= now : isSettled(gpu, now);
}

/**
 * The processes on a GPU or a MIG instance that are not the pool's jobs' (empty: none). The one
 * rule for both clocks: a GPU that has any is given to no whole-GPU job, an instance that has any
 * to no job (the decision check refuses them, the helpers here leave them out, pending reasons
 * name them) until they end.
 */
export function foreignPidsOf(where: GpuView | InstanceView): readonly number[] {
  return where.foreignPids ?? NONE;
}
const NONE: readonly number[] = [];

/**
 * Foreign processes in words, for decision checks and pending reasons: `GPU 1 runs processes
 * 4000, 4001 that migpool did not start`, `GPU 0's 1g.5gb at 3 runs process 4002 that ...`.
 */
export function foreignText(where: GpuView | InstanceView): string {
  const pids = foreignPidsOf(where);
  const place = 'profile' in where ? `GPU ${where.gpu}'s ${where.profile.name} at ${where.start}` : `GPU ${where.id}`;
  return `${place} runs process${pids.length === 1 ? '' : 'es'} ${pids.join(', ')} that migpool did not start`;
}

/** MIG-off GPUs, settled, with exactly `jobs` whole-GPU jobs shared by `sharing` (0: idle GPUs); never one with foreign processes. */
export function wholeGpusWith(view: ClusterView, jobs: number, sharing: GpuView['sharing'] = 'exclusive'): ReadonlySet<GpuView> {
  const index = indexOf(view);
  if (index) return index.wholeGpus(jobs, sharing);
  const out = new Set<GpuView>();
  for (const g of view.gpus) {
    if (g.migEnabled || !isSettled(g, view.now) || g.wholeGpuJobs.length !== jobs || foreignPidsOf(g).length > 0) continue;
    if (jobs > 0 && g.sharing !== sharing) continue;
    out.add(g);
  }
  return out;
}

/** Idle, usable instances of `profile` on GPUs of `model`: [on busy GPUs, on idle GPUs]. */
export function idleInstancesOf(view: ClusterView, model: string, profile: string): readonly [ReadonlySet<InstanceView>, ReadonlySet<InstanceView>] {
  const index = indexOf(view);
  if (index) return index.idleInstances(model, profile);
  const busy = new Set<InstanceView>();
  const idle = new Set<InstanceView>();
  for (const g of view.gpus) {
    if (!g.migEnabled || g.model.name !== model) continue;
    const gpuBusy = g.instances.some((i) => i.job !== null);
    for (const i of g.instances) {
      if (i.profile.name === profile && isInstanceUsable(g, i, view.now)) (gpuBusy ? busy : idle).add(i);
    }
  }
  return [busy, idle];
}

/** MIG-on GPUs, settled, with no job and no foreign process on any instance (one that has some cannot go back to MIG off). */
export function idleMigGpus(view: ClusterView): ReadonlySet<GpuView> {
  const index = indexOf(view);
  if (index) return index.idleMigGpus();
  return new Set(view.gpus.filter((g) => g.migEnabled && isSettled(g, view.now) && g.instances.every((i) => i.job === null && foreignPidsOf(i).length === 0)));
}

/** GPUs with a re-partition in progress. */
export function reconfiguringGpus(view: ClusterView): ReadonlySet<GpuView> {
  const index = indexOf(view);
  if (index) return index.reconfiguringGpus();
  return new Set(view.gpus.filter((g) => !isSettled(g, view.now)));
}

/** The distinct GPU models of a fleet, cached per `gpus` array (the simulator keeps it stable). */
const modelsCache = new WeakMap<readonly GpuView[], readonly GpuModel[]>();
export function fleetModels(view: ClusterView): readonly GpuModel[] {
  let models = modelsCache.get(view.gpus);
  if (!models) {
    const byName = new Map<string, GpuModel>();
    for (const g of view.gpus) if (!byName.has(g.model.name)) byName.set(g.model.name, g.model);
    models = [...byName.values()];
    modelsCache.set(view.gpus, models);
  }
  return models;
}

/**
 * Whether a job could ever run on whole GPUs of this fleet: at least `job.gpus` GPUs whose memory
 * holds it (of any models). Jobs that never can are skipped by the policies here, so that they do
 * not block the queue forever (the simulator reports them as not completed).
 */
export function canEverRunWhole(view: ClusterView, ctx: PolicyContext, job: JobSpec): boolean {
  // A job that asked for exactly one slice never runs on a whole GPU.
  if (job.exactProfile === true) return false;
  if (job.gpus > view.gpus.length) return false;
  const counts = modelCounts(view);
  let n = 0;
  for (const m of fleetModels(view)) if (ctx.fits(job, { kind: 'whole', model: m })) n += counts.get(m.name) ?? 0;
  return n >= job.gpus;
}

const countsCache = new WeakMap<readonly GpuView[], ReadonlyMap<string, number>>();
function modelCounts(view: ClusterView): ReadonlyMap<string, number> {
  let counts = countsCache.get(view.gpus);
  if (!counts) {
    const c = new Map<string, number>();
    for (const g of view.gpus) c.set(g.model.name, (c.get(g.model.name) ?? 0) + 1);
    countsCache.set(view.gpus, c);
    counts = c;
  }
  return counts;
}

/**
 * Hands out items of an iterable one at a time, each at most once, skipping those a predicate
 * rejects now but keeping them for later requests: a policy takes GPUs or instances from a live set
 * without copying it.
 */
export class Picker<T> {
  private readonly it: Iterator<T>;
  private readonly skipped: T[] = [];
  private done = false;

  constructor(items: Iterable<T>) {
    this.it = items[Symbol.iterator]();
  }

  /** The next item `accept` takes, or undefined when none is left. */
  take(accept: (item: T) => boolean = () => true): T | undefined {
    for (let k = 0; k < this.skipped.length; k++) {
      const item = this.skipped[k] as T;
      if (accept(item)) {
        this.skipped.splice(k, 1);
        return item;
      }
    }
    while (!this.done) {
      const r = this.it.next();
      if (r.done) {
        this.done = true;
        break;
      }
      if (accept(r.value)) return r.value;
      this.skipped.push(r.value);
    }
    return undefined;
  }

  /** Whether any item is left (whatever a predicate would say). */
  hasAny(): boolean {
    if (this.skipped.length > 0) return true;
    if (this.done) return false;
    const r = this.it.next();
    if (r.done) {
      this.done = true;
      return false;
    }
    this.skipped.push(r.value);
    return true;
  }

  /** `n` items `accept` takes, or null (taking none) when there are fewer. */
  takeMany(n: number, accept: (item: T) => boolean = () => true): T[] | null {
    const out: T[] = [];
    while (out.length < n) {
      const item = this.take(accept);
      if (item === undefined) {
        this.skipped.unshift(...out);
        return null;
      }
      out.push(item);
    }
    return out;
  }
}

/** Concatenation of iterables, lazily. */
export function* chain<T>(...parts: readonly Iterable<T>[]): Generator<T> {
  for (const p of parts) yield* p;
}

/**
 * Decisions that turn MIG off on every settled MIG-on GPU with no job: what the whole-GPU policies
 * (exclusive, timeslice, mps) do with GPUs they find partitioned.
 */
export function migOffIdle(view: ClusterView): { kind: 'repartition'; gpu: number; layout: null }[] {
  const out: { kind: 'repartition'; gpu: number; layout: null }[] = [];
  for (const g of idleMigGpus(view)) out.push({ kind: 'repartition', gpu: g.id, layout: null });
  return out;
}

/** Speeds equal within this relative tolerance count as a tie. */
export const SPEED_TIE = 1e-9;

/**
 * Compute slices a job asked for with `profile` on `model`, or 0 when it asked for none: policies
 * here treat a requested profile as a floor on the instance's compute slices. On a model without
 * a profile of that name (an A100's `3g.20gb` on an H100) the floor is the slices the name gives:
 * NVIDIA names GPU instance profiles `<compute slices>g.<memory>gb` (MIG User Guide, "Supported
 * MIG Profiles"; every profile of src/mig/catalog is, common.test.ts checks), so a job that asked
 * for `3g.20gb` gets at least 3 slices on any GPU.
 */
export function requestedSlices(job: JobSpec, model: GpuModel): number {
  if (job.profile === null) return 0;
  const p = model.giProfiles.find((q) => q.name === job.profile);
  if (p) return p.computeSlices;
  const named = /^(\d+)g\./.exec(job.profile);
  return named ? Number(named[1]) : 0;
}

/**
 * Whether an instance of `profileName` on `model` may take the job as it asked: any profile when it
 * named none; exactly its profile when `exactProfile`; otherwise one with at least as many compute
 * slices as the profile it named (a floor). Every policy that picks an instance profile asks this.
 */
export function profileAllows(job: JobSpec, profileName: string, model: GpuModel): boolean {
  if (job.profile === null) return true;
  if (job.exactProfile === true) return profileName === job.profile;
  const p = model.giProfiles.find((q) => q.name === profileName);
  return p !== undefined && p.computeSlices >= requestedSlices(job, model);
}

/**
 * Whether a job could ever run here at all: on whole GPUs (see canEverRunWhole), or, for a job
 * that asked for exactly one profile, on an instance of that profile of some GPU that holds it.
 */
export function canEverRun(view: ClusterView, ctx: PolicyContext, job: JobSpec): boolean {
  if (job.exactProfile !== true) return canEverRunWhole(view, ctx, job);
  return fleetModels(view).some((m) => m.giProfiles.some((p) => p.name === job.profile) && ctx.fits(job, { kind: 'instance', model: m, profile: job.profile! }));
}

/** GiB a job needs: its own figure, else its workload's; null when unknown (assumed to fit). */
export function memoryNeed(job: JobSpec): number | null {
  return job.memoryGiB ?? job.workload.memoryGiB;
}

/**
 * ASSUMPTION: the length (full-GPU seconds) a policy assumes for a job that comes with no
 * estimate: one hour, the default the service has always assumed. Not measured; a prior that the
 * job's own history replaces as it runs (see expectedRemaining).
 */
export const UNKNOWN_ESTIMATE_SECONDS = 3600;

/** A job's expected length before it runs: its estimate, or UNKNOWN_ESTIMATE_SECONDS. */
export function expectedWork(job: JobSpec): number {
  return job.estimate ?? UNKNOWN_ESTIMATE_SECONDS;
}

/**
 * Work (full-GPU seconds) a job that has done `done` is expected to have left. Estimates are
 * hints: a job short of its estimate is expected to run to it; a job past its estimate, or with
 * none past the prior, is never taken for one about to end: it is expected to run as long again as
 * it has (heavy-tailed job lengths: the longer a job has run, the longer it is likely to run).
 */
export function expectedRemaining(job: JobSpec, done: number): number {
  const total = expectedWork(job);
  return done < total ? Math.max(total - done, 0.5 * done) : Math.max(done, 1);
}

/** Estimated release of whole GPUs by a running job (what EASY backfill plans with). */
export interface GpuRelease {
  readonly at: number;
  readonly gpus: number;
}

/**
 * When whole GPUs come free, by the estimate that every running whole-GPU job does its expected
 * remaining work (expectedRemaining) at speed 1: sorted by time.
 */
export function estimatedReleases(view: ClusterView): GpuRelease[] {
  const out: GpuRelease[] = [];
  for (const r of view.running.values()) {
    if (r.placement.kind !== 'gpus') continue;
    out.push({ at: view.now + expectedRemaining(r.spec, r.done), gpus: r.placement.gpus.length });
  }
  return out.sort((a, b) => a.at - b.at);
}

/** A job's history from the view (attained service, preemptions); NO_HISTORY where the view has none. */
export function historyOf(view: ClusterView, jobId: string): JobHistory {
  return view.history ? view.history(jobId) : NO_HISTORY;
}

/**
 * Drops from each queue (in place, order kept) the jobs neither queued nor running in the view,
 * calling `forget` for each: the bookkeeping of level-queue policies (tiresias, migpool) when jobs end.
 */
export function pruneQueues(queues: readonly string[][], queued: ReadonlyMap<string, unknown>, view: ClusterView, forget: (id: string) => void): void {
  for (const q of queues) {
    let w = 0;
    for (const id of q) {
      if (queued.has(id) || view.running.has(id)) q[w++] = id;
      else forget(id);
    }
    q.length = w;
  }
}
