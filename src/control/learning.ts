import type { GpuInstanceInfo, GpuPort, GpuProcess } from '../gpu/port.js';
import { resolveGpuModel } from '../mig/catalog/index.js';
import { predict } from '../perf/model.js';
import { raiseMemoryAfterOom, refitWorkload, type ObservedPoint } from '../perf/refit.js';
import type { Workload } from '../perf/types.js';
import type { GpuModel } from '../mig/types.js';
import type { JobPlacement, JobRecord, Store, WorkloadObservation } from '../store/types.js';

/**
 * Learning from the jobs: the service records, per workload, the speed its jobs measured on each
 * resource (from their progress lines) and the peak GPU memory of their processes (from the GPU
 * port's per-process memory, i.e. nvidia-smi's), keeps them in the store, and hands the policy the
 * workload refitted to them (perf/refit.ts refitWorkload) for the next placement.
 *
 * Only what one job has alone is measured: a MIG instance, or one whole GPU it holds exclusively
 * (a time-sliced or MPS GPU's speed is the sharing's, not the workload's).
 *
 * Whose observations teach whom: a job prints its own progress and out-of-memory lines, so a user
 * could teach a workload anything (a fake "CUDA out of memory" raises its memory need, fake
 * progress lowers its speed). Each observation keeps its owner (the job's user): those of admins'
 * jobs and of jobs of no user (a pool without users) are shared, and teach every job; those of
 * other users teach only their own jobs. A job is placed by the shared fit (the workload refitted
 * to the shared observations) corrected by its owner's own observations.
 */

/** What the learner is told of its settings; defaults in brackets. */
export interface LearningOptions {
  /** Seconds an attempt runs before its speed counts (start-up: loading data, cuDNN autotuning, the first batches) [30, an assumption]. */
  readonly afterSeconds?: number;
  /** How often the GPUs' per-process memory is read, ms [10000: one nvidia-smi -q -x every 10 s]. */
  readonly memoryPollMs?: number;
  /** Changed observations are written at least this often, ms, besides at every attempt's end [30000]. */
  readonly persistMs?: number;
}

/** Who a job belongs to and whether what it measures is shared; the service gives its own. */
export interface LearningOwners {
  /** The user a job belongs to, or null for none [`JobRecord.owner`]. */
  readonly ownerOf?: (job: JobRecord) => string | null;
  /** Whether a user's observations teach everyone: an admin [the store's user record says so]. */
  readonly trusted?: (user: string) => Promise<boolean>;
}

/** The observations a job of `owner` learns from (pure): the shared ones and its owner's own. */
export function observationsFor(observations: readonly WorkloadObservation[], owner: string | null): WorkloadObservation[] {
  return observations.filter((o) => o.shared || (owner !== null && o.owner === owner));
}

/**
 * The fit reads at most this many of the newest observations per GPU model and resource (the store
 * keeps them all): enough to average out noise, few enough that a long-lived service refits fast
 * and follows a workload that changed (a new version of the job's code).
 */
export const FIT_PER_RESOURCE = 16;

/** A measured speed moves the fit only when it differs from the one the fit used by more than this share (progress is read every tick). */
export const SPEED_CHANGE = 0.05;

/** Where one attempt runs, as the learner keys it: `whole` or a MIG profile, on a GPU model. */
interface AttemptKey {
  readonly workload: string;
  readonly owner: string | null;
  readonly shared: boolean;
  readonly jobId: string;
  readonly attempt: number;
  readonly gpuModel: string;
  readonly resource: string;
}

function keyOf(jobId: string, attempt: number): string {
  return `${jobId}|${attempt}`;
}

/** The key of a workload's observations of one scope: the shared ones (owner null), or one user's own. */
function scopeOf(workload: string, owner: string | null): string {
  return `${workload}\u0000${owner ?? ''}`;
}

/** The single resource a placement measures (an instance, or one exclusive whole GPU), or null. */
export function measuredResource(p: JobPlacement): { readonly gpu: number; readonly resource: string } | null {
  if (p.kind === 'instance') return { gpu: p.gpu, resource: p.profile };
  if (p.gpus.length === 1 && p.sharing === 'exclusive') return { gpu: p.gpus[0]!, resource: 'whole' };
  return null;
}

/**
 * MiB each placement's processes hold now: on an instance, the processes of its GPU instance (found
 * by placement start); on an exclusive whole GPU, the GPU's processes. Placements not measured are absent.
 */
