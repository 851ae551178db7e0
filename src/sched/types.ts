import type { GiProfile, GpuModel } from '../mig/types.js';
import type { Workload } from '../perf/types.js';

/**
 * The scheduling core's contract. A policy is a plain, deterministic function of a cluster view
 * and the time: the simulator calls it with a virtual clock, the service with the wall clock.
 * Policies never read a clock, never draw random numbers except from `ctx.random`, and never
 * mutate the view.
 */

export type Priority = 'foreground' | 'background';

/** A job as the scheduler knows it. */
export interface JobSpec {
  readonly id: string;
  readonly workload: Workload;
  /** Whole GPUs wanted (1 for single-GPU jobs, which MIG policies may place on a slice). */
  readonly gpus: number;
  readonly priority: Priority;
  /** Seconds from the start of the trace (or wall-clock seconds in the service). */
  readonly arrival: number;
  /**
   * What is known of the job's length: an estimate of the seconds it would take alone on one whole
   * GPU (MIG off), or null when nothing is known. A hint, never the truth: the simulator makes it
   * from the trace by a declared information model (src/sim/info.ts), the service takes the user's
   * `estimatedSeconds` or what the job's progress reports. A job may run past it.
   */
  readonly estimate: number | null;
  /** GPU memory it needs, GiB; null to use the workload's (or none known). */
  readonly memoryGiB: number | null;
  /**
   * A MIG profile the user asked for (`1g.5gb`), or null to let the policy choose. A floor on the
   * instance's compute slices, unless `exactProfile`.
   */
  readonly profile: string | null;
  /** The job runs only on an instance of exactly `profile` (never a bigger one, nor a whole GPU) [false]. */
  readonly exactProfile?: boolean;
  /**
   * Whether the job may be stopped and started again later (preempted, or moved): it checkpoints,
   * or the user accepts a restart [true]. A policy never preempts a job that is not.
   */
  readonly preemptible?: boolean;
  /**
   * Opt-in: how the job scales over whole GPUs at a fixed global batch (strong scaling). Only the
   * simulator reads it, and only when it is given a ScalingModel; without either, a job on N
   * whole GPUs runs at speed 1 as before.
   */
  readonly strongScaling?: StrongScaling;
  /**
   * The user who owns the job (the service sets it from the caller's token; the simulator from
   * `--users`), for fair share and quotas; absent: the pool's default user.
   */
  readonly user?: string;
}

/** A strong-scaled job: a model the scaling model knows (`vgg16`, `wrn101-2`, ...) and its global batch. */
export interface StrongScaling {
  readonly model: string;
  readonly globalBatch: number;
}

/** How a strong-scaled job runs on its whole GPUs. */
export type Parallelism = 'data-parallel' | 'burst';

/** What a scaling model says of a strong-scaled job on N whole GPUs (see src/burst/scaling.ts). */
export interface ScaledRun {
  /** Full-GPU seconds of work per second with no background job beside it. */
  readonly soloSpeed: number;
  /** Full-GPU seconds of work per second with background jobs filling its idle GPU time. */
  readonly sharedSpeed: number;
  /**
   * Speed of a background job (as a share of its speed alone on a whole GPU) on the job's GPU of
   * rank `rank` (its position in the start decision's `gpus`), 0 where the job leaves no idle time.
   */
  backgroundShare(rank: number): number;
}

/** Strong scaling of jobs that carry a `strongScaling` description. */
export interface ScalingModel {
  /** @throws MigpoolError BAD_INPUT for a model it does not know or a batch smaller than `gpus` */
  run(job: JobSpec, gpus: number, parallelism: Parallelism): ScaledRun;
}

/** One MIG instance on a GPU: identified by the GPU and its placement start. */
export interface InstanceView {
  readonly gpu: number;
  readonly profile: GiProfile;
  readonly start: number;
  readonly size: number;
  /** The job running on it, or null when idle. */
  readonly job: string | null;
  /**
   * Process ids on the instance that are not the pool's jobs' (the service reads them; the
   * simulator has none; absent: none). An instance with any takes no job (see `foreignPidsOf`).
   */
  readonly foreignPids?: readonly number[];
}

