import type { JobSpecInput } from '../jobs/job-spec.js';

/**
 * The store port: where `migpool serve` keeps its queue, its jobs' history and its events, so that
 * a crash at any moment loses nothing. Implemented for SQLite (embedded default) and PostgreSQL;
 * both pass the one conformance suite in `conformance.ts`.
 *
 * Deliberately left out: GPU layouts (the GPUs themselves are the truth; the service reads them
 * back at start), log text (files beside the data dir), tokens in clear (users' tokens are kept
 * as SHA-256 hashes only).
 *
 * All times are milliseconds since the Unix epoch, passed in by the caller (the store never reads
 * a clock). Every method is atomic.
 */
export interface Store {
  /** Creates or upgrades the schema (numbered migrations, each applied once, in order). */
  init(): Promise<void>;
  close(): Promise<void>;

  /** Adds a queued job; ids are increasing decimal strings (`"1"`, `"2"`, ...). */
  insertJob(spec: JobSpecInput, now: number, options?: InsertJobOptions): Promise<JobRecord>;
  /** Adds many queued jobs in one transaction, in order. */
  insertJobs(specs: readonly JobSpecInput[], now: number, options?: InsertJobOptions): Promise<JobRecord[]>;
  /**
   * Idempotent {@link insertJobs}: the first call with `key` inserts the jobs and records the key
   * with `fingerprint` (a digest of the request) in the same transaction; a later call with the
   * same key and fingerprint inserts nothing and returns those jobs (`replayed`). BAD_INPUT (with
   * `httpStatus: 422`) when the key was recorded with another fingerprint. Keys are each owner's
   * own (`options.owner`).
   */
  insertJobsOnce(key: string, fingerprint: string, specs: readonly JobSpecInput[], now: number, options?: InsertJobOptions): Promise<{ jobs: JobRecord[]; replayed: boolean }>;
  getJob(id: string): Promise<JobRecord | null>;
  /** Jobs matching the filter, by id ascending (or descending with `order: 'desc'`). */
  listJobs(filter?: JobFilter): Promise<JobRecord[]>;
  /**
   * Compare-and-set: applies `patch` only if the job's `version` is still `expectedVersion`, and
   * bumps the version. Returns the new record, or null when the job is missing or was changed in
   * between (the caller re-reads and decides again).
   */
  updateJob(id: string, expectedVersion: number, patch: JobPatch): Promise<JobRecord | null>;
  /** Number of jobs per state and priority (states with no job are left out). */
  countJobs(): Promise<{ state: JobState; priority: JobSpecInput['priority']; count: number }[]>;

  /** Appends an event; `seq` is assigned increasing from 1. */
  appendEvent(event: NewEvent): Promise<EventRecord>;
  /** Events with `seq > afterSeq`, ascending, at most `limit` (default 1000). */
  listEvents(afterSeq: number, limit?: number): Promise<EventRecord[]>;

  /** Small key/value settings (e.g. the service's token hash, schema notes). */
  getSetting(key: string): Promise<string | null>;
  putSetting(key: string, value: string): Promise<void>;

  /** Every user, by name: who may call the API, with their share of the pool (see `UserRecord`). */
  listUsers(): Promise<UserRecord[]>;
  getUser(name: string): Promise<UserRecord | null>;
  /** The user whose token hashes to `tokenHash` (hex SHA-256), or null. */
  userByTokenHash(tokenHash: string): Promise<UserRecord | null>;
  /** Adds a user; BAD_INPUT when the name is taken. */
  insertUser(user: NewUser, tokenHash: string, now: number): Promise<UserRecord>;
  /** Changes a user (undefined: unchanged); null when there is no such user. */
  updateUser(name: string, patch: UserPatch): Promise<UserRecord | null>;
  /** Removes a user (their jobs keep their owner's name); false when there was none. */
  deleteUser(name: string): Promise<boolean>;
  /** Writes what an attempt measured of its workload; replaces the attempt's earlier one (one per job and attempt). */
  putObservation(observation: WorkloadObservation): Promise<void>;
  /** Observations, oldest first: of one workload, or of all. */
  listObservations(workload?: string): Promise<WorkloadObservation[]>;
}