export function memoryOfPlacements(placements: ReadonlyMap<string, JobPlacement>, instances: readonly GpuInstanceInfo[], processes: readonly GpuProcess[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const [id, p] of placements) {
    let used: GpuProcess[];
    if (p.kind === 'instance') {
      const gi = instances.find((i) => i.gpu === p.gpu && i.start === p.start);
      if (!gi) continue;
      used = processes.filter((x) => x.gpu === p.gpu && x.gpuInstanceId === gi.id);
    } else {
      if (!measuredResource(p)) continue;
      used = processes.filter((x) => x.gpu === p.gpus[0] && x.gpuInstanceId === null);
    }
    if (used.length > 0) out.set(id, used.reduce((s, x) => s + x.usedMemoryMiB, 0));
  }
  return out;
}

/**
 * The catalogue's look-up of GPU models by name, each name asked once (null: a name the catalogue
 * does not know). A look-up normalizes every model's names (about 23 µs): once per observation, a
 * refit over 10,000 observations held the service's event loop 0.24 s, at every new observation.
 */
function modelLookup(): (name: string) => GpuModel | null {
  const known = new Map<string, GpuModel | null>();
  return (name) => {
    let model = known.get(name);
    if (model === undefined) {
      try {
        model = resolveGpuModel(name);
      } catch {
        model = null;
      }
      known.set(name, model);
    }
    return model;
  };
}

/**
 * `base` refitted to its observations (pure): speeds as points on their resources (iteration time
 * = batch / samples per second, at the workload's batch), the largest peak memory as a floor on
 * its need, and each out-of-memory on a slice raising its need above that slice.
 */
export function learnedWorkload(base: Workload, observations: readonly WorkloadObservation[]): Workload {
  const points: ObservedPoint[] = [];
  let peakMiB = 0;
  let w = base;
  const modelOf = modelLookup();
  for (const o of observations) {
    const gpu = modelOf(o.gpuModel);
    if (gpu === null) continue;
    const profile = o.resource === 'whole' ? null : gpu.giProfiles.find((p) => p.name === o.resource);
    if (profile === undefined) continue;
    if (o.samplesPerSecond !== null) {
      points.push({ resource: profile === null ? { kind: 'full', gpu } : { kind: 'mig', gpu, profile: profile.name }, iterationMs: (1000 * base.batchSize) / o.samplesPerSecond });
    }
    if (o.peakMemoryMiB !== null) peakMiB = Math.max(peakMiB, o.peakMemoryMiB);
    if (o.outOfMemory && profile !== null && profile.memoryGiB !== null) w = raiseMemoryAfterOom(w, profile.memoryGiB);
  }
  return refitWorkload(w, points, peakMiB > 0 ? peakMiB / 1024 : null);
}

/** The service's learner: observations in memory and in the store, and the workloads refitted to them. */
export class WorkloadLearning {
  private readonly afterSeconds: number;
  private readonly memoryPollMs: number;
  private readonly persistMs: number;
  /** Observations by workload name, then by job and attempt. */
  private readonly seen = new Map<string, Map<string, WorkloadObservation>>();
  /** Speeds each attempt's observation had when the workload was last refitted. */
  private readonly usedSpeed = new Map<string, number | null>();
  private readonly dirty = new Set<string>();
  /** Refitted workloads by name and scope (shared, or one user's), with their base and the data's versions. */
  private readonly fitted = new Map<string, { base: Workload; version: string; workload: Workload }>();
  /** Versions of each workload's data by scope: `name` + NUL + owner, the owner empty for the shared observations. */
  private readonly versions = new Map<string, number>();
  /** Owner and sharing of each attempt, once its owner was looked up. */
  private readonly owners = new Map<string, { owner: string | null; shared: boolean }>();
  private readonly ownerOf: (job: JobRecord) => string | null;
  private readonly trusted: (user: string) => Promise<boolean>;
  private memoryReadAt = -Infinity;
  private persistedAt = -Infinity;
  private readingMemory = false;
  /** Why the last read of the GPUs' per-process memory failed (said once), or null when it worked. */
  private memoryReadFailure: string | null = null;

  constructor(
    private readonly store: Store,
    private readonly gpu: GpuPort,
    options: LearningOptions = {},
    private readonly log?: (line: string) => void,
    owners: LearningOwners = {},
  ) {
    this.ownerOf = owners.ownerOf ?? ((r) => r.owner ?? null);
    this.trusted = owners.trusted ?? (async (user) => (await store.getUser(user))?.admin === true);
    this.afterSeconds = options.afterSeconds ?? 30;
    this.memoryPollMs = options.memoryPollMs ?? 10_000;
    this.persistMs = options.persistMs ?? 30_000;
  }

