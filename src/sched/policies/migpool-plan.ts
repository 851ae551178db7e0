import type { GpuModel } from '../../mig/types.js';
import type { Workload } from '../../perf/types.js';
import type { ClusterView, Decision, GpuView, JobSpec, PolicyContext } from '../types.js';
import { isInstanceUsable, isSettled, expectedWork, profileAllows } from './common.js';
import type { MigpoolPromise } from './migpool-estimates.js';
import { hasLayout } from './packing.js';

/** Most jobs one GPU is cut for (seven one-slice instances on an A100 or H100). */
export const MAX_PER_GPU = 7;

/**
 * ASSUMPTION: seconds a checkpointed job loses to save and restore its state, on top of the
 * re-partition time. The simulator does not charge it (a preempted job restarts as soon as its
 * resource is ready); migpool counts it when it weighs moving a job, so that it only moves jobs
 * that gain much more than that.
 */
export const RESTART_SECONDS = 60;

/**
 * Speeds and memory fits of workloads on MIG profiles, remembered across calls (the performance
 * model's answers never change; asking the context builds keys and looks up profiles every time).
 */
export class SpeedMemo {
  private readonly byWorkload = new WeakMap<Workload, Map<string, number>>();

  /** Speed of `job` on `profile` of `model`, or -1 when it does not fit there. */
  on(ctx: PolicyContext, job: JobSpec, model: GpuModel, profile: string): number {
    let m = this.byWorkload.get(job.workload);
    if (!m) {
      m = new Map();
      this.byWorkload.set(job.workload, m);
    }
    const key = `${job.memoryGiB ?? ''}|${model.name}|${profile}`;
    let v = m.get(key);
    if (v === undefined) {
      const q = { kind: 'instance' as const, model, profile };
      v = ctx.fits(job, q) ? ctx.speedOn(job, q) : -1;
      m.set(key, v);
    }
    return v;
  }
}

/**
 * One `decide` call's working state: the decisions so far, the GPUs and jobs they touched, the
 * idle resources left, and the reservations' deadlines. Placement steps share it so that no GPU
 * or instance is handed out twice in a call.
 */
export class Plan {
  readonly decisions: Decision[] = [];
  /** GPUs that got a decision this call, or wait for a promise. */
  readonly touched = new Set<number>();
  /** Jobs started or promised a place this call. */
  readonly placed = new Set<string>();
  /** GPU -> latest time work placed on it may end (the shadow time of a reservation holding it). */
  readonly deadline = new Map<number, number>();
  /** Multi-GPU jobs holding a reservation this call. */
  readonly reserved = new Set<string>();
  /** Settled MIG-off GPUs with no job. */
  readonly idleWhole: GpuView[] = [];
  /** Settled MIG-on GPUs with no job. */
  readonly idleMig: GpuView[] = [];
  /** Settled MIG-on GPUs with jobs and at least one usable idle instance. */
  readonly partial: GpuView[] = [];
  /** Settled MIG-on GPUs with jobs (candidates for growth). */
  readonly cutBusy: GpuView[] = [];
  /** Usable idle instances on `partial` GPUs. */
  idleInstances = 0;
  /** Idle instances handed out this call, as `gpu:start`. */
  readonly takenInstances = new Set<string>();
  /** GPUs with an instance handed out this call. */
  readonly gotJobs = new Set<number>();

  constructor(
    readonly view: ClusterView,
    readonly ctx: PolicyContext,
    readonly promised: Map<string, MigpoolPromise>,
    readonly speeds: SpeedMemo,
  ) {}

  get now(): number {
    return this.view.now;
  }

  /** Sorts the settled GPUs not touched yet into the idle and partly used lists. */
  scan(): void {
    const now = this.now;
    for (const g of this.view.gpus) {
      if (this.touched.has(g.id) || !isSettled(g, now)) continue;
      if (!g.migEnabled) {
        if (g.wholeGpuJobs.length === 0) this.idleWhole.push(g);
        continue;
      }
      let busy = 0;
      let idle = 0;
      for (const i of g.instances) {
        if (i.job !== null) busy++;
        else if (isInstanceUsable(g, i, now)) idle++;
      }
      if (busy === 0) this.idleMig.push(g);
      else {
        if (idle > 0) {
          this.partial.push(g);
          this.idleInstances += idle;
        }
        this.cutBusy.push(g);
      }
    }
  }