/**
 * What one attempt of a job measured of its workload on the resource it ran on (the service
 * learns the workload's speed curve and memory from these, see src/control/learning.ts).
 */
export interface WorkloadObservation {
  /** The workload's name as the job spec gave it. */
  readonly workload: string;
  readonly jobId: string;
  readonly attempt: number;
  /** The GPU model's name as the catalogue spells it (`A100-SXM4-40GB`). */
  readonly gpuModel: string;
  /** The MIG profile it ran on (`1g.5gb`), or `whole` for one whole GPU. */
  readonly resource: string;
  /** Samples per second measured from its progress lines; null when it reported none. */
  readonly samplesPerSecond: number | null;
  /** The most GPU memory its processes held at once (nvidia-smi's per-process memory), MiB; null when not seen. */
  readonly peakMemoryMiB: number | null;
  /** It ran out of GPU memory there. */
  readonly outOfMemory: boolean;
  /** When it was measured, ms since the epoch. */
  readonly time: number;
  /** The user whose job measured it (`JobRecord.owner`); null for a job of no user (a pool without users). */
  readonly owner: string | null;
  /**
   * It teaches every user's jobs: its job had no owner, or its owner was an admin when it ran (the
   * operator, trusted). Otherwise it teaches only its owner's jobs (src/control/learning.ts).
   * Observations written before owners were kept (schema version 6) are shared.
   */
  readonly shared: boolean;
}

/** Options of `insertJobs`. */
export interface InsertJobOptions {
  /** The user who submits the jobs (`JobRecord.owner`); absent: none (jobs of a pool without users). */
  readonly owner?: string;
}

/**
 * A user of `migpool serve`: every API call is made as one. `admin` users see and cancel every
 * job; others only their own. `weight` and `quotaGpus` are their claim on the pool (the policy's
 * `ClusterView.users`); `unixUser` the account their jobs run as when the service runs as root.
 */
export interface UserRecord {
  readonly name: string;
  readonly admin: boolean;
  /** Relative share of the pool under contention [1]. */
  readonly weight: number;
  /** Most GPUs' worth of compute slices their running jobs may hold, or null for no limit. */
  readonly quotaGpus: number | null;
  /** The Unix account their jobs run as (when the service runs as root), or null: the service's own. */
  readonly unixUser: string | null;
  /** ms since the Unix epoch. */
  readonly createdAt: number;
}

/** What `insertUser` takes (defaults: not admin, weight 1, no quota, no Unix user). */
export interface NewUser {
  readonly name: string;
  readonly admin?: boolean;
  readonly weight?: number;
  readonly quotaGpus?: number | null;
  readonly unixUser?: string | null;
}

/** Fields `updateUser` may change (undefined: unchanged; null: cleared); `tokenHash` replaces the token. */
export type UserPatch = Partial<Pick<UserRecord, 'admin' | 'weight' | 'quotaGpus' | 'unixUser'>> & { readonly tokenHash?: string };

/**
 * A job's life: `queued` → `starting` (placement chosen and written, process not yet confirmed) →
 * `running` → `succeeded` | `failed` | `cancelled`. A retried or preempted job goes back to
 * `queued` with `attempt` kept.
 */
export type JobState = 'queued' | 'starting' | 'running' | 'succeeded' | 'failed' | 'cancelled';

export const JOB_STATES: readonly JobState[] = ['queued', 'starting', 'running', 'succeeded', 'failed', 'cancelled'];
export const FINAL_STATES: readonly JobState[] = ['succeeded', 'failed', 'cancelled'];

/** Where a job runs: a MIG instance, or whole GPUs; `devices` is what CUDA_VISIBLE_DEVICES gets. */
export type JobPlacement =
  | { readonly kind: 'instance'; readonly gpu: number; readonly start: number; readonly profile: string; readonly devices: readonly string[] }
  | {
      readonly kind: 'gpus';
      readonly gpus: readonly number[];
      readonly sharing: 'exclusive' | 'timeslice' | 'mps';
      readonly devices: readonly string[];
      /** Sharing 'mps': how it runs as an MPS client (see src/control/multiplex.ts). */
      readonly mps?: {
        /** CUDA_MPS_CLIENT_PRIORITY it got: 0 normal (foreground), 1 below normal (background). */
        readonly clientPriority: 0 | 1;
        /** CUDA_MPS_ACTIVE_THREAD_PERCENTAGE it got, or null for no limit. */
        readonly activeThreadPercentage: number | null;
        /** The other jobs on its GPU: when it started in the store, as they are now in the API. */
        readonly neighbours: readonly string[];
        /** Neighbours of other users, counted (the API to a user who is no admin: `neighbours` lists their own only). */
        readonly otherNeighbours?: number;
      };
    };