  /** Reads what earlier runs of the service learned. */
  async load(): Promise<void> {
    for (const o of await this.store.listObservations()) this.put(o, false);
  }

  /** Every observation of a workload (all workloads when `name` is absent), oldest first. */
  observations(name?: string): WorkloadObservation[] {
    const all = name === undefined ? [...this.seen.values()].flatMap((m) => [...m.values()]) : [...(this.seen.get(name)?.values() ?? [])];
    return all.sort((a, b) => a.time - b.time || Number(a.jobId) - Number(b.jobId) || a.attempt - b.attempt);
  }

  /**
   * The workload `name` as the jobs of `owner` see it: `base` refitted to the shared observations
   * and `owner`'s own (the shared ones alone for null), or `base` itself when there are none. The
   * same object until new data of those arrives (the speed table caches by it).
   */
  workload(name: string, base: Workload, owner: string | null = null): Workload {
    const shared = this.versions.get(scopeOf(name, null));
    const own = owner === null ? undefined : this.versions.get(scopeOf(name, owner));
    if (shared === undefined && own === undefined) return base;
    const version = `${shared ?? 0}/${own ?? 0}`;
    const scope = scopeOf(name, own === undefined ? null : owner);
    const f = this.fitted.get(scope);
    if (f && f.base === base && f.version === version) return f.workload;
    let workload: Workload;
    try {
      // Speeds of the newest FIT_PER_RESOURCE observations per resource; memory of all of them.
      const newestFirst = observationsFor(this.observations(name), owner).reverse();
      const kept = new Map<string, number>();
      const capped = newestFirst.map((o) => {
        const k = `${o.gpuModel}|${o.resource}`;
        if (o.samplesPerSecond !== null) kept.set(k, (kept.get(k) ?? 0) + 1);
        return (kept.get(k) ?? 0) > FIT_PER_RESOURCE ? { ...o, samplesPerSecond: null } : o;
      });
      workload = learnedWorkload(base, capped.reverse());
      for (const model of new Set(newestFirst.map((o) => o.gpuModel))) {
        let gpu;
        try {
          gpu = resolveGpuModel(model);
        } catch {
          continue;
        }
        const full = predict({ ...workload, memoryGiB: null }, { kind: 'full', gpu }).samplesPerSecond;
        if (full === null || !Number.isFinite(full) || full <= 0) throw new Error(`the refitted curve gives ${String(full)} samples/s on a whole ${model}`);
      }
    } catch (e) {
      workload = base;
      this.log?.(`workload ${name}${own === undefined ? '' : ` of user ${owner}`}: its observations could not be fitted (${e instanceof Error ? e.message : String(e)}); using the model's curve`);
    }
    this.fitted.set(scope, { base, version, workload });
    return workload;
  }

  /** The owner of a job's attempt and whether it is shared, looked up once per attempt; null while the lookup fails. */
  private async ownerOfAttempt(r: JobRecord): Promise<{ owner: string | null; shared: boolean } | null> {
    const id = keyOf(r.id, r.attempt);
    const known = this.owners.get(id);
    if (known) return known;
    const owner = this.ownerOf(r);
    let shared: boolean;
    try {
      shared = owner === null || (await this.trusted(owner));
    } catch (e) {
      this.log?.(`whether user ${owner} is an admin could not be read (${e instanceof Error ? e.message.split('\n')[0] : String(e)}); what job ${r.id} measures is kept when it can be`);
      return null;
    }
    const got = { owner, shared };
    this.owners.set(id, got);
    return got;
  }

