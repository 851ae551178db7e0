import type { MpsDaemons } from '../exec/mps-daemons.js';
import { keyOf } from '../exec/mps-daemons.js';
import type { GpuModel } from '../mig/types.js';
import { predict } from '../perf/model.js';
import type { Workload } from '../perf/types.js';
import type { JobPlacement } from '../store/types.js';
import { nextThreadPercentage, SlowdownMonitor, type DeviceView, type Slowdown } from './multiplex-monitor.js';

/**
 * Largest slowdown of a foreground job beside background ones: DeepPool's bound (the foreground
 * kept within 1.1x of its speed alone; issue 21 and `burst-plan`'s summary use the same figure).
 */
export const DEFAULT_SLOWDOWN_BOUND = 1.1;
/**
 * Progress must span this long, after the settling time, for a speed to count: several reports of
 * a training job (examples/train_mig.py reports every 5 iterations, well under a second each on a
 * GPU), and several service ticks (2 s). A policy figure, not a measured one.
 */
export const DEFAULT_WINDOW_MS = 20_000;
/** Reports of the first seconds after a neighbour's first progress report are skipped: its first iterations (warm-up, cuDNN autotuning, caches). */
export const DEFAULT_SETTLE_MS = 10_000;
/**
 * Smallest active thread percentage a background client is backed off to; below it the job stops
 * sharing with foreground jobs (it waits for a GPU without one). A policy parameter: a client
 * limited to fewer threads mostly holds memory (compare dp.ts MIN_FILL_SHARE).
 */
export const MIN_ACTIVE_THREAD_PERCENTAGE = 10;

/**
 * CUDA_MPS_CLIENT_PRIORITY values (NVIDIA's MPS documentation, "Appendix: Environment Variables",
 * CUDA_MPS_CLIENT_PRIORITY): 0 is NORMAL, 1 is BELOW NORMAL; the MPS server schedules work of
 * higher-priority clients first where both have work ready. Foreground jobs get NORMAL,
 * background jobs BELOW NORMAL.
 */
export const MPS_PRIORITY = { foreground: 0, background: 1 } as const;

/** What the placement of a job run as an MPS client records. */
export type MpsPlacementInfo = NonNullable<Extract<JobPlacement, { kind: 'gpus' }>['mps']>;

/** How the service multiplexes; defaults in brackets. */
export interface MultiplexOptions {
  /** Largest foreground slowdown before background jobs back off [DEFAULT_SLOWDOWN_BOUND]. */
  readonly slowdownBound?: number;
  /** See DEFAULT_WINDOW_MS [20 s]. */
  readonly windowMs?: number;
  /** See DEFAULT_SETTLE_MS [10 s]. */
  readonly settleMs?: number;
  /** Start MPS control daemons (false for simulated GPUs, which have none) [true]. */
  readonly daemons?: boolean;
}

/** A client of an MPS device, as the service passes it to {@link Multiplexer.observe}. */
export interface MpsClient {
  readonly id: string;
  readonly attempt: number;
  /** When its attempt started (ms). */
  readonly startedAt: number;
  readonly priority: 'foreground' | 'background';
  readonly gpu: number;
  readonly devices: readonly string[];
  readonly progress: { readonly samples: number; readonly updatedAt: number } | null;
  /** The job's workload when its spec names one, and its GPU's model: for the model's speed alone. */
  readonly workload: Workload | null;
  readonly model: GpuModel | null;
}

/** What the service shows of multiplexing (stats, metrics). */
export interface MultiplexStats {
  /** Background clients backed off (restarted with fewer threads, or stopped) since the service started. */
  readonly backoffs: number;
  /** MPS control daemons running now. */
  readonly daemons: number;
  /** Foreground jobs' latest measured slowdown beside background jobs. */
  readonly slowdowns: readonly { readonly job: string; readonly gpu: number; readonly slowdown: number }[];
}