  /** Idle GPUs not handed out yet (MIG off first: no re-partition needed). */
  idleGpus(): GpuView[] {
    return [...this.idleWhole, ...this.idleMig].filter((g) => !this.touched.has(g.id));
  }

  /** Takes an idle GPU that `accept` takes, MIG-off ones first (or MIG-on ones first). */
  takeIdle(accept: (g: GpuView) => boolean, preferMig = false): GpuView | null {
    const lists = preferMig ? [this.idleMig, this.idleWhole] : [this.idleWhole, this.idleMig];
    for (const list of lists) {
      const k = list.findIndex((g) => !this.touched.has(g.id) && accept(g));
      if (k >= 0) return list.splice(k, 1)[0] ?? null;
    }
    return null;
  }

  /** Whether work started on GPU g after `delay` at `speed` ends by the GPU's deadline. */
  usableBy(g: GpuView, job: JobSpec, speed: number, delay: number): boolean {
    const d = this.deadline.get(g.id);
    return d === undefined || this.now + delay + expectedWork(job) / speed <= d;
  }

  fitsWhole(job: JobSpec, g: GpuView): boolean {
    // A job that asked for exactly one slice never gets a whole GPU.
    if (job.exactProfile === true) return false;
    return this.ctx.fits(job, { kind: 'whole', model: g.model });
  }

  /** A whole GPU may take the job now: its memory holds it, and it ends by the GPU's deadline. */
  wholeOk(job: JobSpec, g: GpuView): boolean {
    return this.fitsWhole(job, g) && this.usableBy(g, job, 1, g.migEnabled ? this.ctx.reconfigureSeconds : 0);
  }

  /** Speed of a job on a profile, or -1 when it does not fit or the profile is below the one it asked for. */
  speedOn(job: JobSpec, model: GpuModel, profile: string): number {
    if (!model.giProfiles.some((x) => x.name === profile) || !profileAllows(job, profile, model)) return -1;
    return this.speeds.on(this.ctx, job, model, profile);
  }

  /** Starts a single-GPU job on a whole GPU (turning MIG off first, and promising it, when it is on). */
  giveWhole(job: JobSpec, g: GpuView): void {
    if (g.migEnabled) {
      this.decisions.push({ kind: 'repartition', gpu: g.id, layout: null });
      this.promised.set(job.id, { kind: 'gpus', gpus: [g.id] });
    } else this.decisions.push({ kind: 'start-on-gpus', job: job.id, gpus: [g.id], sharing: 'exclusive' });
    this.placed.add(job.id);
    this.touched.add(g.id);
  }

  /** Starts a job on an idle instance of GPU g. */
  startOnInstance(job: string, g: GpuView, start: number): void {
    this.decisions.push({ kind: 'start-on-instance', job, gpu: g.id, start });
    this.takenInstances.add(`${g.id}:${start}`);
    this.gotJobs.add(g.id);
    this.placed.add(job);
  }

  /** Gives GPU g `layout` and starts (or, when it must be re-cut first, promises) the jobs assigned to it. */
  applyLayout(g: GpuView, layout: readonly { readonly profile: string; readonly start: number }[], assignment: ReadonlyMap<string, number>): void {
    if (hasLayout(g, layout)) {
      // The GPU already has this layout: start at once (a no-op re-partition brings no event).
      for (const [id, start] of assignment) this.startOnInstance(id, g, start);
    } else {
      this.decisions.push({ kind: 'repartition', gpu: g.id, layout });
      for (const [id, start] of assignment) this.promised.set(id, { kind: 'instance', gpu: g.id, start });
    }
    for (const id of assignment.keys()) this.placed.add(id);
    this.touched.add(g.id);
  }
}
