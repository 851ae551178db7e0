import type { EventRecord, JobFilter, JobRecord, JobState } from '../store/types.js';
import type { UserShare } from '../sched/types.js';
import type { LiveJob, ServiceObserver } from './service-observer.js';
import type { MultiplexStats } from './multiplex.js';

/**
 * What the HTTP server (API, dashboard, metrics) needs from the running service. The real one is
 * `control/service.ts`; tests may pass a fake. Errors are MigpoolError: BAD_INPUT becomes 400,
 * NOT_FOUND-like lookups return null (404), everything else 500.
 */
export interface PoolService {
  /** Validates (field paths in errors) and queues a job spec given as parsed JSON/YAML. */
  submit(spec: unknown, options?: SubmitOptions): Promise<JobRecord>;
  /** Queues several jobs, all or none: every spec is checked first (errors name `job spec N`). */
  submitMany(specs: readonly unknown[], options?: SubmitOptions): Promise<JobRecord[]>;
  getJob(id: string): Promise<JobRecord | null>;
  listJobs(filter?: JobFilter): Promise<JobRecord[]>;
  /** Cancels a queued job at once, or asks a running one to stop. Null when no such job. */
  cancel(id: string): Promise<JobRecord | null>;
  /**
   * An operator's preemption: stops a running job whose spec allows it (`preemptible: true`) and
   * requeues it (SIGTERM, SIGKILL after its grace; its next attempt resumes from its checkpoint).
   * Null when no such job; CHECK_FAILED when the job is not running or not preemptible. Moves the
   * attempt that ran when the request came (`receivedAt`, ms since the epoch [now]) once: asked
   * again while the job is being preempted or cancelled, is requeued by a preemption, or has
   * started again since, it answers with the job as it is and moves nothing.
   */
  preempt?(id: string, receivedAt?: number): Promise<JobRecord | null>;
  /**
   * Reads an attempt's log from byte `offset` (at most `limit` bytes, default 64 KiB). `done`
   * when the job is in a final state and the end of the file was reached. Null when no such job.
   */
  readLog(id: string, stream: 'stdout' | 'stderr', offset: number, limit?: number): Promise<LogChunk | null>;
  /** Every GPU with its slices and the job on each. */
  gpus(): Promise<GpuSnapshot[]>;
  /** Live events (the same records the store keeps). Returns an unsubscribe function. */
  subscribe(listener: (event: EventRecord) => void): () => void;
  /** Events after `afterSeq` (for SSE clients that reconnect with Last-Event-ID). */
  events(afterSeq: number, limit?: number): Promise<EventRecord[]>;
  /** Figures for /metrics and the dashboard's charts. */
  stats(): Promise<ServiceStats>;
  /** Adds an observer of passes, starts and ends (for counters and histograms); returns its remover. */
  observe?(observer: ServiceObserver): () => void;
  /** Jobs not yet final with their owner and placement (live gauges, dcgm-exporter's job mapping). */
  liveJobs?(): readonly LiveJob[];
  /** The pool's users with their weight and quota, as the last scheduling pass read them (metrics). */
  userShares?(): ReadonlyMap<string, UserShare>;
}

/** Who submits, and the client's key for the submission (see `submit`). */
export interface SubmitOptions {
  /** The user the jobs belong to (`JobRecord.owner`, the policy's `JobSpec.user`). */
  readonly owner?: string;
  /** The client's key for this submission (`Idempotency-Key`, see control/idempotency.ts); each owner's keys are their own. */
  readonly idempotencyKey?: string;
  /**
   * The submitter sees every user's jobs (an admin): `after` may name any job. Otherwise, with an
   * `owner`, `after` names only that owner's jobs, and another's is refused as an unknown id (a
   * user must not learn of others' jobs, or their outcome, through a dependency) [false].
   */
  readonly seesAllJobs?: boolean;
}

export interface LogChunk {
  readonly text: string;
  readonly nextOffset: number;
  readonly done: boolean;
}

export interface GpuSnapshot {
  readonly index: number;
  readonly name: string;
  readonly uuid: string;
  readonly migEnabled: boolean;
  /** Compute slices of the GPU (7 on an A100), for drawing. */
  readonly slices: number;
  /** MIG instances, or empty when MIG is off. */
  readonly instances: readonly {
    readonly profile: string;
    readonly start: number;
    readonly size: number;
    readonly uuid: string | null;
    readonly job: string | null;
    /** The GPU instance's ID as NVML numbers it (nvidia-smi's `GI ID`, dcgm-exporter's `GPU_I_ID`); absent when unknown. */
    readonly gpuInstanceId?: number | null;
    /** Processes migpool did not start running on the instance (it takes no job while any do); absent: none. */
    readonly foreignPids?: readonly number[];
  }[];
  /** Jobs holding the whole GPU when MIG is off. */
  readonly wholeGpuJobs: readonly string[];
  /** Processes migpool did not start running on the whole GPU when MIG is off (it takes no job while any do); absent: none. */
  readonly foreignPids?: readonly number[];
  /** True while a re-partition is being applied. */
  readonly reconfiguring: boolean;
  /** Set while the GPU does not answer nvidia-smi (fell off the bus, or no longer listed): why, and what to do. No job starts there meanwhile. */
  readonly unreachable?: string | null;
  /** Set while re-partitions of this GPU fail: how many in a row, the last error, and when the next is tried (ms). */
  readonly repartitionFailure?: { readonly failures: number; readonly error: string; readonly retryAt: number } | null;
}

export interface ServiceStats {
  readonly policy: string;
  readonly startedAt: number;
  readonly jobsByState: readonly { readonly state: JobState; readonly priority: 'foreground' | 'background'; readonly count: number }[];
  /** Instances per profile and whether a job holds them. */
  readonly slices: readonly { readonly profile: string; readonly state: 'busy' | 'idle'; readonly count: number }[];
  readonly reconfigurations: number;
  /** Re-partitions that failed since the service started. */
  readonly reconfigurationsFailed?: number;
  /** Recent scheduling passes, milliseconds each (newest last, at most 1000). */
  readonly passMs: readonly number[];
  /** Recent queue waits of started jobs, seconds (newest last, at most 1000). */
  readonly queueWaitSeconds: readonly number[];
  /** Samples over time: busy share of compute slices, and jobs finished per hour over the last window. */
  readonly timeline: readonly { readonly t: number; readonly utilization: number; readonly throughputJobsPerHour: number; readonly queued: number; readonly running: number }[];
  /** CUDA MPS multiplexing: back-offs so far, daemons running, foreground slowdowns measured now. */
  readonly multiplex?: MultiplexStats;
}