/**
 * The service's side of CUDA MPS: starts and stops the control daemons (only for devices that
 * have MPS clients), gives each client its environment, measures the foreground jobs' speed
 * beside background ones and says which background jobs must back off.
 *
 * Back-off is a restart: a client's active thread percentage comes from its environment
 * (NVIDIA's MPS documentation, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE) and cannot be changed while it
 * runs (NVIDIA's answer on the developer forum, "Can I dynamically change
 * CUDA_MPS_ACTIVE_THREAD_PERCENTAGE to a running MPS process?": "You cannot edit the percentage
 * assigned to a process today"). So a background job whose foreground
 * neighbour slows beyond the bound is preempted (checkpointed, requeued) and, when the policy
 * places it again, runs with half the threads it had (100, 50, 25, 12); below
 * MIN_ACTIVE_THREAD_PERCENTAGE it is stopped instead: it may then not join a GPU that runs a
 * foreground job (it waits for one without). Only jobs whose spec says `preemptible: true` are
 * restarted; others are left running and the slowdown is reported. The back-offs are kept in
 * memory: a restarted service starts every job at full threads again.
 */
export class Multiplexer {
  private readonly monitor: SlowdownMonitor;
  /** Active thread percentage of each background job's next attempts (after back-offs). */
  private readonly caps = new Map<string, number>();
  /** Background jobs that backed off past the floor: they no longer join foreground jobs. */
  private readonly held = new Set<string>();
  private backoffs = 0;
  private slowdowns: Slowdown[] = [];
  readonly bound: number;

  constructor(
    private readonly daemons: MpsDaemons,
    private readonly o: MultiplexOptions = {},
  ) {
    this.bound = o.slowdownBound ?? DEFAULT_SLOWDOWN_BOUND;
    this.monitor = new SlowdownMonitor({ bound: this.bound, windowMs: o.windowMs ?? DEFAULT_WINDOW_MS, settleMs: o.settleMs ?? DEFAULT_SETTLE_MS });
  }

  /** What the placement of a job started with sharing 'mps' records; null for other placements. */
  infoFor(jobId: string, priority: 'foreground' | 'background', placement: JobPlacement, neighbours: readonly string[]): MpsPlacementInfo | null {
    if (placement.kind !== 'gpus' || placement.sharing !== 'mps') return null;
    return { clientPriority: MPS_PRIORITY[priority], activeThreadPercentage: priority === 'background' ? (this.caps.get(jobId) ?? null) : null, neighbours };
  }

  /**
   * Makes sure the daemon of the placement's devices runs, and returns the client's environment:
   * CUDA_MPS_PIPE_DIRECTORY and CUDA_MPS_LOG_DIRECTORY (the daemon's: NVIDIA's MPS documentation,
   * "Starting MPS client application": set to the same location as the control daemon),
   * CUDA_MPS_CLIENT_PRIORITY, and CUDA_MPS_ACTIVE_THREAD_PERCENTAGE when the client is limited
   * (the share of the device's threads it may use, 0-100; it only lowers a limit the daemon sets).
   * @throws MigpoolError DEVICE when the daemon cannot start
   */
  async clientEnv(placement: JobPlacement, info: MpsPlacementInfo): Promise<Record<string, string>> {
    const dirs = this.o.daemons === false ? this.daemons.dirsOf(placement.devices) : await this.daemons.ensure(placement.devices);
    return {
      CUDA_MPS_PIPE_DIRECTORY: dirs.pipeDir,
      CUDA_MPS_LOG_DIRECTORY: dirs.logDir,
      CUDA_MPS_CLIENT_PRIORITY: String(info.clientPriority),
      ...(info.activeThreadPercentage !== null ? { CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: String(info.activeThreadPercentage) } : {}),
    };
  }

