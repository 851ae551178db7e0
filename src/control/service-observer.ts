import type { JobPlacement, JobState } from '../store/types.js';

/**
 * The user a job belongs to when it names none (`JobSpec.user` absent): the pool's default user,
 * as metrics label it.
 */
export const DEFAULT_USER = 'default';

/** A job as metrics see it: who owns it and its class. */
export interface ObservedJob {
  readonly id: string;
  readonly priority: 'foreground' | 'background';
  /** The owner (`JobSpec.user`), or {@link DEFAULT_USER}. */
  readonly user: string;
}

/** A job not yet final, for live gauges and dcgm-exporter's job mapping. */
export interface LiveJob extends ObservedJob {
  readonly state: Extract<JobState, 'queued' | 'starting' | 'running'>;
  /** Where it runs (starting or running), null while queued. */
  readonly placement: JobPlacement | null;
}

/** How a job ended for good. */
export type JobOutcome = 'succeeded' | 'failed' | 'cancelled';

/**
 * What the service tells observers (the metrics) as it happens, so that counters and histograms
 * count every occurrence, not a sampled window. Every method is optional; an observer's exception
 * is swallowed (a metric must never stop the service).
 */
export interface ServiceObserver {
  /** A scheduling pass took `seconds` (wall time, settling ends, policy rounds and actions). */
  schedulingPass?(seconds: number): void;
  /** Attempt `attempt` (1 for the first) of `job` started, `waitSeconds` after the job was submitted. */
  jobStarted?(job: ObservedJob, waitSeconds: number, attempt: number): void;
  /** `job` reached a final state. */
  jobFinished?(job: ObservedJob, outcome: JobOutcome): void;
}

/** The service's observers: fans each call out to all of them. */
export class ObserverSet {
  private readonly all = new Set<ServiceObserver>();

  /** Adds an observer; returns the function that removes it. */
  add(o: ServiceObserver): () => void {
    this.all.add(o);
    return () => void this.all.delete(o);
  }

  /** Calls `fn` on every observer, ignoring their failures. */
  each(fn: (o: ServiceObserver) => void): void {
    for (const o of this.all) {
      try {
        fn(o);
      } catch {
        // A failing metric must not stop the service.
      }
    }
  }
}
