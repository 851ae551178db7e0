import type { ClusterView, GpuView, JobSpec, PolicyContext, RunningJobView } from '../types.js';
import { expectedWork, expectedRemaining } from './common.js';

/**
 * Where migpool has promised a queued job a place that is being made for it: an instance being
 * created by a re-partition, or whole GPUs whose MIG mode is being turned off.
 */
export type MigpoolPromise = { readonly kind: 'instance'; readonly gpu: number; readonly start: number } | { readonly kind: 'gpus'; readonly gpus: readonly number[] };

/**
 * What migpool expects of the GPUs that are busy now. Estimates take a job's `work` (its runtime
 * alone on one whole GPU, from the trace or the user, as EASY backfilling takes a user's runtime
 * estimate) and its current speed: a running job ends in (work - done) / speed seconds; a promised
 * job when its re-partition is done plus work / its speed on the promised resource.
 */
export interface Estimates {
  /** When each busy (or promised) GPU is expected to come free: the end of its last job. */
  readonly releaseAt: ReadonlyMap<number, number>;
  /** The same, sorted by time (ties by GPU id). */
  readonly releases: readonly { readonly at: number; readonly gpu: number }[];
  /**
   * The committed horizon: the later of the latest expected end of any running or promised job,
   * and now plus the time the whole fleet needs for all the work known (left to running jobs and
   * wanted by queued ones, GPU-seconds over GPUs). No schedule of the known jobs ends before it;
   * a queued job with now + work beyond it would lengthen the schedule by every second it waits
   * (see `isCritical`).
   */
  readonly horizon: number;
}

/**
 * Work (full-GPU seconds) a running job is expected to have left: `work - done`; a job that has
 * run past its estimate (`work` was too low) is expected to run half as long again as it has.
 */
export function expectedLeft(r: RunningJobView): number {
  return expectedRemaining(r.spec, r.done);
}

/** Expected end of a running job: now + expectedLeft / speed. */
function runningEnd(view: ClusterView, id: string): number {
  const r = view.running.get(id);
  if (!r) return view.now;
  return view.now + expectedLeft(r) / Math.max(r.speed, 1e-9);
}

/** Speed of a queued job on the resource it was promised (1 on whole GPUs). */
function promisedSpeed(view: ClusterView, ctx: PolicyContext, job: JobSpec, p: MigpoolPromise): number {
  if (p.kind === 'gpus') return 1;
  const g = view.gpus[p.gpu];
  const inst = g?.instances.find((i) => i.start === p.start);
  if (!g || !inst) return 1;
  return Math.max(ctx.speedOn(job, { kind: 'instance', model: g.model, profile: inst.profile.name }), 1e-9);
}

/** Estimates for the view (see Estimates); `promised` are the policy's promises to queued jobs. */
export function estimate(view: ClusterView, ctx: PolicyContext, promised: ReadonlyMap<string, MigpoolPromise>, queued: ReadonlyMap<string, JobSpec>): Estimates {
  const releaseAt = new Map<number, number>();
  const bump = (gpu: number, at: number) => {
    const cur = releaseAt.get(gpu);
    if (cur === undefined || at > cur) releaseAt.set(gpu, at);
  };
  let horizon = view.now;
  for (const g of view.gpus) {
    for (const id of g.wholeGpuJobs) bump(g.id, runningEnd(view, id));
    for (const i of g.instances) if (i.job !== null) bump(g.id, runningEnd(view, i.job));
  }
  for (const [id, p] of promised) {
    const job = queued.get(id);
    if (!job) continue;
    const gpus = p.kind === 'gpus' ? p.gpus : [p.gpu];
    for (const gid of gpus) {
      const g = view.gpus[gid] as GpuView | undefined;
      const ready = g && g.busyUntil !== null && g.busyUntil > view.now ? g.busyUntil : view.now;
      bump(gid, ready + Math.max(0, expectedWork(job)) / promisedSpeed(view, ctx, job, p));
    }
  }
  // The backlog: GPU-seconds of work known, over the fleet's GPUs.
  let backlog = 0;
  for (const r of view.running.values()) backlog += expectedLeft(r) * r.spec.gpus;
  for (const q of queued.values()) backlog += expectedWork(q) * q.gpus;
  if (view.gpus.length > 0) horizon = Math.max(horizon, view.now + backlog / view.gpus.length);
  const releases: { at: number; gpu: number }[] = [];
  for (const [gpu, at] of releaseAt) {
    releases.push({ at, gpu });
    if (at > horizon) horizon = at;
  }
  releases.sort((a, b) => a.at - b.at || a.gpu - b.gpu);
  return { releaseAt, releases, horizon };
}

/**
 * Whether a queued job is critical: started at `start` (now, or as soon as enough GPUs are
 * expected to be free for it) on whole GPUs it would still end after the committed horizon, so
 * that it alone sets when the work known so far can be done. Serving critical jobs first keeps
 * the longest jobs from becoming the tail of the schedule (a longest-processing-time rule, applied
 * only to the jobs that would otherwise lengthen it).
 */
export function isCritical(job: JobSpec, start: number, horizon: number): boolean {
  return start + expectedWork(job) > horizon;
}

/** A binary min-heap of numbers. */
class MinHeap {
  private readonly a: number[];
  constructor(items: readonly number[]) {
    this.a = [...items].sort((x, y) => x - y);
  }
  get size(): number {
    return this.a.length;
  }
  pop(): number | undefined {
    const a = this.a;
    const top = a[0];
    const last = a.pop();
    if (a.length === 0 || last === undefined) return top;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= a.length) break;
      const r = l + 1;
      const c = r < a.length && (a[r] as number) < (a[l] as number) ? r : l;
      if ((a[c] as number) >= last) break;
      a[i] = a[c] as number;
      i = c;
    }
    a[i] = last;
    return top;
  }
  push(x: number): void {
    const a = this.a;
    let i = a.length;
    a.push(x);
    while (i > 0) {
      const p = (i - 1) >> 1;
      if ((a[p] as number) <= x) break;
      a[i] = a[p] as number;
      i = p;
    }
    a[i] = x;
  }
}

/**
 * When each of `jobs` (in serve order, each wanting one whole GPU) is expected to start if they
 * all wait for whole GPUs: the GPUs come free at `releases` (those `skip` rejects left out: a
 * reservation holds them) and each job, as it starts, holds its GPU for its `work`. List
 * scheduling on the expected releases: the waiting line's estimate of a whole GPU for each job.
 */
export function waitLine(releases: Estimates['releases'], skip: (gpu: number) => boolean, jobs: readonly JobSpec[]): Map<string, number> {
  const heap = new MinHeap(releases.filter((r) => !skip(r.gpu)).map((r) => r.at));
  const out = new Map<string, number>();
  for (const job of jobs) {
    const at = heap.pop();
    if (at === undefined) {
      out.set(job.id, Number.POSITIVE_INFINITY);
      continue;
    }
    out.set(job.id, at);
    heap.push(at + expectedWork(job));
  }
  return out;
}