  /**
   * Reads the running attempts' speeds (`speedOf`, samples/s from their progress) and, at most
   * every memoryPollMs, their processes' memory; writes changed observations at most every
   * persistMs. Returns the names of the workloads whose fit changed.
   */
  async observe(records: Iterable<JobRecord>, modelOf: (gpuIndex: number) => string | null, speedOf: (jobId: string) => number | null, now: number): Promise<Set<string>> {
    const changed = new Set<string>();
    const placements = new Map<string, JobPlacement>();
    const keys = new Map<string, AttemptKey>();
    for (const r of records) {
      if (r.state !== 'running' || !r.placement || r.spec.workload === undefined) continue;
      const m = measuredResource(r.placement);
      const gpuModel = m ? modelOf(m.gpu) : null;
      if (!m || gpuModel === null) continue;
      const who = await this.ownerOfAttempt(r);
      if (who === null) continue;
      const key: AttemptKey = { workload: r.spec.workload, ...who, jobId: r.id, attempt: r.attempt, gpuModel, resource: m.resource };
      keys.set(r.id, key);
      placements.set(r.id, r.placement);
      const sps = speedOf(r.id);
      if (sps !== null && sps > 0 && r.startedAt !== null && now - r.startedAt >= this.afterSeconds * 1000 && this.record(key, { samplesPerSecond: sps }, now)) changed.add(key.workload);
    }
    if (placements.size > 0 && now - this.memoryReadAt >= this.memoryPollMs && !this.readingMemory) {
      this.memoryReadAt = now;
      this.readingMemory = true;
      try {
        const [instances, processes] = await Promise.all([this.gpu.listGpuInstances(), this.gpu.listProcesses()]);
        for (const [id, mib] of memoryOfPlacements(placements, instances, processes)) {
          const key = keys.get(id)!;
          const before = this.seen.get(key.workload)?.get(keyOf(id, key.attempt))?.peakMemoryMiB ?? 0;
          if (mib > before && this.record(key, { peakMemoryMiB: mib }, now)) changed.add(key.workload);
        }
        if (this.memoryReadFailure !== null) this.log?.("reading the GPUs' per-process memory works again");
        this.memoryReadFailure = null;
      } catch (e) {
        // Once per cause: a broken or hung nvidia-smi would otherwise add a line every memoryPollMs.
        const why = e instanceof Error ? (e.message.split('\n')[0] ?? '') : String(e);
        if (why !== this.memoryReadFailure) this.log?.(`reading the GPUs' per-process memory failed: ${why}; trying again every ${Math.round(this.memoryPollMs / 1000)} s`);
        this.memoryReadFailure = why;
      } finally {
        this.readingMemory = false;
      }
    }
    if (now - this.persistedAt >= this.persistMs) {
      this.persistedAt = now;
      await this.persist();
    }
    return changed;
  }

  /** An attempt ran out of GPU memory on its slice: kept (and written) as an observation. */
  async outOfMemory(rec: JobRecord, gpuModel: string, now: number): Promise<void> {
    if (rec.spec.workload === undefined || !rec.placement) return;
    const m = measuredResource(rec.placement);
    if (!m) return;
    const who = await this.ownerOfAttempt(rec);
    if (who === null) return;
    this.record({ workload: rec.spec.workload, ...who, jobId: rec.id, attempt: rec.attempt, gpuModel, resource: m.resource }, { outOfMemory: true }, now);
    await this.persist(keyOf(rec.id, rec.attempt));
  }

  /** An attempt ended: what it measured is written now. */
  async ended(rec: JobRecord): Promise<void> {
    await this.persist(keyOf(rec.id, rec.attempt));
    this.owners.delete(keyOf(rec.id, rec.attempt));
  }

  /** Folds a measurement into an attempt's observation; true when the workload's fit must change. */
  private record(key: AttemptKey, what: Partial<Pick<WorkloadObservation, 'samplesPerSecond' | 'peakMemoryMiB' | 'outOfMemory'>>, now: number): boolean {
    const id = keyOf(key.jobId, key.attempt);
    const before = this.seen.get(key.workload)?.get(id);
    const next: WorkloadObservation = {
      ...key,
      samplesPerSecond: what.samplesPerSecond ?? before?.samplesPerSecond ?? null,
      peakMemoryMiB: Math.max(what.peakMemoryMiB ?? 0, before?.peakMemoryMiB ?? 0) || null,
      outOfMemory: what.outOfMemory === true || before?.outOfMemory === true,
      time: now,
    };
    const used = this.usedSpeed.get(id) ?? null;
    const speedMoved = next.samplesPerSecond !== null && (used === null || Math.abs(next.samplesPerSecond / used - 1) > SPEED_CHANGE);
    const memoryMoved = next.peakMemoryMiB !== (before?.peakMemoryMiB ?? null);
    const oomMoved = next.outOfMemory !== (before?.outOfMemory ?? false);
    if (!speedMoved && !memoryMoved && !oomMoved) {
      // Kept in memory (the latest speed is what is written), without refitting.
      this.seen.get(key.workload)!.set(id, next);
      this.dirty.add(id);
      return false;
    }
    this.put(next, true);
    return true;
  }