/** One GPU. */
export interface GpuView {
  readonly id: number;
  readonly model: GpuModel;
  readonly migEnabled: boolean;
  /** MIG instances (MIG on). */
  readonly instances: readonly InstanceView[];
  /** Jobs holding the whole GPU (MIG off): one when exclusive, several when shared. */
  readonly wholeGpuJobs: readonly string[];
  /** How the whole-GPU jobs share it: 'exclusive', 'timeslice' or 'mps'. */
  readonly sharing: 'exclusive' | 'timeslice' | 'mps';
  /** Until when a re-partition keeps the GPU's changing instances unavailable (null: none). */
  readonly busyUntil: number | null;
  /**
   * Process ids on the GPU that are not the pool's jobs' (someone ran them outside migpool): the
   * service reads them from the GPU (on a MIG-off GPU where it runs no job; on a MIG GPU, see
   * InstanceView.foreignPids); the simulator has none; absent: none. A GPU with any gets no
   * whole-GPU job (see `foreignPidsOf`).
   */
  readonly foreignPids?: readonly number[];
}

/** A running job. */
export interface RunningJobView {
  readonly spec: JobSpec;
  /** Where it runs: an instance, or whole GPUs. */
  readonly placement: { readonly kind: 'instance'; readonly gpu: number; readonly start: number } | { readonly kind: 'gpus'; readonly gpus: readonly number[] };
  readonly started: number;
  /** How a strong-scaled job runs (set by the simulator when it has a scaling model; else absent). */
  readonly parallelism?: Parallelism;
  /** Work (full-GPU seconds) done so far, as measured (reported progress); never more than the job's true work. */
  readonly done: number;
  /** Current speed, full-GPU seconds of work per second. */
  readonly speed: number;
}

/**
 * What production knows of a job's past, queued or running: measured, never predicted.
 */
export interface JobHistory {
  /** GPU-seconds it has run so far over all its runs (GPUs held x seconds): Tiresias' attained service. */
  readonly attainedGpuSeconds: number;
  /** Times it was preempted (stopped and requeued) so far. */
  readonly preemptions: number;
}

/** No history: a job that never ran. */
export const NO_HISTORY: JobHistory = { attainedGpuSeconds: 0, preemptions: 0 };

/** What a policy sees. */
export interface ClusterView {
  readonly now: number;
  readonly gpus: readonly GpuView[];
  /** Waiting jobs in arrival order (a preempted job returns to its arrival position). */
  readonly queue: readonly JobSpec[];
  readonly running: ReadonlyMap<string, RunningJobView>;
  /**
   * A job's history (attained service, preemptions), for queued and running jobs; views built by
   * hand may leave it out (read it through `historyOf` in policies/common.ts, which gives
   * NO_HISTORY then).
   */
  readonly history?: (jobId: string) => JobHistory;
  /**
   * The pool's users with their fair-share weight and quota, keyed by `JobSpec.user`; absent, or a
   * user missing from it: weight 1 and no quota.
   */
  readonly users?: ReadonlyMap<string, UserShare>;
}

/** A user's claim on the pool: their share under contention and their limit. */
export interface UserShare {
  /** Relative share of the pool under contention [1]. */
  readonly weight: number;
  /** Most GPUs' worth of compute slices their running jobs may hold (a 3g slice of a 7-slice GPU is 3/7), or null for none. */
  readonly quotaGpus: number | null;
}

