import type { GiProfile, GpuModel } from '../mig/types.js';
import type { GpuView, InstanceView, JobSpec, Parallelism, RunningJobView, ScaledRun } from '../sched/types.js';
import type { Estimator } from './info.js';
import type { TraceJob } from './types.js';

/**
 * The simulator's fleet state: GPUs, their MIG instances, jobs and their runs. The objects are
 * the cluster view the policy reads (they implement its interfaces, read-only by contract); the
 * engine (engine.ts) changes them as it applies decisions and events.
 */

export class Inst implements InstanceView {
  job: string | null = null;
  /** When a job may first start on it (the end of the re-partition that created it). */
  readyAt: number;
  /** Whether it sits in the idle index. */
  indexed = false;
  constructor(
    readonly g: Gpu,
    readonly profile: GiProfile,
    readonly start: number,
    readonly size: number,
    readyAt: number,
    readonly key: string,
  ) {
    this.readyAt = readyAt;
  }
  get gpu(): number {
    return this.g.id;
  }
}

export class Gpu implements GpuView {
  migEnabled = false;
  instances: Inst[] = [];
  wholeGpuJobs: string[] = [];
  sharing: 'exclusive' | 'timeslice' | 'mps' = 'exclusive';
  busyUntil: number | null = null;
  /** Instances with a job. */
  busyInstances = 0;
  /** Key of the whole-GPU index set it is in, or null. */
  wholeKey: string | null = null;
  /** The burst-parallel job holding it (strong scaling), and this GPU's rank in that job's GPUs. */
  burst: Running | null = null;
  burstRank = -1;
  constructor(
    readonly id: number,
    readonly model: GpuModel,
  ) {}
}

export class Job {
  status: 'future' | 'queued' | 'running' | 'done' = 'future';
  /** Progress lost to the last preemption, charged when the job starts again. */
  owedCost = 0;
  /** Work done up to `since`. */
  base = 0;
  since = 0;
  speed = 0;
  /** Seconds spent running, summed over finished runs. */
  ranFor = 0;
  /** GPU-seconds of finished runs (GPUs held x seconds; an instance counts as one GPU). */
  attained = 0;
  preemptions = 0;
  runStart = 0;
  finished = -1;
  version = 0;
  running: Running | null = null;
  /** What the policy sees of the job: the trace's fields less its work, plus an estimate. */
  readonly spec: JobSpec;
  /** The truth: full-GPU seconds of work (never shown to a policy). */
  readonly work: number;
  constructor(
    trace: TraceJob,
    readonly order: number,
    readonly memory: number | null,
    estimator: Estimator,
  ) {
    this.work = trace.work;
    const { work: _truth, ...known } = trace;
    if (estimator.dynamic) {
      // The estimate changes as the job runs (progress): read it live.
      const spec = { ...known } as { estimate: number | null } & Omit<JobSpec, 'estimate'>;
      Object.defineProperty(spec, 'estimate', { enumerable: true, get: () => estimator.estimate(order, this.work, this.ranSoFar()) });
      this.spec = spec as JobSpec;
    } else this.spec = { ...known, estimate: estimator.estimate(order, trace.work, 0) };
  }
  /** Seconds run over all runs, the current one included. */
  ranSoFar(): number {
    return this.ranFor + (this.status === 'running' ? this.clockNow() - this.runStart : 0);
  }
  /** Set by the engine: its clock. */
  clockNow: () => number = () => 0;
  /** Work done by `now` (full-GPU seconds; below 0 while it makes up a preemption's loss). */
  progressAt(now: number): number {
    return Math.min(this.work, this.base + this.speed * (now - this.since));
  }
}

export class Running implements RunningJobView {
  /** Strong scaling (only with a scaling model): how it runs, and what the model says of that. */
  parallelism?: Parallelism;
  scaled: ScaledRun | null = null;
  /** For a burst-parallel job: background jobs filling its GPUs' idle time. */
  fills = 0;
  /** For a job filling a burst-parallel job's idle time: that job. */
  fillOf: Running | null = null;
  constructor(
    readonly job: Job,
    readonly placement: RunningJobView['placement'],
    readonly started: number,
    private readonly clock: { now: number },
    /** Compute slices it holds (per priority accounting; shared GPUs split evenly). */
    public slices: number,
    readonly inst: Inst | null,
    readonly gpus: readonly Gpu[],
  ) {}
  get spec(): JobSpec {
    return this.job.spec;
  }
  get done(): number {
    return Math.max(0, this.job.progressAt(this.clock.now));
  }
  get speed(): number {
    return this.job.speed;
  }
}