  /**
   * After a restart, for an MPS client still running: its daemon is started again (the earlier
   * service process told it to quit at shutdown; NVIDIA's `quit` lets running clients finish, so
   * the client kept running). When that start fails, a daemon still runs there (it had clients
   * left): it is taken as running, and stopped like the others when its clients are gone.
   * Returns how it went, for the log.
   */
  async resume(devices: readonly string[]): Promise<'started' | 'adopted' | 'none'> {
    if (this.o.daemons === false) return 'none';
    try {
      await this.daemons.ensure(devices);
      return 'started';
    } catch {
      this.daemons.adopt(devices);
      return 'adopted';
    }
  }

  /** Whether a job may start as an MPS client beside `neighbours` (their priorities): a stopped background job never joins a foreground one. */
  mayJoin(jobId: string, neighbours: readonly ('foreground' | 'background')[]): boolean {
    return !this.held.has(jobId) || !neighbours.includes('foreground');
  }

  /** Why a queued job waits when MPS back-offs stopped it from sharing with foreground jobs; null otherwise. */
  heldReason(jobId: string): string | null {
    if (!this.held.has(jobId)) return null;
    return `under MPS it slowed a foreground job beyond ${this.bound}x even at ${this.caps.get(jobId) ?? 100}% of the GPU's threads: waits for a GPU without a foreground job`;
  }

  /** Measures the foreground clients; returns the slowdowns beyond the bound (each once per set of neighbours). */
  observe(now: number, clients: readonly MpsClient[]): Slowdown[] {
    const byDevice = new Map<string, DeviceView & { clients: DeviceView['clients'][number][] }>();
    for (const c of clients) {
      const key = keyOf(c.devices);
      let d = byDevice.get(key);
      if (!d) byDevice.set(key, (d = { key, gpu: c.gpu, clients: [] }));
      d.clients.push({ id: c.id, attempt: c.attempt, startedAt: c.startedAt, priority: c.priority, progress: c.progress, modelAloneRate: c.priority === 'foreground' ? modelAloneRate(c) : null });
    }
    const { measured, over } = this.monitor.observe(now, [...byDevice.values()]);
    this.slowdowns = measured;
    return over;
  }

  /** A background job backs off: the active thread percentage of its next attempts, or null when it stops sharing with foreground jobs. */
  backOff(jobId: string): number | null {
    this.backoffs++;
    const next = nextThreadPercentage(this.caps.get(jobId) ?? null, MIN_ACTIVE_THREAD_PERCENTAGE);
    if (next === null) this.held.add(jobId);
    else this.caps.set(jobId, next);
    return next;
  }

  /**
   * Stops the daemons no client needs any more (`inUse`: the device lists of the running MPS
   * clients, read only where daemons run) and forgets the back-offs of jobs no longer open
   * (`open`); returns the stopped daemons' device keys. Called at every scheduling pass: nothing
   * here copies the open jobs.
   */
  async release(inUse: () => readonly (readonly string[])[], open: { has(id: string): boolean }): Promise<string[]> {
    for (const id of [...this.caps.keys()]) if (!open.has(id)) this.caps.delete(id);
    for (const id of [...this.held]) if (!open.has(id)) this.held.delete(id);
    if (this.o.daemons === false) return [];
    return this.daemons.keepOnly(new Set(inUse().map(keyOf)));
  }

  /** Stops every daemon (service shutdown). */
  async stopAll(): Promise<void> {
    if (this.o.daemons !== false) await this.daemons.stopAll();
  }

  stats(): MultiplexStats {
    return { backoffs: this.backoffs, daemons: this.daemons.running().length, slowdowns: this.slowdowns.map((s) => ({ job: s.foreground, gpu: s.gpu, slowdown: s.slowdown })) };
  }
}

/** Samples/s the performance model gives a job alone on its whole GPU (null: no workload named, or no speed). */
function modelAloneRate(c: MpsClient): number | null {
  if (!c.workload || !c.model) return null;
  try {
    return predict(c.workload, { kind: 'full', gpu: c.model }).samplesPerSecond;
  } catch {
    return null;
  }
}