/** The process of a running attempt, enough to find it again after a restart. */
export interface ProcessRef {
  readonly pid: number;
  /** Process start time as /proc/PID/stat field 22 says it (clock ticks since boot): tells a reused pid apart. */
  readonly startTicks: string;
  /** Folder of this attempt: logs and the exit-status file. */
  readonly dir: string;
  /** The Slurm job of the attempt, for attempts the Slurm executor submitted (then `pid` is 0). */
  readonly slurmJobId?: string;
}

export interface JobRecord {
  readonly id: string;
  readonly spec: JobSpecInput;
  readonly state: JobState;
  /** Bumped by every update (compare-and-set). */
  readonly version: number;
  readonly submittedAt: number;
  /** Start of the current (or last) attempt. */
  readonly startedAt: number | null;
  readonly endedAt: number | null;
  /** Attempts started so far. */
  readonly attempt: number;
  readonly placement: JobPlacement | null;
  readonly process: ProcessRef | null;
  readonly exitCode: number | null;
  /** Why it ended, failed or went back to the queue, in words. */
  readonly reason: string | null;
  readonly cancelRequested: boolean;
  /** The user who submitted the job; null for jobs written before users existed (schema version 3) or without one. */
  readonly owner?: string | null;
  /**
   * Attempts that ended because the service preempted them (not failures: they do not use up
   * `retries`). Absent in records written before schema version 2: read as 0.
   */
  readonly preemptions?: number;
  /** Set by the service, never stored: why a queued job waits, in words. */
  readonly pending?: string | null;
  /** Set by the service, never stored: what a running job last reported of its progress. */
  readonly progress?: JobProgressView | null;
}

/** A running job's progress as the service read it from the job's progress lines. */
export interface JobProgressView {
  readonly samples: number;
  readonly total: number | null;
  readonly fraction: number | null;
  readonly samplesPerSecond: number | null;
  readonly etaSeconds: number | null;
  readonly updatedAt: number;
}

/** Fields `updateJob` may change (undefined: unchanged; null: cleared). */
export type JobPatch = Partial<Pick<JobRecord, 'state' | 'startedAt' | 'endedAt' | 'attempt' | 'placement' | 'process' | 'exitCode' | 'reason' | 'cancelRequested' | 'preemptions'>>;

export interface JobFilter {
  readonly states?: readonly JobState[];
  readonly priority?: JobSpecInput['priority'];
  /** Only the jobs of this user (`JobRecord.owner`). */
  readonly owner?: string;
  /** Only ids greater than this (paging ascending) or less (descending). */
  readonly after?: string;
  readonly limit?: number;
  readonly order?: 'asc' | 'desc';
}

export type EventType =
  | 'job-submitted'
  | 'job-starting'
  | 'job-started'
  | 'job-finished'
  | 'job-requeued'
  | 'job-cancel-requested'
  | 'job-preempting'
  | 'gpu-reconfiguring'
  | 'gpu-reconfigure-failed'
  | 'gpu-reconfigured'
  | 'service-started'
  /** MPS: a background job backs off (restarted with fewer threads, or stopped) because its foreground neighbour slowed beyond the bound. */
  | 'mps-backoff'
  /** MPS: a foreground job slowed beyond the bound beside a background job that may not be moved. */
  | 'mps-slowdown';

export interface NewEvent {
  readonly time: number;
  readonly type: EventType;
  readonly jobId: string | null;
  /** Free-form JSON details. */
  readonly data: Readonly<Record<string, unknown>>;
}

export interface EventRecord extends NewEvent {
  readonly seq: number;
}
