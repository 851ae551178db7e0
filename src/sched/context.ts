import { MigpoolError } from '../errors.js';
import { findGiProfile } from '../mig/catalog/index.js';
import type { GiProfile, GpuModel } from '../mig/types.js';
import { predict } from '../perf/model.js';
import type { Resource, Workload } from '../perf/types.js';
import type { JobSpec, PolicyContext, ScalingModel, SpeedQuery } from './types.js';

/**
 * The policy context, written once for both clocks: the simulator and the service hand their
 * policy the same speeds and memory fits, from the performance model.
 *
 * Speed is relative: a workload's samples/s on a resource over its samples/s on a whole GPU of the
 * same model with MIG off, so that a job's work (full-GPU seconds) ends on time on a whole GPU of
 * any model. Memory is the job's `memoryGiB`, else its workload's. Unknown memory is no guess that
 * it fits: such a job fits only where its user allowed it (see `memoryFit`).
 */

/**
 * Relative speeds of workloads on resources, cached per workload object (weakly: the service
 * replaces a workload by its refitted copy as its jobs teach it, and the old one goes).
 */
export class SpeedTable {
  private readonly cache = new WeakMap<Workload, Map<string, number>>();
  private readonly noMemory = new WeakMap<Workload, Workload>();

  /**
   * A workload's speed on a resource relative to a whole GPU of the same model (1 for 'full').
   * @throws MigpoolError RUNTIME when the model gives none (a workload that does not fit anywhere)
   */
  relative(workload: Workload, model: GpuModel, kind: 'mig' | 'timeslice' | 'mps' | 'full', arg: string | number): number {
    if (kind === 'full') return 1;
    let perWorkload = this.cache.get(workload);
    if (!perWorkload) {
      perWorkload = new Map();
      this.cache.set(workload, perWorkload);
    }
    const key = `${model.name}|${kind}|${arg}`;
    let v = perWorkload.get(key);
    if (v === undefined) {
      // Speed only: whether memory fits is the context's `fits`, asked separately.
      let w = this.noMemory.get(workload);
      if (!w) {
        w = { ...workload, memoryGiB: null };
        this.noMemory.set(workload, w);
      }
      const resource: Resource = kind === 'mig' ? { kind, gpu: model, profile: String(arg) } : { kind, gpu: model, jobs: Number(arg) };
      const on = predict(w, resource).samplesPerSecond;
      const full = predict(w, { kind: 'full', gpu: model }).samplesPerSecond;
      v = on !== null && full !== null && full > 0 ? on / full : NaN;
      if (!Number.isFinite(v) || v <= 0) throw new MigpoolError('RUNTIME', `the performance model gives no speed for ${workload.name} on ${model.name} ${kind} ${arg}`);
      perWorkload.set(key, v);
    }
    return v;
  }

  /** The speed a SpeedQuery asks for. */
  of(job: Pick<JobSpec, 'workload'>, on: SpeedQuery): number {
    if (on.kind === 'whole') return 1;
    if (on.kind === 'instance') return this.relative(job.workload, on.model, 'mig', on.profile);
    return this.relative(job.workload, on.model, on.kind, on.jobs);
  }
}

/**
 * Speed of a job on a whole GPU shared by `jobs` jobs (`exclusive`, or one job: 1), from the
 * performance model: the simulator and the service compute running speeds with this.
 */
export function sharedGpuSpeed(speeds: SpeedTable, workload: Workload, model: GpuModel, sharing: 'exclusive' | 'timeslice' | 'mps', jobs: number): number {
  return sharing === 'exclusive' || jobs <= 1 ? 1 : speeds.relative(workload, model, sharing, jobs);
}

/** GiB a job needs: its own figure, else its workload's; null when unknown. */
export function memoryOf(job: Pick<JobSpec, 'memoryGiB' | 'workload'>): number | null {
  return job.memoryGiB ?? job.workload.memoryGiB;
}

/** Whether `need` GiB for each of `jobs` jobs fits in `have` GiB (unknown need or size: fits). */
export function fitsMemory(need: number | null, have: number | null, jobs = 1): boolean {
  return need === null || have === null || have >= jobs * need;
}

const profileCache = new Map<string, GiProfile>();
/** A GPU model's GI profile by name, cached. @throws MigpoolError BAD_INPUT for an unknown name */
export function profileOf(model: GpuModel, name: string): GiProfile {
  const key = `${model.name}|${name}`;
  let p = profileCache.get(key);
  if (!p) {
    p = findGiProfile(model, name);
    profileCache.set(key, p);
  }
  return p;
}

/**
 * Whether a job fits a resource's memory: 'yes', 'no', or 'unknown' when the job's need (or the
 * resource's size) is not known. N jobs share a time-sliced or MPS GPU's memory.
 */
export function memoryFit(job: Pick<JobSpec, 'memoryGiB' | 'workload'>, on: SpeedQuery): 'yes' | 'no' | 'unknown' {
  const need = memoryOf(job);
  if (need === null) return 'unknown';
  const have = on.kind === 'instance' ? profileOf(on.model, on.profile).memoryGiB : on.model.memoryGB;
  if (have === null) return 'unknown';
  return fitsMemory(need, have, on.kind === 'instance' || on.kind === 'whole' ? 1 : on.jobs) ? 'yes' : 'no';
}

/**
 * Whether a job of unknown memory may go on a resource: where its user allowed it, never on a
 * smaller share a policy picks on a guess. A whole GPU (what a job asks for by default), a GPU it
 * has alone, and an instance when the job named a profile (the user said that profile, or one at
 * least as large, holds it; the policy's profile rule says which) are allowed; a slice the job did
 * not ask for, and a GPU shared with other jobs, are not.
 */
export function unknownMemoryAllowed(job: Pick<JobSpec, 'profile'>, on: SpeedQuery): boolean {
  if (on.kind === 'whole') return true;
  if (on.kind === 'instance') return job.profile !== null;
  return on.jobs <= 1;
}

/** Whether a job fits a resource's memory; unknown memory fits only where `unknownMemoryAllowed`. */
export function fitsOn(job: Pick<JobSpec, 'memoryGiB' | 'workload' | 'profile'>, on: SpeedQuery): boolean {
  const fit = memoryFit(job, on);
  return fit === 'yes' || (fit === 'unknown' && unknownMemoryAllowed(job, on));
}

/** What a policy context is made of besides the model. */
export interface PolicyContextOptions {
  /** Seeded random source in [0, 1). */
  readonly random: () => number;
  /** Seconds a re-partition takes, for the policy's cost model. */
  readonly reconfigureSeconds: number;
  /** Strong scaling (the simulator's, when it has one). */
  readonly scaling?: ScalingModel;
  /** The speed table to share with the caller (the simulator runs jobs at the speeds policies see). */
  readonly speeds?: SpeedTable;
  /** The pool's own preemption rules (PolicyContext.preemptionRules; the service's). */
  readonly preemptionRules?: PolicyContext['preemptionRules'];
}

/** The context both clocks hand their policy. */
export function createPolicyContext(o: PolicyContextOptions): PolicyContext {
  const speeds = o.speeds ?? new SpeedTable();
  return {
    random: o.random,
    reconfigureSeconds: o.reconfigureSeconds,
    ...(o.scaling ? { scaling: o.scaling } : {}),
    ...(o.preemptionRules ? { preemptionRules: o.preemptionRules } : {}),
    speedOn: (job, on) => speeds.of(job, on),
    fits: (job, on) => fitsOn(job, on),
  };
}
