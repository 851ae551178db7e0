import type { Highs } from 'highs';
import type { GpuModel } from '../mig/types.js';

/** The slot name of a whole GPU with MIG disabled, beside the GI profile names. */
export const FULL_GPU = 'full';

/** One job to place, with its speed on every place it could run. */
export interface PackingJob {
  /** A label carried to the result (a workload name, a job ID); not used by the optimizer. */
  readonly name?: string;
  /** Weight of the job's throughput in the objective; default 1. */
  readonly weight?: number;
  /**
   * Normalised throughput, by GPU model name then by GI profile name or `full` (MIG off): samples/s
   * on that resource over samples/s on one whole GPU of the same model with MIG off. 0 or missing
   * where the job does not fit (memory) or must not run.
   */
  readonly speeds: Readonly<Record<string, Readonly<Record<string, number>>>>;
}

/** GPUs, indexed by their position, and the jobs to pack onto them. */
export interface PackingProblem {
  readonly gpus: readonly GpuModel[];
  readonly jobs: readonly PackingJob[];
  /** When true every job must be placed; an instance where that is impossible is an error. Default false. */
  readonly placeAll?: boolean;
}

/** Options of optimizePacking; every one has a default. */
export interface PackingOptions {
  /**
   * Largest number of distinct jobs (jobs with the same weight and speeds count once) solved exactly
   * with the MIP; larger problems go to the heuristic. Default 64.
   */
  readonly exactMaxJobs?: number;
  /** Time limit handed to HiGHS for the MIP, seconds. Default 20. A MIP stopped by it reports its proven bound. */
  readonly timeLimitSeconds?: number;
  /**
   * Largest LP (columns: distinct jobs x slot types) solved for the bound and for the heuristic's
   * start; above it the heuristic starts from a greedy layout and the bound is the Lagrangian one.
   * Default 2,000,000.
   */
  readonly maxLpColumns?: number;
  /** The loaded HiGHS runtime (src/exec/highs.ts loadHighs): the optimizer itself does no I/O. */
  readonly highs: Highs;
}

/** One instance of a chosen layout: a GI profile at its placement start. */
export interface PlacedSlot {
  readonly profile: string;
  readonly start: number;
}

/** What one GPU should look like. */
export interface GpuPlan {
  readonly gpu: number;
  readonly model: string;
  /** GPU instances in start order, or MIG disabled (also for a GPU that gets no job). */
  readonly layout: readonly PlacedSlot[] | 'mig-off';
}

/** Where one job goes. */
export interface JobPlacement {
  /** Index of the job in `problem.jobs`. */
  readonly job: number;
  readonly gpu: number;
  /** A GI profile name, or `full` for the whole GPU with MIG off. */
  readonly profile: string;
  /** Placement start of its instance; absent for `full`. */
  readonly start?: number;
  /** Its normalised throughput there. */
  readonly speed: number;
  readonly weight: number;
}

/** Which upper bound `bound` is. */
export type BoundKind =
  /** HiGHS's proven MIP bound (equal to the objective when solved to optimality). */
  | 'mip'
  /** The LP relaxation of the MIP. */
  | 'lp'
  /** A Lagrangian bound (subgradient on the job constraints), for problems whose LP is too large. */
  | 'lagrangian';

/** The chosen layouts and placements, with how good they are known to be. */
export interface PackingResult {
  readonly layouts: readonly GpuPlan[];
  /** One entry per placed job, in job order. */
  readonly assignments: readonly JobPlacement[];
  /** Indices of jobs left unplaced. */
  readonly unassigned: readonly number[];
  /** Total weighted normalised throughput of the assignments. */
  readonly objective: number;
  /** An upper bound on the best objective any layouts and assignments reach. */
  readonly bound: number;
  readonly boundKind: BoundKind;
  /** The LP relaxation's optimum; null where the LP was not solved (too large). */
  readonly lpBound: number | null;
  /** `(bound - objective) / bound`, 0 when the bound is 0. */
  readonly gap: number;
  readonly method: 'mip' | 'heuristic';
  /** True when the objective is proven optimal (gap within 1e-6). */
  readonly optimal: boolean;
}
