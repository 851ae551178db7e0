import type { GpuModel } from '../mig/types.js';
import type { JobSpec, Policy, PolicyContext, Priority, ScalingModel, UserShare } from '../sched/types.js';
import type { UserMetrics } from './user-metrics.js';
import type { InfoModel } from './info.js';
import type { BigJobMetrics, Bounds, PreemptionMetrics, SlowdownMetrics } from './metrics.js';

/**
 * A job of a trace: what a policy may know of it (JobSpec, without the estimate) and its true
 * work, which only the simulator reads: seconds it takes alone on one whole GPU (MIG off).
 */
export interface TraceJob extends Omit<JobSpec, 'estimate'> {
  readonly work: number;
}

/** A fleet: GPUs by model, e.g. parsed from `2048xA100-SXM4-40GB` or `64xA100-40GB,16xH100-80GB`. */
export interface Fleet {
  readonly spec: string;
  readonly gpus: readonly GpuModel[];
}

/** What a simulation needs. */
export interface SimulationInput {
  readonly fleet: Fleet;
  /** Jobs in any order; the simulator sorts them by arrival. */
  readonly jobs: readonly TraceJob[];
  /**
   * What policies learn of each job's length (src/sim/info.ts) [exact: the oracle, which only
   * tests and reference runs should use; the CLI defaults to noisy].
   */
  readonly info?: InfoModel;
  /**
   * Seconds of progress a preempted job loses when it starts again (checkpoint reload, warm-up)
   * [0]. The CLI defaults to 60.
   */
  readonly preemptionCostSeconds?: number;
  readonly policy: Policy;
  /** Seed of the random source handed to the policy. */
  readonly seed: number;
  /** Seconds a re-partition takes [documented default in engine.ts]. */
  readonly reconfigureSeconds?: number;
  /** How often (simulated seconds) to sample utilisation and queue length for the timeline. */
  readonly sampleEverySeconds?: number;
  /** Called now and then with the share of jobs finished (0..1), for a progress bar. */
  readonly onProgress?: (fraction: number) => void;
  /**
   * Opt-in: strong scaling of jobs with `strongScaling` (e.g. src/burst's createScalingModel).
   * Handed to the policy as `ctx.scaling`; see engine.ts for what it changes.
   */
  readonly scaling?: ScalingModel;
  /**
   * Opt-in: the pool's users with their weight and quota (the policy's `view.users`), keyed by the
   * jobs' `user`; see src/sched/shares.ts. The result then has `byUser`.
   */
  readonly users?: ReadonlyMap<string, UserShare>;
  /** Opt-in: stop the clock at this time (seconds) even if jobs remain; default: run until all are done. */
  readonly untilSeconds?: number;
  /**
   * Opt-in: a pool's own preemption rules, handed to the policy as `ctx.preemptionRules` (the
   * service's are src/control/preempt-rules.ts), to replay what a policy decides in the service.
   * The simulator tells the policy; it does not refuse preemptions itself.
   */
  readonly preemptionRules?: PolicyContext['preemptionRules'];
}

/** Metrics of one run (or of one priority class within it). */
export interface SimMetrics {
  readonly jobs: number;
  readonly completed: number;
  readonly makespanSeconds: number;
  readonly avgJctSeconds: number;
  readonly p50JctSeconds: number;
  readonly p95JctSeconds: number;
  readonly p99JctSeconds: number;
  readonly avgQueueSeconds: number;
  /** Busy slice-seconds over all slice-seconds (a whole GPU counts all its compute slices). */
  readonly utilization: number;
  readonly throughputJobsPerHour: number;
  /** GPU re-partitions in the run. */
  readonly reconfigurations: number;
}

/**
 * Metrics of one priority class within a run: a run's, less `reconfigurations`. A re-partition
 * changes a GPU's layout for whatever runs there next (a pass re-plans layouts for the whole
 * queue), so it belongs to no class: the count is the run's ({@link SimulationResult.metrics}).
 */
export type PriorityMetrics = Omit<SimMetrics, 'reconfigurations'>;

/** The outcome of one simulation. */
export interface SimulationResult {
  readonly policy: string;
  readonly metrics: SimMetrics;
  readonly byPriority: Readonly<Record<Priority, PriorityMetrics>>;
  /** Job completion times (seconds), in job order, for distributions. */
  readonly jcts: readonly number[];
  /** Samples over time for the report. */
  readonly timeline: readonly { readonly t: number; readonly utilization: number; readonly queueLength: number }[];
  /** Events processed, for speed figures. */
  readonly events: number;
  /**
   * Work done (full-GPU seconds) per priority by the end of the run, partial work of unfinished
   * jobs included: divided by the makespan, the cluster's throughput in whole GPUs' worth.
   */
  readonly workDone?: Readonly<Record<Priority, number>>;
  /** Completed jobs' slowdowns (JCT over the run alone on what each asked for), in job order. */
  readonly slowdowns: readonly number[];
  readonly slowdown: SlowdownMetrics;
  /** Jobs of BIG_JOB_GPUS (4) GPUs or more. */
  readonly bigJobs: BigJobMetrics;
  readonly preemptions: PreemptionMetrics;
  /** The trace's offline lower bounds on this fleet (the same for every policy of a run). */
  readonly bounds: Bounds;
  /** Per user, in order of first job: only when the run has users (SimulationInput.users, or jobs that name one). */
  readonly byUser?: readonly UserMetrics[];
  /**
   * Jobs whose memory is unknown (neither the job nor its workload says: the DeepPool models,
   * `large`): placed only where their user allowed, a whole GPU or the profile they asked for
   * (src/sched/context.ts unknownMemoryAllowed), never on a slice picked on a guess.
   */
  readonly unknownMemoryJobs: number;
}