/** What a policy may do. The simulator (and the service) apply decisions in order. */
export type Decision =
  /** Start a queued job on an idle MIG instance (GPU `gpu`, placement start `start`). */
  | { readonly kind: 'start-on-instance'; readonly job: string; readonly gpu: number; readonly start: number }
  /**
   * Start a queued job on whole GPUs with MIG off: alone (`exclusive`), or sharing each with
   * other jobs by time-slicing or MPS.
   */
  | {
      readonly kind: 'start-on-gpus';
      readonly job: string;
      readonly gpus: readonly number[];
      readonly sharing: 'exclusive' | 'timeslice' | 'mps';
      /**
       * Opt-in, simulator only (needs a ScalingModel): run a job with `strongScaling` exclusively
       * on its GPUs with a burst-parallel plan (`burst`, whose idle GPU time background jobs may
       * fill) instead of data-parallel (the default for such jobs).
       */
      readonly parallelism?: Parallelism;
      /**
       * Opt-in, simulator only: start a single-GPU job in the idle time of the burst-parallel job
       * that holds `gpus[0]` (sharing 'mps': beside it, at low priority). One such job per GPU.
       */
      readonly fill?: boolean;
    }
  /**
   * Re-partition a GPU: MIG on with exactly `layout` (instances already there with the same
   * profile and start are kept, with their jobs), or MIG off (`layout` null). Only idle instances
   * may change unless their jobs were preempted first. Takes the reconfiguration time.
   */
  | { readonly kind: 'repartition'; readonly gpu: number; readonly layout: readonly { readonly profile: string; readonly start: number }[] | null }
  /** Stop a running job and put it back in the queue (its work so far is kept: checkpointed). */
  | { readonly kind: 'preempt'; readonly job: string };

/** What a policy may use besides the view. */
export interface PolicyContext {
  /** Seeded random source in [0, 1). */
  readonly random: () => number;
  /** Full-GPU seconds of work per second a job does on a resource (from the performance model). */
  readonly speedOn: (job: JobSpec, on: SpeedQuery) => number;
  /** Whether the job fits the resource's memory. */
  readonly fits: (job: JobSpec, on: SpeedQuery) => boolean;
  /** Seconds a re-partition takes. */
  readonly reconfigureSeconds: number;
  /** Strong scaling of jobs with `strongScaling` (the simulator's, when it was given one). */
  readonly scaling?: ScalingModel;
  /**
   * The pool's own rules for preemptions, which it holds whatever a policy decides (the service's,
   * src/control/preempt-rules.ts; absent in the simulator): a job is preempted only after running
   * `minRunSeconds` and fewer than `maxPreemptions` times. A policy that knows them does not plan
   * on preemptions the pool would refuse.
   */
  readonly preemptionRules?: { readonly minRunSeconds: number; readonly maxPreemptions: number };
}

/** A resource to ask about. */
export type SpeedQuery =
  | { readonly kind: 'instance'; readonly model: GpuModel; readonly profile: string }
  | { readonly kind: 'whole'; readonly model: GpuModel }
  | { readonly kind: 'timeslice' | 'mps'; readonly model: GpuModel; readonly jobs: number };

/** A scheduling policy. */
export interface Policy {
  /** The name as given (`static:7x1g.5gb`). */
  readonly name: string;
  /** Decisions for now. Called after every event; returning nothing means wait. */
  decide(view: ClusterView, ctx: PolicyContext): Decision[];
  /**
   * Opt-in: when the policy wants to be called again though nothing happens (a round-based
   * policy's next round), asked right after each `decide`; null or a time not after now: no call.
   */
  wakeAt?(view: ClusterView): number | null;

  /**
   * Optional: why each queued job of the view waits, in words (`waiting for a 3g.20gb slice held
   * by job 12`), by job id. The service shows it to users; jobs it leaves out get the generic
   * explanation of src/sched/pending.ts.
   */
  explain?(view: ClusterView, ctx: PolicyContext): ReadonlyMap<string, string>;
  /**
   * Optional: why the policy leaves the idle slices of a GPU whose other slices run jobs as they
   * are rather than re-cut them into a bigger one (`it re-partitions a MIG GPU only once all its
   * slices are idle`): the pending reason of a job such a re-cut would hold says it.
   */
  readonly recutRule?: string;
  /**
   * Optional: the MIG profiles the policy ever runs a job on, on a GPU of `model`: none for a
   * policy that keeps MIG off, the layout's for a static one. Absent: any profile the GPU offers.
   * The service refuses at submit a job that asks for exactly a profile no GPU would give it.
   */
  sliceProfiles?(model: GpuModel): readonly string[];
}