  private put(o: WorkloadObservation, dirty: boolean): void {
    const id = keyOf(o.jobId, o.attempt);
    let m = this.seen.get(o.workload);
    if (!m) {
      m = new Map();
      this.seen.set(o.workload, m);
    }
    m.set(id, o);
    this.usedSpeed.set(id, o.samplesPerSecond);
    const scope = scopeOf(o.workload, o.shared ? null : o.owner);
    this.versions.set(scope, (this.versions.get(scope) ?? 0) + 1);
    if (dirty) this.dirty.add(id);
  }

  /** Writes changed observations (or only the one of `only`); a failure is logged and retried later. */
  private async persist(only?: string): Promise<void> {
    const ids = only === undefined ? [...this.dirty] : this.dirty.has(only) ? [only] : [];
    for (const id of ids) {
      const o = [...this.seen.values()].map((m) => m.get(id)).find((x) => x !== undefined);
      if (!o) continue;
      try {
        await this.store.putObservation(o);
        this.dirty.delete(id);
      } catch (e) {
        this.log?.(`could not record what job ${o.jobId} measured of ${o.workload}: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}; retrying`);
        return;
      }
    }
  }
}

/** One measured point of a learned workload beside what the model said before and says after learning. */
export interface LearnedPoint {
  readonly jobId: string;
  readonly attempt: number;
  readonly gpuModel: string;
  readonly resource: string;
  readonly samplesPerSecond: number | null;
  /** samples/s the built-in (or user) workload predicts there; null without a measured speed. */
  readonly modelSamplesPerSecond: number | null;
  /** samples/s the learned workload predicts there. */
  readonly learnedSamplesPerSecond: number | null;
  readonly peakMemoryMiB: number | null;
  readonly outOfMemory: boolean;
  /** The user whose job measured it, or null. */
  readonly owner: string | null;
  /** It teaches every user's jobs (an admin's, or a job of no user), not only its owner's. */
  readonly shared: boolean;
}

/** A learned workload as `migpool workloads --fit` shows it. */
export interface LearnedFit {
  readonly name: string;
  /** Whose jobs are placed by this fit: null for every user's (the shared observations alone), or one user's (shared and their own). */
  readonly user: string | null;
  readonly workload: Workload;
  readonly points: readonly LearnedPoint[];
  /** Mean |predicted - measured| / measured over the points with a speed: of the model before learning, and of the learned fit. */
  readonly error: { readonly model: number; readonly learned: number } | null;
  readonly memoryGiB: { readonly model: number | null; readonly learned: number | null };
}

/**
 * How the learned workload fits its own observations, against the model it started from (pure):
 * the fit `user`'s jobs are placed by (null: every user's), from the observations it learns from
 * (see {@link observationsFor}).
 */
export function learnedFit(name: string, base: Workload, observations: readonly WorkloadObservation[], user: string | null = null): LearnedFit {
  const workload = learnedWorkload(base, observations);
  const modelOf = modelLookup();
  const speed = (w: Workload, o: WorkloadObservation): number | null => {
    const gpu = modelOf(o.gpuModel);
    if (gpu === null) return null;
    try {
      const resource = o.resource === 'whole' ? ({ kind: 'full', gpu } as const) : ({ kind: 'mig', gpu, profile: o.resource } as const);
      return predict({ ...w, memoryGiB: null }, resource).samplesPerSecond;
    } catch {
      return null;
    }
  };
  const points = observations.map((o): LearnedPoint => {
    const measured = o.samplesPerSecond !== null;
    return {
      jobId: o.jobId,
      attempt: o.attempt,
      gpuModel: o.gpuModel,
      resource: o.resource,
      samplesPerSecond: o.samplesPerSecond,
      modelSamplesPerSecond: measured ? speed(base, o) : null,
      learnedSamplesPerSecond: measured ? speed(workload, o) : null,
      peakMemoryMiB: o.peakMemoryMiB,
      outOfMemory: o.outOfMemory,
      owner: o.owner,
      shared: o.shared,
    };
  });
  const judged = points.filter((p) => p.samplesPerSecond !== null && p.modelSamplesPerSecond !== null && p.learnedSamplesPerSecond !== null);
  const mean = (f: (p: LearnedPoint) => number) => judged.reduce((s, p) => s + Math.abs(f(p) - p.samplesPerSecond!) / p.samplesPerSecond!, 0) / judged.length;
  return {
    name,
    user,
    workload,
    points,
    error: judged.length === 0 ? null : { model: mean((p) => p.modelSamplesPerSecond!), learned: mean((p) => p.learnedSamplesPerSecond!) },
    memoryGiB: { model: base.memoryGiB, learned: workload.memoryGiB },
  };
}
