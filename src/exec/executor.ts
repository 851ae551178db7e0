import type { ProcessRef } from '../store/types.js';

/**
 * The executor port: runs one attempt of a job somewhere and reports how it ended. The local
 * executor runs it as a process group on this machine; a Slurm executor hands it to sbatch.
 *
 * Deliberately left out: scheduling (the policy decides where), retries (the service decides
 * whether to run another attempt), GPU partitioning.
 */
export interface Executor {
  /** True when `LaunchSpec.runAs` is honoured (a job run as another account); absent: it is not. */
  readonly runsAsOthers?: boolean;
  /**
   * Starts an attempt and returns how to find it again. Resolves once the process exists; the
   * attempt keeps running if the service stops (it is detached from the service).
   */
  launch(spec: LaunchSpec): Promise<ProcessRef>;
  /**
   * After a restart: watches an attempt started by an earlier service process. Returns `running`
   * when it is still alive (its pid is still that process: same start time), otherwise how it
   * ended (from its exit-status file, or `lost` when there is none).
   */
  adopt(jobId: string, attempt: number, ref: ProcessRef): Promise<'running' | ExitReport>;
  /** Stops an attempt: SIGTERM to its process group, SIGKILL after the grace period. */
  cancel(jobId: string): Promise<void>;
  /** Called once per attempt when it ends (exit, timeout, cancel, or lost). */
  onExit(listener: (report: ExitReport) => void): void;
  /** Paths of an attempt's logs. */
  logPaths(ref: ProcessRef): { stdout: string; stderr: string };
  /**
   * How many attempts it holds something of in memory (watched, or remembered): 0 once every
   * attempt it launched or adopted has ended and been reported. For tests and the leak soak.
   */
  retained?(): number;
  /** Stops watching (timers, child handles) without killing anything. */
  close(): Promise<void>;
}

export interface LaunchSpec {
  readonly jobId: string;
  readonly attempt: number;
  readonly command: readonly string[];
  readonly workdir: string;
  readonly env: Readonly<Record<string, string>>;
  /** MIG device UUIDs or GPU UUIDs: what CUDA_VISIBLE_DEVICES gets (comma-separated). */
  readonly devices: readonly string[];
  readonly maxRuntimeSeconds: number | null;
  /** Seconds from SIGTERM to SIGKILL when the attempt is stopped (cancel, preemption, max runtime) [the executor's default]. */
  readonly graceSeconds?: number;
  /**
   * The account the job's process runs as (the executor must run as root); its log files become
   * that account's, mode 0600. Absent: the executor's own. Only for executors that say
   * `runsAsOthers` (the Slurm executor does not: sbatch runs the job as the user who submits it).
   */
  readonly runAs?: { readonly uid: number; readonly gid: number };
  /** Folder for this attempt (created if missing): stdout.log, stderr.log, exit status. */
  readonly dir: string;
  /**
   * What the placement holds, for executors that ask a cluster engine for it (Slurm's `--gres`):
   * `count` instances of the MIG profile `type`, or `count` whole GPUs when `type` is null.
   */
  readonly gres?: { readonly type: string | null; readonly count: number };
}

export interface ExitReport {
  readonly jobId: string;
  readonly attempt: number;
  /** Exit status, or null when killed by a signal or lost. */
  readonly exitCode: number | null;
  readonly signal: string | null;
  /** `exited` on its own; `timeout` past its max runtime; `cancelled` on request; `lost` when nothing says how it ended. */
  readonly reason: 'exited' | 'timeout' | 'cancelled' | 'lost';
  /** Milliseconds since the epoch when the end was seen. */
  readonly endedAt: number;
  /** Why the command could not be started (missing program or workdir), in one line, when it could not. */
  readonly message?: string;
}
