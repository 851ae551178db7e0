import { closeSync, fstatSync, mkdirSync, openSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { badInput, MigpoolError } from '../errors.js';
import type { Executor, ExitReport } from '../exec/executor.js';
import { findRunnerProcess, isAttemptProcess, readExitFile, readJobSession, readProcessRef } from '../exec/local-executor.js';
import { readProcStat } from '../exec/proc.js';
import { readLogChunk } from '../exec/log-file.js';
import { ProgressReader } from '../exec/progress-reader.js';
import { explainPending } from '../sched/pending.js';
import { GpuError, sameBusId, unreachableAdvice, unreachableGpuName, type ComputeInstanceInfo, type GpuInstanceInfo, type GpuPort, type GpuProcess, type UnreachableGpu } from '../gpu/port.js';
import type { GpuModel } from '../mig/types.js';
import type { CurrentGpu } from '../partition/state.js';
import type { Workload } from '../perf/types.js';
import { resolveWorkload } from '../perf/workloads.js';
import { raiseMemoryAfterOom } from '../perf/refit.js';
import { NO_HISTORY, type ClusterView, type Decision, type GpuView, type JobHistory, type JobSpec, type Policy, type PolicyContext, type RunningJobView, type UserShare } from '../sched/types.js';
import type { GpuSnapshot, LogChunk, PoolService, ServiceStats, SubmitOptions } from './service-port.js';
import { DEFAULT_USER, ObserverSet, type JobOutcome, type LiveJob, type ObservedJob, type ServiceObserver } from './service-observer.js';
import { createRandom } from '../random.js';
import type { EventRecord, JobFilter, JobPatch, JobPlacement, JobRecord, NewEvent, Store } from '../store/types.js';
import { DEFAULT_KILL_GRACE_SECONDS, isExactProfile, parseJobSpec, profileOf, type JobSpecInput } from '../jobs/job-spec.js';
import { checkDecision, frozenView, type CheckLookup } from '../sched/check.js';
import { createPolicyContext, sharedGpuSpeed, SpeedTable } from '../sched/context.js';
import { planLayout } from '../partition/plan.js';
import { executePlans } from './apply.js';
import { ActiveJobs } from './active-jobs.js';
import { JournalFile } from './journal.js';
import { launchRefusal } from './launch-check.js';
import { attemptIdentity, rootRunRefusal, type RunAsOptions } from './run-as.js';
import { JOB_FOLDER_MODE, privateJobFolders } from './job-folders.js';
import { WorkloadLearning, type LearningOptions } from './learning.js';
import { failuresInARow, MAX_PREEMPTIONS_PER_JOB, MIN_RUN_BEFORE_PREEMPT_SECONDS, preemptRefusal, repartitionBackoffMs } from './preempt-rules.js';
import { modelOfGpu, readCurrentState } from './state-reader.js';
import { expandArrays, isArraySubmission } from './arrays.js';
import { checkDependencies, dependenciesToLookUp, gateQueue, visibleLookup, type EndedJob, type Gate } from './dependencies.js';
import { fingerprintOf } from './idempotency.js';
import { MpsDaemons } from '../exec/mps-daemons.js';
import { Multiplexer, type MultiplexOptions } from './multiplex.js';
import { backOffNeighbours, mpsClients, mpsDevicesInUse, withLiveNeighbours } from './multiplex-hooks.js';

/** How the service runs; defaults in brackets. */
export interface ServiceOptions {
  readonly store: Store;
  readonly executor: Executor;
  readonly gpu: GpuPort;
  readonly policy: Policy;
  /** Where attempts keep their logs and exit status: `<dataDir>/jobs/<id>/<attempt>/`. */
  readonly dataDir: string;
  /** The wall clock, ms since the epoch [Date.now]. */
  readonly now?: () => number;
  /** Seed of the random source handed to the policy [1]. */
  readonly seed?: number;
  /** A scheduling pass runs at least this often, ms, besides every submission and job end [2000]. */
  readonly tickMs?: number;
  /**
   * How often the service reads every GPU again, ms [10000]: a GPU that stopped answering, one that
   * answers again, and a MIG layout someone changed by hand (nvidia-smi mig, mig-parted) are seen
   * within this. A full read is seven nvidia-smi runs (--query-gpu, mig -lgi, mig -lci, -L, -q -x,
   * and the process list's --query-gpu and -q -x); read in the background, never under a pass.
   */
  readonly gpuCheckMs?: number;
  /** Seconds a re-partition is said to take, for the policy's cost model [5]. */
  readonly reconfigureSeconds?: number;
  /** Workload assumed for jobs that name none [resnet50-imagenet64]. */
  readonly defaultWorkload?: string;
  /** Seconds of work assumed for jobs with no `estimatedSeconds` [3600]. */
  readonly defaultEstimateSeconds?: number;
  /** Extra environment for every job (e.g. the simulated machine's state file). */
  readonly jobEnv?: Readonly<Record<string, string>>;
  /** Workloads besides the built-in ones (from `migpool bench --out`). */
  readonly workloads?: readonly Workload[];
  /** Accept and keep jobs but start none, e.g. for maintenance or to measure the API alone [false]. */
  readonly hold?: boolean;
  /** Where the service reports what it does, one line at a time [nowhere]. */
  readonly log?: (line: string) => void;
  /** Seconds a job runs before the service lets a policy preempt it [60, MIN_RUN_BEFORE_PREEMPT_SECONDS]. */
  readonly minRunBeforePreemptSeconds?: number;
  /**
   * Called after every round of a scheduling pass with the view the policy saw, its decisions,
   * and for each decision the view it was checked against and what the check said (null: valid):
   * what a replay through the simulator's checker and the same policy must reproduce.
   */
  readonly onRound?: (round: RecordedRound) => void;
  /**
   * The pool's users with their weight and quota (src/sched/shares.ts), read at the start of every
   * scheduling pass and handed to the policy as `view.users` [none: no quotas, one share].
   */
  readonly users?: () => ReadonlyMap<string, UserShare> | Promise<ReadonlyMap<string, UserShare>>;
  /** Who owns a job (`JobSpec.user`, for fair share and quotas) [none: the pool's default user]. */
  readonly jobOwner?: (job: JobRecord) => string | undefined;
  /** How the service learns workloads from its jobs' progress and memory (see learning.ts). */
  readonly learning?: LearningOptions;
  /** CUDA MPS sharing: daemons, the foreground's slowdown bound, how it is measured (see src/control/multiplex.ts). */
  readonly multiplex?: MultiplexOptions;
  /**
   * On a service that runs as root, whether jobs of users who are no admins and are mapped to no
   * Unix account run as root [true]: false refuses their submissions (403) and fails an attempt
   * that would (see run-as.ts rootRunRefusal). `migpool serve` passes false unless told.
   */
  readonly unmappedUsersAsRoot?: boolean;
}

/** One round of a live scheduling pass, as recorded for a replay. */
export interface RecordedRound {
  readonly view: ClusterView;
  readonly decisions: readonly Decision[];
  readonly checks: readonly { readonly view: ClusterView; readonly problem: string | null }[];
}

/** One GPU as the service last read it. */
interface GpuEntry {
  readonly index: number;
  readonly uuid: string;
  readonly name: string;
  /** PCI bus ID as nvidia-smi lists it (`00000000:3B:00.0`). */
  readonly busId: string;
  readonly model: GpuModel;
  current: CurrentGpu;
  /** MIG device UUID of the first compute instance of each GPU instance, by placement start. */
  ciUuids: Map<number, string>;
  /** NVML GPU instance ID of each GPU instance, by placement start. */
  giIds: Map<number, number>;
}

/** Who holds what (see PoolServiceImpl.occupants). */
interface Occupants {
  /** The job on each instance, by `gpu|start`. */
  readonly instances: Map<string, string>;
  /** The whole-GPU jobs on each GPU, by index. */
  readonly whole: Map<number, string[]>;
  readonly sharing: Map<number, 'exclusive' | 'timeslice' | 'mps'>;
}

const RECENT = 1000;

/**
 * Resolves in a later macrotask (setImmediate: after pending I/O callbacks), so that HTTP requests
 * and signals are served between the service's turns under load (thousands of queued jobs ending
 * in a stream), not only once the whole chain of them has run.
 */
function turn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * What CUDA, PyTorch and TensorFlow print when a GPU allocation fails: "CUDA out of memory"
 * (torch.cuda.OutOfMemoryError), "CUDA error: out of memory", "CUDA_ERROR_OUT_OF_MEMORY".
 */
const OUT_OF_MEMORY = /CUDA out of memory|CUDA error: out of memory|CUDA_ERROR_OUT_OF_MEMORY|OutOfMemoryError/;
/** Bytes of a failed attempt's stderr read for the out-of-memory message. */
const OOM_TAIL_BYTES = 65_536;

/** The last OOM_TAIL_BYTES of a file ('' when it cannot be read). */
function tailOf(path: string): string {
  let fd: number | null = null;
  try {
    fd = openSync(path, 'r');
    const size = fstatSync(fd).size;
    const length = Math.min(size, OOM_TAIL_BYTES);
    const buf = Buffer.alloc(length);
    readSync(fd, buf, 0, length, size - length);
    return buf.toString('utf8');
  } catch {
    return '';
  } finally {
    if (fd !== null) closeSync(fd);
  }
}
/** An error's first line, for one-line log entries. */
function firstLine(e: unknown): string {
  return (e instanceof Error ? e.message : String(e)).split('\n')[0] ?? '';
}

/** GPUs nvidia-smi names as not answering, in words: `GPU 1 (0000:02:00.0) does not answer nvidia-smi (Unknown Error)`. */
function lostText(lost: readonly UnreachableGpu[]): string {
  return lost.map((l) => `${unreachableGpuName(l)} does not answer nvidia-smi (${l.reason})`).join('; ');
}


/** A GPU's MIG mode and layout in words, without processes: what a change by hand alters. */
function layoutText(g: GpuEntry): string {
  const mode = g.current.migMode;
  const pending = mode.pending !== mode.current ? ` (MIG ${mode.pending === 'enabled' ? 'on' : 'off'} pending)` : '';
  if (mode.current !== 'enabled') return `MIG off${pending}`;
  const instances = [...g.current.instances]
    .sort((a, b) => a.start - b.start)
    .map((i) => `${i.profile.name}@${i.start}${g.ciUuids.has(i.start) ? '' : ' (no compute instance)'}`);
  return `${instances.length === 0 ? 'MIG on, no instances' : instances.join('+')}${pending}`;
}

/** Share done a job must report before its fraction sets its length for the policy (a few lines in). */
const MIN_REPORTED_FRACTION = 0.02;
const TIMELINE = 720;
const THROUGHPUT_WINDOW_MS = 120_000;
/** Queued jobs' reasons are computed at most this often (ms): they are read by people. */
const EXPLAIN_EVERY_MS = 1000;

/**
 * `migpool serve`'s core: the live loop. On every event (submission, job end, cancel, timer) the
 * policy decides from a view of the GPUs and the jobs, exactly as in the simulator, and the
 * service applies its decisions: re-partitions through the GPU port (idle instances only), starts
 * through the executor, preempts by stopping and requeueing. Every decision and state change is
 * written to the store before it acts, so that a crash at any point loses nothing: at start the
 * service re-reads the GPUs, re-adopts the attempts still running and settles the others.
 */
export class PoolServiceImpl implements PoolService {
  private readonly o: Required<Omit<ServiceOptions, 'workloads' | 'log' | 'jobEnv' | 'hold' | 'onRound' | 'users' | 'jobOwner' | 'learning' | 'multiplex'>> & Pick<ServiceOptions, 'workloads' | 'log' | 'jobEnv' | 'hold' | 'onRound' | 'users' | 'jobOwner' | 'learning' | 'multiplex'>;
  private readonly ctx: PolicyContext;
  /** What the jobs taught of their workloads: speeds and memory, in the store, refitted for the policy. */
  readonly learning: WorkloadLearning;
  /** The performance model's speeds, shared with the policy's context (one table for both). */
  private readonly speeds = new SpeedTable();
  /** GPU-seconds of each open job's finished attempts, and its preemptions (this service's life). */
  private readonly pastRuns = new Map<string, { attained: number; preemptions: number }>();
  /** Attempts of each open job that ran out of memory and were moved up (not charged as failures). */
  private readonly oomMoves = new Map<string, number>();
  /** Jobs as policies see them once their progress reported their length (see withEstimate). */
  private readonly reported = new Map<string, JobSpec>();
  /** Problems of skipped decisions already logged. */
  private readonly skipped = new Set<string>();
  /** Jobs not yet final, by id: the store's truth mirrored in memory (written after the store). */
  private readonly active = new ActiveJobs();
  private readonly specs = new Map<string, JobSpec>();
  /** What ServiceOptions.users said at the start of the last pass. */
  private users: ReadonlyMap<string, UserShare> | undefined;
  private gpusFound: GpuEntry[] = [];
  private readonly reconfiguring = new Set<number>();
  private readonly listeners = new Set<(e: EventRecord) => void>();
  private serial: Promise<unknown> = Promise.resolve();
  /**
   * Cancels received and not yet applied (they wait for the lock), by job id: how many. Noted at
   * once, so that a pass running meanwhile starts none of these jobs (see cancel).
   */
  private readonly cancelsReceived = new Map<string, number>();
  private passQueued = false;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private readonly passMs: number[] = [];
  private readonly waits: number[] = [];
  private readonly finishedAt: number[] = [];
  private readonly timeline: ServiceStats['timeline'][number][] = [];
  private reconfigurations = 0;
  private reconfigurationsFailed = 0;
  /** Per GPU index: re-partitions that failed in a row, and when the next may be tried (ms). */
  private readonly repartitionFailures = new Map<number, { count: number; until: number; error: string }>();
  /** Per GPU index: its last failed re-partition (number in a row, end of its back-off), kept through successes (see failuresInARow). */
  private readonly repartitionStreaks = new Map<number, { count: number; until: number }>();
  /** Per job whose end the store has not taken yet: the last error said about it (said once). */
  private readonly unrecorded = new Map<string, string>();
  /** Why the last read of the GPUs' processes failed (said once), or null when it worked. */
  private processReadFailure: string | null = null;
  /** Whether that failure was nvidia-smi not answering in time (a pass then does not read again before starting jobs). */
  private processReadTimedOut = false;
  /** GPUs (by index) that stopped answering nvidia-smi while the service ran: why, in words. No job starts there until they answer. */
  private readonly lostGpus = new Map<number, string>();
  /** The background read of every GPU in progress (see checkGpus), and when the last one ended (ms). */
  private checkingGpus: Promise<void> | null = null;
  private gpusCheckedAt = -Infinity;
  /** The last background read's answer, taken at the start of the next pass (under the lock). */
  private gpuRead: { entries: GpuEntry[]; lost: readonly UnreachableGpu[]; changes: ReadonlyMap<number, number>; gone?: string } | null = null;
  /** Per GPU index: how many times the service re-read it after changing it; a background read begun before a change is stale for that GPU. */
  private readonly gpuChanges = new Map<number, number>();
  /** Why the last background read of the GPUs failed (said once), or null when it worked. */
  private gpuReadFailure: string | null = null;
  private gpuReadFailureKind: string | null = null;
  /**
   * Exit reports seen but not yet settled (settling waits for the lock): a decision about a job
   * that already ended (a preemption) settles it instead of waiting for an end that has come.
   */
  private readonly exitsSeen = new Map<string, ExitReport>();
  /** Why each queued job waits, computed after every pass. */
  private pending: ReadonlyMap<string, string> = new Map();
  /** Progress lines read from running jobs' stdout logs. */
  private readonly progress = new ProgressReader();
  private readingProgress = false;
  /**
   * Processes the pool did not start, as last read (see readForeign): by GPU index on a MIG-off
   * GPU running none of its jobs, by `gpu|start` on a MIG instance running none.
   */
  private foreign: ReadonlyMap<number | string, readonly number[]> = new Map();
  /** The read of the GPUs' processes in progress, if any (see readForeign). */
  private readingForeign: Promise<void> | null = null;
  /** Reads of the GPUs' processes begun so far, and the number of the latest one taken: an older read that ends later is dropped. */
  private foreignReads = 0;
  private foreignTaken = 0;
  /**
   * GPU processes listed where a job of the pool ran, in the job's session: its own (the job's and
   * its children's), by pid, with where, and when first listed there after the job had left (null: not yet). On a real
   * GPU, nvidia-smi may still list a job's process for a moment after the job's runner reported its
   * end (the runner waits until no process of the job's group is alive, bin/migpool-job-runner.js):
   * for one tick it is the job's, ending, and not logged as foreign (see foreignIn).
   */
  private readonly ownProcesses = new Map<number, { key: number | string; endedAt: number | null }>();
  /** Whether the last read before a pass's starts failed (logged once until one succeeds). */
  private recheckFailing = false;
  private explainedAt = -Infinity;
  /** Jobs whose refused preemption was logged already (once per job and kind of reason, its numbers left out). */
  private readonly refusalsLogged = new Map<string, string>();
  /** Ended jobs that queued ones depend on, as last read from the store (null: no such job). */
  private readonly ended = new Map<string, EndedJob | null>();
  /** Queued jobs held back (dependencies, array limits) and those that can never start, as of the last pass. */
  private gate: Gate = { held: new Map(), doomed: new Map() };
  /** Metrics' observers of passes, starts and ends. */
  private readonly observers = new ObserverSet();
  /** CUDA MPS: daemons, clients' environment, the foreground's slowdown and background back-offs. */
  private readonly mux: Multiplexer;
  readonly startedAt: number;

  constructor(options: ServiceOptions) {
    this.o = {
      now: Date.now,
      seed: 1,
      tickMs: 2000,
      gpuCheckMs: 10_000,
      reconfigureSeconds: 5,
      defaultWorkload: 'resnet50-imagenet64',
      defaultEstimateSeconds: 3600,
      minRunBeforePreemptSeconds: MIN_RUN_BEFORE_PREEMPT_SECONDS,
      unmappedUsersAsRoot: true,
      ...options,
    };
    this.learning = new WorkloadLearning(this.o.store, this.o.gpu, this.o.learning, this.o.log, { ownerOf: (r) => this.ownerOf(r) });
    // The policy is told the service's preemption rules (preempt-rules.ts), so that it plans on no preemption the service would refuse.
    this.ctx = createPolicyContext({
      random: createRandom(this.o.seed),
      reconfigureSeconds: this.o.reconfigureSeconds,
      speeds: this.speeds,
      preemptionRules: { minRunSeconds: this.o.minRunBeforePreemptSeconds, maxPreemptions: MAX_PREEMPTIONS_PER_JOB },
    });
    this.startedAt = this.o.now();
    this.mux = new Multiplexer(new MpsDaemons({ dataDir: this.o.dataDir }), this.o.multiplex);
    this.o.executor.onExit((r) => {
      this.exitsSeen.set(r.jobId, r);
      // A failed settle (logged by locked) is retried by the next pass: schedule one either way.
      // What the job held is read afresh first: processes someone started there while it ran
      // were the job's to readForeign, and the next job must not start beside them.
      void this.locked(() => this.settle(r)).then(
        () => this.readForeignAfterExit().then(() => this.schedule()),
        () => this.schedule(),
      );
    });
  }

  // ---- life cycle

  /** Reads the GPUs and the jobs, re-adopts running attempts, settles the rest, and starts the loop. */
  async start(): Promise<void> {
    const privatized = privateJobFolders(this.o.dataDir);
    if (privatized > 0) this.o.log?.(`made ${privatized} job folders private (0700, or 0711 where a job runs as its user's account): other local accounts could read the jobs' logs and checkpoints`);
    await this.refreshGpus();
    this.gpusCheckedAt = this.o.now();
    await this.learning.load();
    const open = await this.o.store.listJobs({ states: ['queued', 'starting', 'running'], limit: Number.MAX_SAFE_INTEGER });
    for (const r of open) {
      this.active.set(r.id, r);
      this.specs.set(r.id, this.jobSpecOf(r));
    }
    await this.locked(() => this.recover(open));
    // Before the first pass: a GPU someone else's processes hold is never handed out, not even once.
    await this.readForeign();
    await this.event({ type: 'service-started', jobId: null, data: { policy: this.o.policy.name, gpus: this.gpusFound.length, open: open.length } });
    this.timer = setInterval(() => {
      this.sample();
      this.schedule();
    }, this.o.tickMs);
    this.timer.unref();
    this.sample();
    this.schedule();
  }

  /** Stops the loop and the executor's watchers; running attempts keep running (re-adopted at the next start). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.serial.catch(() => undefined);
    await this.o.executor.close();
    await this.mux.stopAll();
  }

  /** Resolves once every pass queued so far has run (for tests and the demo). */
  async idle(): Promise<void> {
    let before: Promise<unknown>;
    do {
      before = this.serial;
      await before.catch(() => undefined);
    } while (before !== this.serial);
  }

  // ---- PoolService

  async submit(input: unknown, options: SubmitOptions = {}): Promise<JobRecord> {
    if (isArraySubmission(parseJobSpec(input))) throw badInput('job spec: array: an array is many jobs: submit it with POST /v1/jobs/batch (migpool submit --array does)', { path: 'array' });
    const [rec] = await this.submitMany([input], options);
    return rec!;
  }

  /**
   * Validates every spec first (nothing is queued when one is bad), expands arrays, then queues
   * them in one transaction. With an idempotency key, a submission the store already has under
   * that key returns the jobs it queued then, and queues nothing.
   */
  async submitMany(inputs: readonly unknown[], options: SubmitOptions = {}): Promise<JobRecord[]> {
    const where = (i: number) => (inputs.length > 1 ? `job spec ${i + 1}` : 'job spec');
    const parsed = inputs.map((x, i) => parseJobSpec(x, where(i)));
    parsed.forEach((s, i) => this.checkSpec(s, where(i)));
    const lookup = async (id: string) => this.active.get(id) ?? (await this.o.store.getJob(id));
    await checkDependencies(parsed, where, visibleLookup(lookup, options.owner, options.seesAllJobs === true));
    const refusal = await rootRunRefusal(this.o.store, options.owner, this.runAsOptions());
    if (refusal !== null) throw new MigpoolError('CHECK_FAILED', refusal, { httpStatus: 403 });
    const specs = expandArrays(parsed, where);
    const key = options.idempotencyKey;
    const owner = options.owner !== undefined ? { owner: options.owner } : {};
    const { jobs: recs, replayed } =
      key === undefined ? { jobs: await this.o.store.insertJobs(specs, this.o.now(), owner), replayed: false } : await this.o.store.insertJobsOnce(key, fingerprintOf(inputs), specs, this.o.now(), owner);
    if (replayed) return Promise.all(recs.map(async (r) => (await this.getJob(r.id)) ?? r));
    for (const r of recs) {
      this.active.set(r.id, r);
      this.specs.set(r.id, this.jobSpecOf(r));
      await this.event({ type: 'job-submitted', jobId: r.id, data: { name: r.spec.name, priority: r.spec.priority } });
    }
    this.schedule();
    return recs;
  }

  /** Who the service may run jobs as (see run-as.ts). */
  private runAsOptions(): RunAsOptions {
    return { executorRunsAsOthers: this.o.executor.runsAsOthers === true, unmappedUsersAsRoot: this.o.unmappedUsersAsRoot };
  }

  async getJob(id: string): Promise<JobRecord | null> {
    const rec = this.active.get(id) ?? (await this.o.store.getJob(id));
    return rec ? this.withStatus(rec) : null;
  }

  async listJobs(filter?: JobFilter): Promise<JobRecord[]> {
    return (await this.o.store.listJobs(filter)).map((r) => this.withStatus(r));
  }

  /**
   * What a job has reported of its progress, measured: the fraction done (null without a
   * `migpool_total`) and samples per second (null before two reports). For the policy's view.
   */
  progressOf(jobId: string): { fraction: number | null; samplesPerSecond: number | null } {
    const p = this.progress.get(jobId);
    return { fraction: p?.fraction ?? null, samplesPerSecond: p?.samplesPerSecond ?? null };
  }

  /** A record with what only the service knows: why it waits, how far it is. */
  private withStatus(rec: JobRecord): JobRecord {
    if (rec.state === 'queued') return { ...rec, pending: this.mux.heldReason(rec.id) ?? this.pending.get(rec.id) ?? null, progress: this.progress.get(rec.id) };
    if (rec.state === 'running' || rec.state === 'starting') return { ...rec, placement: withLiveNeighbours(rec, this.active.values()), pending: null, progress: this.progress.get(rec.id) };
    return rec;
  }

  async cancel(id: string): Promise<JobRecord | null> {
    // Noted before waiting behind a pass: that pass's starts skip the job (apply, launch).
    this.cancelsReceived.set(id, (this.cancelsReceived.get(id) ?? 0) + 1);
    try {
      return await this.cancelNoted(id);
    } finally {
      const n = this.cancelsReceived.get(id) ?? 1;
      if (n <= 1) this.cancelsReceived.delete(id);
      else this.cancelsReceived.set(id, n - 1);
    }
  }

  private async cancelNoted(id: string): Promise<JobRecord | null> {
    const found = await this.getJob(id);
    if (!found) return null;
    return this.locked(async () => {
      const rec = this.active.get(id);
      if (!rec) return (await this.o.store.getJob(id))!;
      if (rec.state === 'queued') {
        const done = await this.update(rec, { state: 'cancelled', endedAt: this.o.now(), reason: 'cancelled before it started' });
        await this.event({ type: 'job-finished', jobId: id, data: { state: 'cancelled', reason: done.reason } });
        this.finish(done);
        return done;
      }
      const asked = rec.cancelRequested ? rec : await this.update(rec, { cancelRequested: true });
      await this.event({ type: 'job-cancel-requested', jobId: id, data: {} });
      if (asked.state === 'running') await this.o.executor.cancel(id);
      return asked;
    });
  }

  /**
   * `receivedAt` (ms, the service's clock): when the request came [now]. A preempt moves the
   * attempt that ran then, once: one asked while the job is being preempted or cancelled, is
   * requeued by a preemption, or has started again since the request came, is answered with the
   * job as it is and moves nothing.
   */
  async preempt(id: string, receivedAt = this.o.now()): Promise<JobRecord | null> {
    const found = await this.getJob(id);
    if (!found) return null;
    // A refusal is the caller's answer, thrown outside the lock: what fails inside it is logged as internal.
    const answer = await this.locked(async (): Promise<JobRecord | MigpoolError> => {
      const rec = this.active.get(id);
      const notRunning = () => new MigpoolError('CHECK_FAILED', `job ${id} is ${rec?.state ?? found.state}, not running: only a running job can be preempted`);
      if (!rec) return notRunning();
      if (this.specs.get(id)?.preemptible !== true) return new MigpoolError('CHECK_FAILED', `job ${id} may not be moved: its spec does not say preemptible: true`);
      const stopping = rec.cancelRequested || this.cancelsReceived.has(id) || rec.reason === 'preempting';
      const requeued = rec.state === 'queued' && rec.reason?.startsWith('preempted during') === true;
      const restarted = (rec.state === 'running' || rec.state === 'starting') && rec.startedAt !== null && rec.startedAt >= receivedAt;
      if (stopping || requeued || restarted) return this.withStatus(rec);
      if (rec.state !== 'running') return notRunning();
      const marked = await this.update(rec, { reason: 'preempting' });
      await this.event({ type: 'job-preempting', jobId: id, data: { attempt: rec.attempt, preemptions: rec.preemptions ?? 0, by: 'operator' } });
      await this.o.executor.cancel(id);
      return this.withStatus(marked);
    });
    if (answer instanceof MigpoolError) throw answer;
    return answer;
  }

  async readLog(id: string, stream: 'stdout' | 'stderr', offset: number, limit = 65536): Promise<LogChunk | null> {
    const rec = await this.getJob(id);
    if (!rec) return null;
    const final = rec.state === 'succeeded' || rec.state === 'failed' || rec.state === 'cancelled';
    if (rec.attempt === 0) return { text: '', nextOffset: 0, done: final };
    const dir = rec.process?.dir ?? this.attemptDir(id, rec.attempt);
    const path = rec.process ? this.o.executor.logPaths(rec.process)[stream] : join(dir, `${stream}.log`);
    const chunk = await readLogChunk(path, offset, limit);
    return { ...chunk, done: final && chunk.nextOffset - offset < limit };
  }

  gpus(): Promise<GpuSnapshot[]> {
    const occupants = this.occupants();
    return Promise.resolve(
      this.gpusFound.map((g) => {
        const mig = g.current.migMode.current === 'enabled';
        return {
          index: g.index,
          name: g.name,
          uuid: g.uuid,
          migEnabled: mig,
          slices: g.model.computeSlices,
          instances: mig
            ? g.current.instances.map((i) => ({
                profile: i.profile.name,
                start: i.start,
                size: i.size,
                uuid: g.ciUuids.get(i.start) ?? null,
                job: occupants.instances.get(`${g.index}|${i.start}`) ?? null,
                gpuInstanceId: g.giIds.get(i.start) ?? null,
                foreignPids: this.foreign.get(`${g.index}|${i.start}`) ?? [],
              }))
            : [],
          wholeGpuJobs: occupants.whole.get(g.index) ?? [],
          foreignPids: mig ? [] : (this.foreign.get(g.index) ?? []),
          reconfiguring: this.reconfiguring.has(g.index),
          repartitionFailure: this.repartitionFailureOf(g.index),
          unreachable: this.lostGpus.get(g.index) ?? null,
        };
      }),
    );
  }

  /**
   * How many entries the service keeps in memory per job and per listener: what must fall back to
   * the open jobs' own once the others have ended (a long-running service holds nothing of a job
   * that ended). `open`: the open jobs; every other figure beside it is bounded by it (`progress`,
   * `specs`, ...), by the live event streams (`subscribers`), or by a cap (`endedDependencies`,
   * at most 10,000); `executor`: the attempts the executor still holds (0 for one that does not say).
   * For tests and the leak soak (bench/leak-soak.ts).
   */
  retained(): Record<string, number> {
    return {
      open: this.active.size,
      specs: this.specs.size,
      pastRuns: this.pastRuns.size,
      reportedSpecs: this.reported.size,
      oomMoves: this.oomMoves.size,
      cancelsReceived: this.cancelsReceived.size,
      exitsSeen: this.exitsSeen.size,
      unrecorded: this.unrecorded.size,
      refusalsLogged: this.refusalsLogged.size,
      endedDependencies: this.ended.size,
      progress: this.progress.size,
      subscribers: this.listeners.size,
      executor: this.o.executor.retained?.() ?? 0,
    };
  }

  subscribe(listener: (event: EventRecord) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  events(afterSeq: number, limit?: number): Promise<EventRecord[]> {
    return this.o.store.listEvents(afterSeq, limit);
  }

  observe(observer: ServiceObserver): () => void {
    return this.observers.add(observer);
  }

  liveJobs(): LiveJob[] {
    return [...this.active.values()].map((r) => ({ ...this.observed(r), state: r.state as LiveJob['state'], placement: r.placement }));
  }

  userShares(): ReadonlyMap<string, UserShare> {
    return this.users ?? new Map();
  }

  /** A job as observers see it: its owner from the policy's view of it (JobSpec.user). */
  private observed(r: JobRecord): ObservedJob {
    return { id: r.id, priority: r.spec.priority, user: this.specs.get(r.id)?.user ?? DEFAULT_USER };
  }

  async stats(): Promise<ServiceStats> {
    const slices = new Map<string, number>();
    for (const g of await this.gpus()) {
      for (const i of g.instances) {
        const key = `${i.profile}|${i.job === null ? 'idle' : 'busy'}`;
        slices.set(key, (slices.get(key) ?? 0) + 1);
      }
    }
    return {
      policy: this.o.policy.name,
      startedAt: this.startedAt,
      jobsByState: await this.o.store.countJobs(),
      slices: [...slices].map(([k, count]) => {
        const [profile, state] = k.split('|') as [string, 'busy' | 'idle'];
        return { profile, state, count };
      }),
      reconfigurations: this.reconfigurations,
      reconfigurationsFailed: this.reconfigurationsFailed,
      passMs: [...this.passMs],
      queueWaitSeconds: [...this.waits],
      timeline: [...this.timeline],
      multiplex: this.mux.stats(),
    };
  }

  // ---- the loop

  /** Asks for a scheduling pass (coalesced: at most one waits behind the running one). */
  schedule(): void {
    if (this.passQueued || this.stopped || this.o.hold === true) return;
    this.passQueued = true;
    void this.locked(async () => {
      this.passQueued = false;
      // Asked for before a stop, run after it: stop() waits for what is in flight, not for more passes.
      if (this.stopped) return;
      await this.pass();
    });
  }

  /** One scheduling pass: the policy decides until it has nothing more to do (at most 8 rounds). */
  private async pass(): Promise<void> {
    const t0 = performance.now();
    // Ends not yet written (the store failed, e.g. a full disk): settle them first, so that a job
    // that ended never stays running, nor its slice held.
    for (const r of [...this.exitsSeen.values()]) {
      try {
        await this.settle(r);
        if (this.unrecorded.delete(r.jobId)) this.o.log?.(`job ${r.jobId}: its end is recorded`);
      } catch (e) {
        // Said once per job and cause: a disk that stays full would otherwise log a line every pass (2 s).
        const why = e instanceof Error ? (e.message.split('\n')[0] ?? '') : String(e);
        if (this.unrecorded.get(r.jobId) !== why) this.o.log?.(`job ${r.jobId}: its end could not be recorded yet (${why}); retrying at every pass`);
        this.unrecorded.set(r.jobId, why);
        return;
      }
    }
    this.takeGpuRead();
    try {
      this.users = await this.o.users?.();
    } catch (e) {
      this.o.log?.(`users could not be read (${e instanceof Error ? e.message : String(e)}); keeping the last ones`);
    }
    await this.failDoomed();
    await this.completeInstances();
    // Processes migpool did not start are read once more before the pass's first start or re-partition.
    let rechecked = false;
    for (let round = 0; round < 8 && !this.stopped; round++) {
      // Between rounds, requests and signals are served (see turn); the lock keeps the pass one.
      if (round > 0) await turn();
      // Recorded rounds keep the view the policy saw exactly (histories read once).
      const view = this.o.onRound ? frozenView(this.view()) : this.view();
      let decisions: Decision[];
      try {
        decisions = this.o.policy.decide(view, this.ctx);
      } catch (e) {
        this.o.log?.(`policy ${this.o.policy.name} failed: ${e instanceof Error ? e.message : String(e)}`);
        break;
      }
      if (decisions.length === 0) {
        this.o.onRound?.({ view, decisions, checks: [] });
        break;
      }
      let deferred: ReadonlySet<Decision> = new Set();
      if (!rechecked && decisions.some((d) => d.kind !== 'preempt')) {
        rechecked = true;
        deferred = await this.recheckForeign(decisions);
      }
      let acted = 0;
      const checks: { view: ClusterView; problem: string | null }[] = [];
      /** Jobs this pass asked to preempt and the service did not stop. */
      const refused = new Set<string>();
      // What a look-up over a rebuilt view's queue answers, without rebuilding it per decision.
      const roundQueue = new Map(view.queue.map((q) => [q.id, q]));
      const stillQueued: CheckLookup = { queued: (id) => (this.active.get(id)?.state === 'queued' ? roundQueue.get(id) : undefined) };
      for (const d of decisions) {
        // The one decision check, against the cluster as it is now (earlier decisions applied):
        // a decision that fails it is a policy bug, logged and skipped; the service goes on.
        const now = this.o.onRound ? frozenView(this.view(view.queue)) : this.view(view.queue);
        const problem = checkDecision(now, d, stillQueued);
        checks.push({ view: now, problem });
        // A process appeared where it would act: recheckForeign logged it; the next pass decides afresh.
        if (deferred.has(d)) continue;
        if (problem !== null) {
          // Acting on what a preempted or cancelled job still holds while it stops (the simulator
          // frees it at once): not a policy bug; a later pass acts once it has stopped.
          if (this.waitsForStops(d, view.queue, stillQueued)) continue;
          // Acting on what a job holds whose preemption the service refused in this pass (its
          // minimum run, its limit, a failing GPU; logged as the refusal): the service's rule, not
          // a policy bug; the next pass decides afresh.
          if (refused.size > 0 && d.kind !== 'preempt' && checkDecision(this.view(view.queue, refused), d, stillQueued) === null) continue;
          // Once per distinct problem: a policy that repeats a decision every pass does not flood the log.
          if (!this.skipped.has(problem)) {
            if (this.skipped.size >= RECENT) this.skipped.clear();
            this.skipped.add(problem);
            this.o.log?.(`policy ${this.o.policy.name}: skipped an invalid decision: ${problem}`);
          }
          continue;
        }
        // A stop ends the pass between decisions (each one applied is whole); the next start decides afresh.
        if (this.stopped) break;
        try {
          if (await this.apply(d)) {
            acted++;
            // Each start spawns a process (milliseconds each under a large heap): requests are served between them.
            await turn();
          } else if (d.kind === 'preempt') refused.add(d.job);
        } catch (e) {
          this.o.log?.(`decision ${JSON.stringify(d)} failed: ${e instanceof Error ? e.message : String(e)}`);
        }
      }
      this.o.onRound?.({ view, decisions, checks });
      if (acted === 0) break;
    }
    this.explainQueue();
    await this.releaseMps();
    const ms = performance.now() - t0;
    this.passMs.push(ms);
    if (this.passMs.length > RECENT) this.passMs.shift();
    this.observers.each((o) => o.schedulingPass?.(ms / 1000));
  }

  /**
   * GPU instances left without a compute instance (a re-partition stopped between creating the two:
   * the service killed, or the second create failed) hold no device a job could use, yet policies
   * see them as slices, and a layout that keeps them asks for no change. Each pass gives them their
   * compute instance, through the re-partition path (journal, events, back-off), layout unchanged.
   */
  private async completeInstances(): Promise<void> {
    for (const [id, g] of this.gpusFound.entries()) {
      if (this.reconfiguring.has(g.index) || g.current.instances.every((i) => g.ciUuids.has(i.start))) continue;
      // After a failure the GPU waits out its back-off (said once, by repartitionFailed).
      if ((this.repartitionFailures.get(g.index)?.until ?? 0) > this.o.now()) continue;
      this.o.log?.(`GPU ${g.index}: GPU instances without a compute instance (${g.current.instances.filter((i) => !g.ciUuids.has(i.start)).map((i) => `${i.profile.name}@${i.start}`).join(', ')}): creating them`);
      await this.apply({ kind: 'repartition', gpu: id, layout: g.current.instances.map((i) => ({ profile: i.profile.name, start: i.start })) });
    }
  }

  /** Reads the ended jobs queued ones depend on, and fails the queued jobs whose dependency can no longer succeed. */
  private async failDoomed(): Promise<void> {
    if (this.ended.size > RECENT * 10) this.ended.clear();
    for (const id of dependenciesToLookUp(this.active, this.ended)) {
      const r = await this.o.store.getJob(id);
      this.ended.set(id, r ? { state: r.state, reason: r.reason } : null);
    }
    for (const [id, reason] of gateQueue(this.active, this.ended).doomed) {
      const rec = this.active.get(id);
      if (!rec || rec.state !== 'queued') continue;
      const done = await this.update(rec, { state: 'failed', endedAt: this.o.now(), reason });
      await this.event({ type: 'job-finished', jobId: id, data: { state: 'failed', reason } });
      this.finish(done);
    }
  }

  /**
   * Whether a decision the check refused would pass once the jobs now stopping (preempted or
   * cancelled, within their grace period) have gone: it only waits for them.
   */
  private waitsForStops(d: Decision, roundQueue: readonly JobSpec[], lookup: CheckLookup): boolean {
    if (d.kind === 'preempt') return false;
    let stopping: Set<string> | null = null;
    for (const r of this.active.placedRecords()) {
      if (r.reason === 'preempting' || r.cancelRequested || this.cancelsReceived.has(r.id)) (stopping ??= new Set()).add(r.id);
    }
    return stopping !== null && checkDecision(this.view(roundQueue, stopping), d, lookup) === null;
  }

  /**
   * The cluster as the policy sees it (positions in `gpus` are the view's GPU ids). Given the
   * queue of a view built earlier in the same round (`roundQueue`), the queue is that one less the
   * jobs that left it since (what a rebuild gives: the gate changes only between rounds), so that
   * checking each of a round's thousands of decisions does not rebuild a queue of thousands.
   */
  private view(roundQueue?: readonly JobSpec[], without?: ReadonlySet<string>): ClusterView {
    const now = this.o.now() / 1000;
    const occupants = this.occupants(without);
    const gpus: GpuView[] = this.gpusFound.map((g, id) => {
      const whole = occupants.whole.get(g.index) ?? [];
      const sharing = whole.length > 0 ? (occupants.sharing.get(g.index) ?? 'exclusive') : 'exclusive';
      return {
        id,
        model: g.model,
        migEnabled: g.current.migMode.current === 'enabled',
        instances: g.current.instances.map((i) => {
          const key = `${g.index}|${i.start}`;
          const foreignPids = this.foreign.size > 0 ? this.foreign.get(key) : undefined;
          return { gpu: id, profile: i.profile, start: i.start, size: i.size, job: occupants.instances.get(key) ?? null, ...(foreignPids ? { foreignPids } : {}) };
        }),
        wholeGpuJobs: whole,
        sharing,
        // A re-partition in progress keeps the GPU unavailable, as in the simulator; a GPU that
        // stopped answering is unavailable at least until the next read of the GPUs.
        busyUntil: this.lostGpus.has(g.index) ? now + Math.max(this.o.gpuCheckMs, this.o.tickMs) / 1000 : this.reconfiguring.has(g.index) ? now + this.o.reconfigureSeconds : null,
        ...(this.foreign.has(g.index) ? { foreignPids: this.foreign.get(g.index) } : {}),
      };
    });
    const queue: JobSpec[] = [];
    const running = new Map<string, RunningJobView>();
    const position = new Map(this.gpusFound.map((g, id) => [g.index, id]));
    const byIndex = new Map(this.gpusFound.map((g) => [g.index, g]));
    if (roundQueue) {
      for (const j of roundQueue) if (this.active.get(j.id)?.state === 'queued') queue.push(j);
    } else {
      // Dependencies and array limits hold jobs back before the policy sees them (recomputed per round).
      const gate = (this.gate = gateQueue(this.active, this.ended));
      for (const r of this.active.values()) {
        if (r.state === 'queued' && !gate.held.has(r.id) && !gate.doomed.has(r.id) && !this.cancelsReceived.has(r.id)) queue.push(this.specs.get(r.id)!);
      }
      queue.sort((a, b) => a.arrival - b.arrival || Number(a.id) - Number(b.id));
    }
    for (const r of this.active.placedRecords()) {
      if (without?.has(r.id)) continue;
      const spec = this.specs.get(r.id)!;
      const p = r.placement as JobPlacement;
      const placement: RunningJobView['placement'] = p.kind === 'instance' ? { kind: 'instance', gpu: position.get(p.gpu) ?? -1, start: p.start } : { kind: 'gpus', gpus: p.gpus.map((x) => position.get(x) ?? -1) };
      const started = (r.startedAt ?? this.o.now()) / 1000;
      const speed = this.speedOf(spec, p, byIndex, occupants);
      const done = speed * Math.max(0, now - started);
      // What the job reports beats the model's guess: a job that says how far it is (migpool_total
      // in its progress lines) tells its length, as `--info progress` does in the simulator: the
      // work done so far over the fraction done. Only once it has run a while (a few lines in).
      const fraction = this.progressOf(r.id).fraction;
      const told = fraction !== null && fraction >= MIN_REPORTED_FRACTION && fraction < 1 && done > 0 ? done / fraction : null;
      running.set(r.id, { spec: told === null ? spec : this.withEstimate(spec, told), placement, started, done, speed });
    }
    const history = (id: string): JobHistory => {
      const past = this.pastRuns.get(id);
      const r = this.active.get(id);
      let current = 0;
      if (r && (r.state === 'running' || r.state === 'starting') && r.startedAt !== null && r.placement) {
        current = Math.max(0, now - r.startedAt / 1000) * (r.placement.kind === 'gpus' ? r.placement.gpus.length : 1);
      }
      return past || current > 0 ? { attainedGpuSeconds: (past?.attained ?? 0) + current, preemptions: past?.preemptions ?? 0 } : NO_HISTORY;
    };
    return { now, gpus, queue, running, history, ...(this.users ? { users: this.users } : {}) };
  }

  /** The job as the policy sees it with the length its progress reports (one object per job and value). */
  private withEstimate(spec: JobSpec, estimate: number): JobSpec {
    const cached = this.reported.get(spec.id);
    if (cached && cached.estimate === estimate) return cached;
    const told = { ...spec, estimate };
    this.reported.set(spec.id, told);
    return told;
  }

  /**
   * A job that ran out of GPU memory on a MIG slice (CUDA's message in the tail of its stderr) is
   * requeued for a larger one: its memory need, and its workload's for the jobs that come after
   * (its owner's only, everyone's when an admin's or of no user: see learning.ts), is raised just above the slice's (perf/refit.ts raiseMemoryAfterOom), so the policy places it
   * where it fits. Not charged as a failed attempt. A job bound to exactly that profile, or on a
   * whole GPU already, fails as usual. True when it was requeued.
   */
  private async movedUpAfterOom(rec: JobRecord): Promise<boolean> {
    const p = rec.placement;
    const spec = this.specs.get(rec.id);
    if (!p || p.kind !== 'instance' || !spec || spec.exactProfile === true || rec.process === null) return false;
    if (!OUT_OF_MEMORY.test(tailOf(this.o.executor.logPaths(rec.process).stderr))) return false;
    const g = this.gpusFound.find((x) => x.index === p.gpu);
    const have = g?.model.giProfiles.find((x) => x.name === p.profile)?.memoryGiB ?? null;
    if (!g || have === null) return false;
    const raised = raiseMemoryAfterOom({ ...spec.workload, memoryGiB: spec.memoryGiB ?? spec.workload.memoryGiB }, have);
    const need = raised.memoryGiB as number;
    // Nothing here holds more: it fails as usual.
    if (!this.gpusFound.some((x) => x.model.memoryGB >= need)) return false;
    // Learned as an observation of its owner (shared when an admin's): their open jobs of the workload need more from now on.
    await this.learning.outOfMemory(rec, g.model.name, this.o.now());
    this.specs.set(rec.id, { ...spec, memoryGiB: need });
    if (rec.spec.workload !== undefined) this.refitJobs(new Set([rec.spec.workload]));
    this.oomMoves.set(rec.id, (this.oomMoves.get(rec.id) ?? 0) + 1);
    const reason = `out of GPU memory on ${p.profile} (${have} GiB) in attempt ${rec.attempt}; requeued for a slice with more than ${have} GiB`;
    const next = await this.update(rec, { state: 'queued', placement: null, process: null, exitCode: null, reason, endedAt: null });
    this.o.log?.(`job ${rec.id}: ${reason}`);
    await this.event({ type: 'job-requeued', jobId: rec.id, data: { attempt: rec.attempt, reason: next.reason, outOfMemory: { profile: p.profile, memoryGiB: have, needGiB: need } } });
    return true;
  }

  /** Folds an ending attempt into the job's history (attained GPU-seconds, preemptions). */
  private recordRun(rec: JobRecord, preempted: boolean): void {
    const past = this.pastRuns.get(rec.id) ?? { attained: 0, preemptions: 0 };
    if (rec.startedAt !== null && rec.placement) past.attained += (Math.max(0, this.o.now() - rec.startedAt) / 1000) * (rec.placement.kind === 'gpus' ? rec.placement.gpus.length : 1);
    if (preempted) past.preemptions++;
    this.pastRuns.set(rec.id, past);
  }

  /** A running job's speed from the performance model: its instance's, or the slowest of its shared GPUs'. */
  private speedOf(spec: JobSpec, p: JobPlacement, byIndex: ReadonlyMap<number, GpuEntry>, occupants: ReturnType<PoolServiceImpl['occupants']>): number {
    try {
      if (p.kind === 'instance') {
        const g = byIndex.get(p.gpu);
        return g ? this.speeds.relative(spec.workload, g.model, 'mig', p.profile) : 1;
      }
      let slowest = 1;
      for (const index of p.gpus) {
        const g = byIndex.get(index);
        if (!g) continue;
        slowest = Math.min(slowest, sharedGpuSpeed(this.speeds, spec.workload, g.model, p.sharing, (occupants.whole.get(index) ?? []).length));
      }
      return slowest;
    } catch {
      return 1;
    }
  }

  /** Applies one decision; false when it no longer holds (e.g. the job was cancelled meanwhile). */
  private async apply(d: Decision): Promise<boolean> {
    switch (d.kind) {
      case 'repartition': {
        const g = this.gpusFound[d.gpu];
        if (!g) throw new MigpoolError('RUNTIME', `policy named GPU ${d.gpu}, which the view does not have`);
        // Occupancy now, not the round's view: a preemption earlier in this round may have freed it.
        const occupants = this.occupants();
        const busy = new Set(g.current.instances.filter((i) => occupants.instances.has(`${g.index}|${i.start}`)).map((i) => i.start));
        if ((occupants.whole.get(g.index) ?? []).length > 0) throw new MigpoolError('RUNTIME', `policy re-partitions GPU ${g.index} under its whole-GPU jobs`);
        // After failures, the GPU is left alone until its back-off ends.
        if ((this.repartitionFailures.get(g.index)?.until ?? 0) > this.o.now()) return false;
        // A job still on a slice the layout drops (one being preempted, or a refused preemption): wait, it is no failure.
        if (g.current.instances.some((i) => busy.has(i.start) && !(d.layout ?? []).some((x) => x.start === i.start && x.profile === i.profile.name))) return false;
        // Instances a job holds count as busy even before its processes show up in nvidia-smi.
        let planned = planLayout(g.current, d.layout, busy);
        if (!planned.ok) {
          // The processes in g.current are as last read (at the start, or after this GPU's last
          // re-partition): ones that have ended since would refuse every later try. Read it again.
          await this.refreshGpus(g.index);
          planned = planLayout(this.gpusFound.find((x) => x.index === g.index)?.current ?? g.current, d.layout, busy);
        }
        if (!planned.ok) {
          await this.repartitionFailed(g.index, new MigpoolError('RUNTIME', `GPU ${g.index}: refusing to re-partition: ${planned.reason}`));
          return false;
        }
        await this.event({ type: 'gpu-reconfiguring', jobId: null, data: { gpu: g.index, layout: d.layout } });
        this.reconfiguring.add(g.index);
        try {
          // The same path as `migpool apply`: the partition planner's operations, run through the
          // journal (a crash part way leaves it behind; the next re-partition plans afresh).
          const journal = new JournalFile(join(this.o.dataDir, 'journal', `gpu-${g.index}.json`));
          const r = await executePlans(this.o.gpu, [planned.plan], `policy ${this.o.policy.name}: GPU ${g.index} layout ${d.layout === null ? 'MIG off' : d.layout.map((x) => `${x.profile}@${x.start}`).join('+')}`, journal, {
            inUseAdvice: 'the service leaves this GPU alone and tries again after a back-off (processes it did not start hold it: end them, or detach them with `migpool sim detach` on a simulated machine)',
            failureAdvice: 'the service plans this GPU afresh after a back-off',
          });
          this.reconfigurations++;
          this.repartitionFailures.delete(g.index);
          await this.event({ type: 'gpu-reconfigured', jobId: null, data: { gpu: g.index, layout: d.layout, created: planned.plan.operations.filter((o) => o.kind === 'create-gi').length, destroyed: planned.plan.destroyedGpuInstances, operations: r.done } });
        } catch (e) {
          await this.repartitionFailed(g.index, e);
          return false;
        } finally {
          this.reconfiguring.delete(g.index);
          await this.refreshGpus(g.index);
        }
        return true;
      }
      case 'start-on-instance': {
        const rec = this.active.get(d.job);
        const g = this.gpusFound[d.gpu];
        if (!rec || rec.state !== 'queued' || this.cancelsReceived.has(rec.id) || !g) return false;
        const inst = g.current.instances.find((i) => i.start === d.start);
        const uuid = g.ciUuids.get(d.start);
        if (!inst) throw new MigpoolError('RUNTIME', `GPU ${g.index} has no instance at ${d.start} for job ${d.job}`);
        // No compute instance yet (completeInstances creates it once the GPU's back-off allows): no device to give.
        if (!uuid) return false;
        // Still held (a preempted job stops within its grace period): the next pass places the job.
        if (this.occupants().instances.has(`${g.index}|${d.start}`)) return false;
        const spec = this.specs.get(rec.id);
        if (spec?.exactProfile === true && spec.profile !== inst.profile.name) throw new MigpoolError('RUNTIME', `policy starts job ${rec.id}, which asks for exactly ${spec.profile}, on a ${inst.profile.name} slice; refused`);
        await this.launch(rec, { kind: 'instance', gpu: g.index, start: d.start, profile: inst.profile.name, devices: [uuid] });
        return true;
      }
      case 'start-on-gpus': {
        const rec = this.active.get(d.job);
        if (!rec || rec.state !== 'queued' || this.cancelsReceived.has(rec.id)) return false;
        const gs = d.gpus.map((id) => this.gpusFound[id]);
        if (gs.some((g) => !g)) throw new MigpoolError('RUNTIME', `policy named GPUs ${d.gpus.join(',')}, which the view does not have`);
        const spec = this.specs.get(rec.id);
        if (spec?.exactProfile === true) throw new MigpoolError('RUNTIME', `policy starts job ${rec.id}, which asks for exactly a ${spec.profile} slice, on whole GPUs; refused`);
        // Still held (a preempted job stops within its grace period): the next pass places the job.
        const occ = this.occupants();
        const held = (g: GpuEntry) =>
          g.current.instances.some((i) => occ.instances.has(`${g.index}|${i.start}`)) ||
          ((occ.whole.get(g.index) ?? []).length > 0 && (d.sharing === 'exclusive' || occ.sharing.get(g.index) !== d.sharing));
        if (gs.some((g) => held(g!))) return false;
        // A background job stopped by MPS back-offs waits for a GPU without a foreground job.
        if (d.sharing === 'mps' && !this.mux.mayJoin(rec.id, gs.flatMap((g) => (occ.whole.get(g!.index) ?? []).map((id) => this.active.get(id)?.spec.priority ?? 'foreground')))) return false;
        await this.launch(rec, { kind: 'gpus', gpus: gs.map((g) => g!.index), sharing: d.sharing, devices: gs.map((g) => g!.uuid) });
        return true;
      }
      case 'preempt': {
        const rec = this.active.get(d.job);
        if (!rec || rec.state !== 'running' || rec.cancelRequested || rec.reason === 'preempting') return false;
        const seen = this.exitsSeen.get(rec.id);
        if (seen && seen.attempt === rec.attempt) {
          // It ended on its own before the decision came: settle that end (never wait for another).
          await this.settle(seen);
          return true;
        }
        const gpuBackoff = rec.placement ? this.backoffOf(rec.placement) : null;
        const refusal = preemptRefusal(rec, this.specs.get(rec.id)?.preemptible ?? false, this.o.now(), gpuBackoff, this.o.minRunBeforePreemptSeconds);
        if (refusal !== null) {
          // Once per job and kind of reason: the seconds in 'it has run 3 s' change at every pass.
          const kind = refusal.replace(/\d+/g, 'N');
          if (this.refusalsLogged.get(rec.id) !== kind) {
            this.refusalsLogged.set(rec.id, kind);
            this.o.log?.(`job ${rec.id}: policy ${this.o.policy.name} asked to preempt it; refused: ${refusal}`);
          }
          return false;
        }
        // No waiting here (under the service lock): the job gets its grace period to checkpoint,
        // and its end, settled as any other, requeues it and asks for a new pass.
        await this.update(rec, { reason: 'preempting' });
        await this.event({ type: 'job-preempting', jobId: rec.id, data: { attempt: rec.attempt, preemptions: rec.preemptions ?? 0 } });
        await this.o.executor.cancel(rec.id);
        return true;
      }
    }
  }

  /** Starts an attempt: written as `starting` first, then launched, then `running` with its process. */
  private async launch(rec: JobRecord, placement: JobPlacement): Promise<void> {
    const attempt = rec.attempt + 1;
    const dir = this.attemptDir(rec.id, attempt);
    const checkpoint = this.checkpointDir(rec.id);
    const neighbours = placement.kind === 'gpus' ? [...new Set(placement.gpus.flatMap((g) => this.occupants().whole.get(g) ?? []))] : [];
    const mps = this.mux.infoFor(rec.id, rec.spec.priority, placement, neighbours);
    if (mps) placement = { ...placement, mps } as JobPlacement;
    const starting = await this.update(rec, { state: 'starting', placement, attempt, startedAt: this.o.now(), endedAt: null, process: null, exitCode: null, reason: null });
    await this.event({ type: 'job-starting', jobId: rec.id, data: { attempt, placement } });
    try {
      // jobs/, the job's folder and its checkpoint folder private (job-folders.ts); run-as.ts opens the path to a mapped account.
      mkdirSync(checkpoint, { recursive: true, mode: JOB_FOLDER_MODE });
      // The owner's Unix account, when the service runs as root and the owner is mapped to one.
      const who = await attemptIdentity(this.o.store, rec.owner, { dataDir: this.o.dataDir, attemptDir: dir, checkpointDir: checkpoint, workdir: rec.spec.workdir }, this.runAsOptions());
      const mpsEnv = mps ? await this.mux.clientEnv(placement, mps) : {};
      // A cancel that came while the attempt was prepared: it never runs, and no attempt is charged.
      if (this.cancelsReceived.has(rec.id)) {
        const done = await this.update(starting, { state: 'cancelled', placement: null, attempt: rec.attempt, startedAt: rec.startedAt, endedAt: this.o.now(), reason: 'cancelled before it started' });
        await this.event({ type: 'job-finished', jobId: rec.id, data: { state: 'cancelled', reason: done.reason } });
        this.finish(done);
        return;
      }
      const ref = await this.o.executor.launch({
        jobId: rec.id,
        attempt,
        command: rec.spec.command,
        workdir: who.workdir,
        ...(who.runAs ? { runAs: who.runAs } : {}),
        // MIGPOOL_DEVICE_PROFILE: what the attempt got (a MIG profile, or `whole`), for logs and tests.
        env: { ...this.o.jobEnv, ...who.env, ...rec.spec.env, MIGPOOL_CHECKPOINT_DIR: checkpoint, MIGPOOL_DEVICE_PROFILE: placement.kind === 'instance' ? placement.profile : 'whole', ...mpsEnv },
        devices: placement.devices,
        maxRuntimeSeconds: rec.spec.maxRuntime ?? null,
        graceSeconds: rec.spec.killGracePeriod ?? DEFAULT_KILL_GRACE_SECONDS,
        dir,
        gres: placement.kind === 'instance' ? { type: placement.profile, count: 1 } : { type: null, count: placement.gpus.length },
      });
      const running = await this.update(starting, { state: 'running', process: ref });
      const wait = (running.startedAt! - running.submittedAt) / 1000;
      this.waits.push(wait);
      if (this.waits.length > RECENT) this.waits.shift();
      this.observers.each((o) => o.jobStarted?.(this.observed(running), wait, attempt));
      await this.event({ type: 'job-started', jobId: rec.id, data: { attempt, placement, waitSeconds: wait, pid: ref.pid } });
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e);
      await this.endAttempt(starting, { exitCode: null, reason: `could not start: ${message}`, failure: true });
    }
  }

  /** An attempt ended: success, cancel, preemption (requeue), or failure (retry or fail). */
  private async settle(r: ExitReport): Promise<void> {
    const done = () => {
      if (this.exitsSeen.get(r.jobId) === r) this.exitsSeen.delete(r.jobId);
    };
    const rec = this.active.get(r.jobId);
    if (!rec || rec.attempt !== r.attempt || (rec.state !== 'running' && rec.state !== 'starting')) return done();
    // Forgotten only once written: when the store cannot take it (a full disk), every pass tries again.
    await this.endAttempt(rec, {
      exitCode: r.exitCode,
      reason:
        r.reason === 'timeout'
          ? 'killed after its max runtime'
          : r.reason === 'lost'
            ? 'lost: the process is gone and left no exit status'
            : r.reason === 'cancelled'
              ? 'stopped'
              : r.exitCode === 0
                ? null
                : r.message !== undefined
                  ? `could not start: ${r.message}`
                  : `exit status ${r.exitCode ?? `signal ${r.signal ?? '?'}`}`,
      failure: r.reason !== 'exited' || r.exitCode !== 0,
      stopped: r.reason === 'cancelled',
    });
    done();
  }

  private async endAttempt(rec: JobRecord, how: { exitCode: number | null; reason: string | null; failure: boolean; stopped?: boolean }): Promise<void> {
    this.recordRun(rec, how.stopped === true && rec.reason === 'preempting');
    await this.learning.ended(rec);
    if (how.failure && !how.stopped && !rec.cancelRequested && (await this.movedUpAfterOom(rec))) return;
    const now = this.o.now();
    const base: JobPatch = { exitCode: how.exitCode, endedAt: now, process: rec.process, placement: rec.placement };
    let patch: JobPatch;
    if (rec.cancelRequested) patch = { ...base, state: 'cancelled', reason: 'cancelled while running' };
    else if (how.stopped && rec.reason === 'preempting') patch = { state: 'queued', placement: null, process: null, reason: `preempted during attempt ${rec.attempt}; requeued`, endedAt: null, preemptions: (rec.preemptions ?? 0) + 1 };
    else if (!how.failure) patch = { ...base, state: 'succeeded', reason: null };
    // Retries count failures only: attempts ended by a preemption are not charged.
    else if (rec.attempt - (rec.preemptions ?? 0) - (this.oomMoves.get(rec.id) ?? 0) <= rec.spec.retries) patch = { state: 'queued', placement: null, process: null, exitCode: how.exitCode, reason: `attempt ${rec.attempt} failed (${how.reason}); retrying`, endedAt: null };
    else patch = { ...base, state: 'failed', reason: how.reason };
    const next = await this.update(rec, patch);
    if (next.state === 'queued') await this.event({ type: 'job-requeued', jobId: rec.id, data: { attempt: rec.attempt, reason: next.reason } });
    else {
      await this.event({ type: 'job-finished', jobId: rec.id, data: { state: next.state, exitCode: next.exitCode, reason: next.reason, attempt: rec.attempt } });
      this.finish(next);
    }
  }

  /** At start: adopt attempts still running, settle those that ended while the service was down. */
  private async recover(open: readonly JobRecord[]): Promise<void> {
    for (const r of open) {
      const rec = this.active.get(r.id);
      if (!rec) continue;
      if (rec.state === 'running' && rec.process) {
        const found = await this.o.executor.adopt(rec.id, rec.attempt, rec.process);
        if (found === 'running') {
          this.o.log?.(`job ${rec.id}: re-adopted attempt ${rec.attempt} (pid ${rec.process.pid})`);
          if (rec.placement?.kind === 'gpus' && rec.placement.sharing === 'mps') {
            const how = await this.mux.resume(rec.placement.devices);
            this.o.log?.(`job ${rec.id}: MPS daemon for ${rec.placement.devices.join(',')} ${how}`);
          }
          await this.resendStop(rec);
        } else await this.settle(found);
      } else if (rec.state === 'starting' || rec.state === 'running') {
        // Stopped between writing `starting` and recording the process. The runner records itself
        // in the attempt folder before it starts the command: found there, or found alive by its
        // command line before it could, the attempt is adopted (never launched twice); an exit
        // status says how it ended; no trace: it never ran.
        const dir = this.attemptDir(rec.id, rec.attempt);
        const ref = readProcessRef(dir) ?? findRunnerProcess(dir) ?? (readExitFile(dir) ? { pid: 0, startTicks: '', dir } : null);
        const found = ref ? await this.o.executor.adopt(rec.id, rec.attempt, ref) : null;
        if (found === 'running') {
          await this.update(rec, { state: 'running', process: ref });
          await this.resendStop(rec);
        } else if (found) await this.settle(found);
        else await this.update(rec, { state: 'queued', placement: null, attempt: rec.attempt - 1, startedAt: null, reason: 'the service stopped before starting it; requeued' });
      }
    }
  }

  /**
   * A re-adopted attempt that was being stopped (a cancel, or a preemption: both written before the
   * stop is sent) is stopped again: the service may have died between the two, and the job would
   * run on to its end, a preempted one refusing any further preemption.
   */
  private async resendStop(rec: JobRecord): Promise<void> {
    if (rec.cancelRequested || rec.reason === 'preempting') await this.o.executor.cancel(rec.id);
  }

  // ---- helpers

  /** Runs `fn` after everything queued before it (passes, exits and cancels never interleave). */
  private locked<T>(fn: () => Promise<T>): Promise<T> {
    // Each turn begins in a new macrotask: with a synchronous store (SQLite) a chain of exits and
    // passes would otherwise run as one stretch of microtasks, and the API and signals wait behind it.
    const next = () => turn().then(fn);
    const run = this.serial.then(next, next);
    this.serial = run.catch((e: unknown) => this.o.log?.(`internal: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`));
    return run;
  }

  /** Writes a change to the store (compare-and-set), then to memory. */
  private async update(rec: JobRecord, patch: JobPatch): Promise<JobRecord> {
    const next = await this.o.store.updateJob(rec.id, rec.version, patch);
    if (!next) throw new MigpoolError('RUNTIME', `job ${rec.id} changed in the store under the service (version ${rec.version}); is a second service using the same store?`);
    if (next.state === 'succeeded' || next.state === 'failed' || next.state === 'cancelled') this.active.delete(next.id);
    else this.active.set(next.id, next);
    return next;
  }

  private finish(rec: JobRecord): void {
    const observed = this.observed(rec);
    this.observers.each((o) => o.jobFinished?.(observed, rec.state as JobOutcome));
    this.progress.forget(rec.id);
    this.active.delete(rec.id);
    this.pastRuns.delete(rec.id);
    this.reported.delete(rec.id);
    this.oomMoves.delete(rec.id);
    this.specs.delete(rec.id);
    this.refusalsLogged.delete(rec.id);
    this.finishedAt.push(this.o.now());
    while (this.finishedAt.length > 0 && this.finishedAt[0]! < this.o.now() - THROUGHPUT_WINDOW_MS) this.finishedAt.shift();
  }

  private async event(e: Omit<NewEvent, 'time'>): Promise<void> {
    const rec = await this.o.store.appendEvent({ ...e, time: this.o.now() });
    for (const l of this.listeners) {
      try {
        l(rec);
      } catch {
        // A listener's failure (a closed HTTP stream) must not stop the service.
      }
    }
  }

  private attemptDir(id: string, attempt: number): string {
    return join(this.o.dataDir, 'jobs', id, String(attempt));
  }

  /** Where every attempt of a job keeps its checkpoints (`MIGPOOL_CHECKPOINT_DIR`): kept across attempts. */
  private checkpointDir(id: string): string {
    return join(this.o.dataDir, 'jobs', id, 'checkpoint');
  }

  /** A re-partition failed: the GPU backs off (exponentially, per GPU), an event and the counter say so. */
  private async repartitionFailed(gpu: number, e: unknown): Promise<void> {
    const error = (e instanceof Error ? e.message : String(e)).split('\n')[0]!;
    const count = failuresInARow(this.repartitionStreaks.get(gpu), this.o.now());
    const waitMs = repartitionBackoffMs(count);
    this.repartitionFailures.set(gpu, { count, until: this.o.now() + waitMs, error });
    this.repartitionStreaks.set(gpu, { count, until: this.o.now() + waitMs });
    this.reconfigurationsFailed++;
    this.o.log?.(`GPU ${gpu}: re-partition failed (${count} in a row): ${error}; next try in ${Math.round(waitMs / 1000)} s`);
    await this.event({ type: 'gpu-reconfigure-failed', jobId: null, data: { gpu, error, failures: count, retryInSeconds: waitMs / 1000 } });
  }

  private repartitionFailureOf(gpu: number): GpuSnapshot['repartitionFailure'] {
    const f = this.repartitionFailures.get(gpu);
    return f ? { failures: f.count, error: f.error, retryAt: f.until } : null;
  }

  /**
   * The GPUs left as they are after failed re-partitions, in words for pending reasons (`GPU 1 is
   * not re-partitioned for 40 s more: its last 3 tries failed (apply: GPU 1: processes 4000 run on
   * ...)`), or '' when none backs off.
   */
  private backoffText(): string {
    const now = this.o.now();
    const parts: string[] = [];
    for (const [gpu, f] of this.repartitionFailures) {
      if (f.until <= now) continue;
      const cause = f.error.split(';')[0] ?? f.error;
      parts.push(`GPU ${gpu} is not re-partitioned for ${Math.ceil((f.until - now) / 1000)} s more: its last ${f.count === 1 ? 'try' : `${f.count} tries`} failed (${cause})`);
    }
    return parts.join('; ');
  }

  /** Milliseconds until a GPU of the placement may be re-partitioned again, or null when none backs off. */
  private backoffOf(p: JobPlacement): number | null {
    const now = this.o.now();
    const left = (p.kind === 'instance' ? [p.gpu] : p.gpus).map((g) => (this.repartitionFailures.get(g)?.until ?? 0) - now).filter((ms) => ms > 0);
    return left.length > 0 ? Math.max(...left) : null;
  }

  /** Reads the GPUs: all of them (those that answer; the lost ones named beside), or only GPU `only` (by index). */
  private async readGpus(only?: number): Promise<{ entries: GpuEntry[]; lost: readonly UnreachableGpu[] }> {
    let lost: readonly UnreachableGpu[] = [];
    let gis: readonly GpuInstanceInfo[] = [];
    let cis: readonly ComputeInstanceInfo[] = [];
    const found = await readCurrentState(this.o.gpu, only, {
      onLost: (e) => {
        lost = e.lost;
      },
      // The listings the state was read from: their MIG device UUIDs and GI IDs (not listed twice).
      onInstances: (g, c) => {
        gis = g;
        cis = c;
      },
    });
    const entries = found.flatMap((f): GpuEntry[] => {
      const model = modelOfGpu(f.info);
      if (!f.current || !model) return [];
      const ciUuids = new Map<number, string>();
      const giIds = new Map<number, number>();
      for (const gi of gis.filter((x) => x.gpu === f.info.index)) {
        giIds.set(gi.start, gi.id);
        const ci = cis.find((c) => c.gpu === f.info.index && c.gpuInstanceId === gi.id);
        if (ci) ciUuids.set(gi.start, ci.uuid);
      }
      return [{ index: f.info.index, uuid: f.info.uuid, name: f.info.name, busId: f.info.busId, model, current: f.current, ciUuids, giIds }];
    });
    return { entries, lost };
  }

  /** Reads the GPUs again: all of them, or only GPU `only` (by index) after changing it. */
  private async refreshGpus(only?: number): Promise<void> {
    const { entries, lost } = await this.readGpus(only);
    for (const e of entries) this.gpuChanges.set(e.index, (this.gpuChanges.get(e.index) ?? 0) + 1);
    if (only === undefined) {
      this.gpusFound = entries;
      // At the start: the service goes on with the GPUs that answer, and says which do not.
      if (lost.length > 0) this.o.log?.(`${lostText(lost)}: the service starts without ${lost.length === 1 ? 'it' : 'them'} (${unreachableAdvice(lost)})`);
    } else for (const e of entries) this.gpusFound = this.gpusFound.map((g) => (g.index === e.index ? e : g));
  }

  /**
   * Every `gpuCheckMs`, reads every GPU again in the background (a hung nvidia-smi holds no pass
   * and no job's end): the next pass takes the answer (takeGpuRead). A failed read keeps what was
   * last read, said once per cause, and the queue's reasons say it.
   */
  private checkGpus(): void {
    if (this.stopped || this.checkingGpus !== null || this.o.now() - this.gpusCheckedAt < this.o.gpuCheckMs) return;
    const changes = new Map(this.gpuChanges);
    this.checkingGpus = this.readGpus()
      .then(
        (r) => {
          if (this.gpuReadFailure !== null) this.o.log?.('reading the GPUs works again');
          this.gpuReadFailure = null;
          this.gpuReadFailureKind = null;
          this.gpuRead = { ...r, changes };
          this.schedule();
        },
        (e: unknown) => {
          const why = firstLine(e);
          // nvidia-smi answers, and has no GPU to list ("No devices were found") or no driver to ask:
          // every GPU is out of use, not merely unread (jobs started there would fail at once).
          if (e instanceof GpuError && (e.kind === 'driver-not-loaded' || (e.kind === 'not-found' && e.operation === 'list GPUs'))) {
            this.gpuRead = { entries: [], lost: [], changes, gone: e.reason };
            this.schedule();
          }
          // Once per kind of failure: the command that fails first (of the reads run at once) varies.
          const kind = e instanceof GpuError ? e.kind : why;
          if (kind !== this.gpuReadFailureKind) this.o.log?.(`reading the GPUs failed (${why}); going on with what was last read, and trying again every ${Math.round(this.o.gpuCheckMs / 1000)} s`);
          this.gpuReadFailure = why;
          this.gpuReadFailureKind = kind;
        },
      )
      .finally(() => {
        this.checkingGpus = null;
        this.gpusCheckedAt = this.o.now();
      });
  }

  /**
   * Takes the last background read (under the lock, before the policy's view is built): a GPU that
   * no longer answers is marked lost (kept in the view, where no job starts and no re-partition
   * goes: see view), one that answers again is freed, and a GPU whose layout changed with no
   * re-partition of the service's (someone ran nvidia-smi mig or mig-parted by hand) is planned
   * from what nvidia-smi lists now, said in the log. A GPU the service re-partitioned or re-read
   * since the read began keeps its newer state.
   */
  private takeGpuRead(): void {
    const r = this.gpuRead;
    if (r === null) return;
    this.gpuRead = null;
    const fresh = new Map(r.entries.map((e) => [e.index, e]));
    const next: GpuEntry[] = [];
    for (const g of this.gpusFound) {
      const now = fresh.get(g.index);
      fresh.delete(g.index);
      if (this.reconfiguring.has(g.index) || (this.gpuChanges.get(g.index) ?? 0) !== (r.changes.get(g.index) ?? 0)) {
        next.push(g);
        continue;
      }
      if (now !== undefined && now.uuid !== g.uuid) {
        this.o.log?.(`GPU ${g.index} is now ${now.name} ${now.uuid}, not ${g.uuid}: the service uses it as listed`);
        this.lostGpus.delete(g.index);
        next.push(now);
        continue;
      }
      if (now === undefined) {
        const named = r.lost.filter((l) => l.index === g.index || (l.busId !== null && sameBusId(l.busId, g.busId)));
        const why =
          named.length > 0
            ? `${lostText(named)} (${unreachableAdvice(named)})`
            : r.gone !== undefined
              ? `GPU ${g.index} (${g.uuid}) is not listed: ${r.gone}`
              : `GPU ${g.index} (${g.uuid}) is no longer listed by nvidia-smi (check nvidia-smi -L and dmesg)`;
        if (this.lostGpus.get(g.index) !== why) {
          const jobs = this.jobsOn(g.index);
          const left = jobs.length === 1 ? `; job ${jobs[0]} ran there and is left to end (cancel it if it hangs)` : jobs.length > 1 ? `; jobs ${jobs.join(', ')} ran there and are left to end (cancel them if they hang)` : '';
          this.o.log?.(`${why}: no job starts there until it answers${left}`);
        }
        this.lostGpus.set(g.index, why);
        next.push(g);
        continue;
      }
      if (this.lostGpus.delete(g.index)) this.o.log?.(`GPU ${g.index} (${g.uuid}) answers nvidia-smi again: jobs may start there`);
      const was = layoutText(g);
      const is = layoutText(now);
      if (was !== is) this.o.log?.(`GPU ${g.index}: its MIG layout changed outside migpool (was ${was}, now ${is}; nvidia-smi mig or mig-parted run by hand?): the service plans from what nvidia-smi lists now`);
      next.push(now);
    }
    for (const e of fresh.values()) {
      this.o.log?.(`GPU ${e.index} (${e.name}, ${e.uuid}) is listed by nvidia-smi: the service uses it from now on`);
      next.push(e);
    }
    this.gpusFound = next.sort((a, b) => a.index - b.index);
  }

  /** Ids of the jobs not yet final placed on GPU `index`. */
  private jobsOn(index: number): string[] {
    const out: string[] = [];
    for (const r of this.active.placedRecords()) {
      const p = r.placement;
      if (p && (p.kind === 'instance' ? p.gpu === index : p.gpus.includes(index))) out.push(r.id);
    }
    return out;
  }

  /**
   * Reads the GPUs' processes and keeps those on a MIG-off GPU, or on a MIG instance, that runs no
   * job of the pool: someone else's, which keep jobs off it (sched/policies/common.ts
   * foreignPidsOf). A GPU or instance that ran a job of the pool just before or just after the
   * read is the pool's (a job starting or ending meanwhile). Asks for a pass when they changed,
   * so that the jobs waiting for what they freed start; a failed read keeps the last answer.
   */
  private readForeign(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    return (this.readingForeign ??= this.readForeignNow().finally(() => {
      this.readingForeign = null;
    }));
  }

  /** A read of the GPUs' processes that starts after a job's end was settled (one in progress may have begun before it). */
  private async readForeignAfterExit(): Promise<void> {
    await this.readingForeign;
    await this.readForeign();
  }

  private async readForeignNow(): Promise<void> {
    try {
      const before = this.occupants();
      const read = ++this.foreignReads;
      const processes = await this.o.gpu.listProcesses();
      if (this.processReadFailure !== null) this.o.log?.("reading the GPUs' processes works again");
      this.processReadFailure = null;
      this.processReadTimedOut = false;
      this.takeForeign(read, this.foreignIn(read, processes, before, this.occupants()));
    } catch (e) {
      // Said once per cause: a failing nvidia-smi would otherwise log a line at every tick (2 s).
      const why = e instanceof Error ? (e.message.split('\n')[0] ?? '') : String(e);
      if (why !== this.processReadFailure) this.o.log?.(`reading the GPUs' processes failed (${why}); keeping the last answer, and trying again at every tick`);
      this.processReadFailure = why;
      this.processReadTimedOut = e instanceof GpuError && e.kind === 'timeout';
    }
  }

  /**
   * Just before a round's starts and re-partitions are applied: reads the GPUs' processes once
   * more (the last read may be up to a tick old) and returns the decisions that target a GPU or
   * instance where a process migpool did not start appeared since. Those are not applied: the job
   * stays queued, the GPU keeps its layout, and the next pass (asked for by takeForeign) decides
   * afresh with the process in its view. One log line per such GPU or instance names the process
   * and what it kept off. A failed read keeps the last answer and defers nothing.
   */
  private async recheckForeign(decisions: readonly Decision[]): Promise<ReadonlySet<Decision>> {
    const deferred = new Set<Decision>();
    // nvidia-smi does not answer in time (the tick's read said so): the pass does not wait its
    // timeout under the lock (ends, cancels and other passes would wait behind it) and goes on
    // with the last answer, as after a failed read.
    if (this.stopped || this.processReadTimedOut) return deferred;
    // What the round's policy saw (a tick's read may take a newer answer during this one).
    const seen = this.foreign;
    let found: Map<number | string, number[]>;
    const read = ++this.foreignReads;
    try {
      // Under the service lock: no job starts or ends during the read, so one occupancy serves as both.
      const occupants = this.occupants();
      found = this.foreignIn(read, await this.o.gpu.listProcesses(), occupants, occupants);
    } catch (e) {
      // Once until a read succeeds: every pass that starts something tries, and a broken nvidia-smi would flood the log.
      if (!this.recheckFailing) this.o.log?.(`reading the GPUs' processes before starting jobs failed (${e instanceof Error ? e.message.split('\n')[0] : String(e)}); going on with the last answer until a read succeeds`);
      this.recheckFailing = true;
      return deferred;
    }
    this.recheckFailing = false;
    const fresh = new Set<number | string>();
    for (const [key, pids] of found) if (pids.some((pid) => !(seen.get(key) ?? []).includes(pid))) fresh.add(key);
    const keptOff = new Map<number | string, string[]>();
    for (const d of decisions) {
      const keys = this.targetsOf(d).filter((k) => fresh.has(k));
      if (keys.length === 0) continue;
      deferred.add(d);
      const what = d.kind === 'repartition' ? `GPU ${this.gpusFound[d.gpu]?.index ?? d.gpu} was about to be re-partitioned: it keeps its layout for now` : `job ${d.job} was about to start there: it stays queued`;
      for (const k of keys) keptOff.set(k, [...(keptOff.get(k) ?? []), what]);
    }
    this.takeForeign(read, found, keptOff);
    return deferred;
  }

  /** The GPUs (by index, MIG off) and instances (`gpu|start`) a decision would start a job on or re-partition. */
  private targetsOf(d: Decision): (number | string)[] {
    switch (d.kind) {
      case 'start-on-instance': {
        const g = this.gpusFound[d.gpu];
        return g ? [`${g.index}|${d.start}`] : [];
      }
      case 'start-on-gpus':
        return d.gpus.flatMap((id) => {
          const g = this.gpusFound[id];
          return g ? [g.index] : [];
        });
      case 'repartition': {
        const g = this.gpusFound[d.gpu];
        return g ? [g.index, ...g.current.instances.map((i) => `${g.index}|${i.start}`)] : [];
      }
      case 'preempt':
        return [];
    }
  }

  /**
   * The processes of read number `read` that the pool did not start, by where they run: a MIG-off
   * GPU (its index) or a MIG instance (`gpu|start`) that ran no job of the pool before (`before`)
   * nor after (`after`) the read. A process listed where a job of the pool runs, in the job's
   * session, is the job's (remembered in `ownProcesses`); listed there again once the job has
   * ended, it is still the job's, ending, for one tick (not foreign, not logged), and foreign after
   * that. One someone else started beside the job is foreign as soon as the job has ended.
   */
  private foreignIn(read: number, processes: readonly GpuProcess[], before: Occupants, after: Occupants): Map<number | string, number[]> {
    const byIndex = new Map(this.gpusFound.map((g) => [g.index, g]));
    const next = new Map<number | string, number[]>();
    // An older read that ends after a newer one was taken changes nothing remembered.
    const latest = read >= this.foreignTaken;
    const now = this.o.now();
    for (const p of processes) {
      const g = byIndex.get(p.gpu);
      if (!g) continue;
      let key: number | string;
      let held: boolean;
      if (g.current.migMode.current !== 'enabled') {
        key = p.gpu;
        held = before.whole.has(p.gpu) || after.whole.has(p.gpu);
      } else {
        const inst = p.gpuInstanceId === null ? undefined : [...g.giIds].find(([, id]) => id === p.gpuInstanceId);
        if (!inst) continue;
        key = `${p.gpu}|${inst[0]}`;
        held = before.instances.has(key) || after.instances.has(key);
      }
      const own = this.ownProcesses.get(p.pid);
      if (held) {
        if (latest && (own?.key !== key || own.endedAt !== null)) {
          const jobs = typeof key === 'number' ? [...(before.whole.get(key) ?? []), ...(after.whole.get(key) ?? [])] : [before.instances.get(key), after.instances.get(key)].filter((id) => id !== undefined);
          if (this.isJobsProcess(p.pid, jobs)) this.ownProcesses.set(p.pid, { key, endedAt: null });
          else this.ownProcesses.delete(p.pid);
        }
        continue;
      }
      if (own?.key === key) {
        const endedAt = own.endedAt ?? now;
        if (latest && own.endedAt === null) this.ownProcesses.set(p.pid, { key, endedAt });
        if (now - endedAt < this.o.tickMs) continue;
      }
      const pids = next.get(key);
      if (pids) pids.push(p.pid);
      else next.set(key, [p.pid]);
    }
    if (latest) {
      const listed = new Set(processes.map((p) => p.pid));
      for (const pid of this.ownProcesses.keys()) if (!listed.has(pid)) this.ownProcesses.delete(pid);
    }
    return next;
  }

  /**
   * Whether GPU process `pid` is one of the jobs' own: a live process (in this machine's /proc) in
   * the session of a job's current attempt (readJobSession), which a process someone else started
   * beside the job cannot join; or one of the attempt's that left that session with setsid()
   * (isAttemptProcess: the attempt's marks in its environment, run as the job's account).
   */
  private isJobsProcess(pid: number, jobIds: readonly string[]): boolean {
    const session = readProcStat(pid)?.session;
    if (session === undefined) return false;
    for (const id of jobIds) {
      const dir = this.active.get(id)?.process?.dir;
      if (dir !== undefined && readJobSession(dir) === session) return true;
    }
    for (const id of jobIds) {
      const dir = this.active.get(id)?.process?.dir;
      if (dir !== undefined && isAttemptProcess(pid, dir)) return true;
    }
    return false;
  }

  /**
   * Makes read number `read`'s foreign processes the current ones, unless a later read was taken
   * already: logs each GPU or instance where they changed (with `keptOff`: what the new ones kept
   * off it) and asks for a pass when anything changed.
   */
  private takeForeign(read: number, next: ReadonlyMap<number | string, readonly number[]>, keptOff?: ReadonlyMap<number | string, readonly string[]>): void {
    if (read < this.foreignTaken) return;
    this.foreignTaken = read;
    const where = (key: number | string) => (typeof key === 'number' ? `GPU ${key}` : `GPU ${key.split('|')[0]} instance at ${key.split('|')[1]}`);
    let changed = next.size !== this.foreign.size;
    for (const [key, pids] of next) {
      if (pids.join(',') === this.foreign.get(key)?.join(',')) continue;
      changed = true;
      const one = pids.length === 1;
      const kept = keptOff?.get(key);
      const also = kept ? ` (seen as ${kept.join(' and ')})` : '';
      this.o.log?.(`${where(key)}: process${one ? '' : 'es'} ${pids.join(', ')} that migpool did not start run${one ? 's' : ''} on it; no job starts there until ${one ? 'it ends' : 'they end'}${also}`);
    }
    for (const key of this.foreign.keys()) if (!next.has(key)) this.o.log?.(`${where(key)}: the processes migpool did not start have ended; it takes jobs again`);
    if (!changed) return;
    this.foreign = next;
    this.schedule();
  }

  /** Who holds what: jobs on instances (`gpu|start`) and whole-GPU jobs, from the placements. */
  private occupants(without?: ReadonlySet<string>): Occupants {
    const instances = new Map<string, string>();
    const whole = new Map<number, string[]>();
    const sharing = new Map<number, 'exclusive' | 'timeslice' | 'mps'>();
    for (const r of this.active.placedRecords()) {
      if (without?.has(r.id)) continue;
      const p = r.placement as JobPlacement;
      if (p.kind === 'instance') instances.set(`${p.gpu}|${p.start}`, r.id);
      else
        for (const g of p.gpus) {
          const on = whole.get(g);
          if (on) on.push(r.id);
          else whole.set(g, [r.id]);
          sharing.set(g, p.sharing);
        }
    }
    return { instances, whole, sharing };
  }

  /** Why each queued job waits: the policy's words where it has them, else the generic explanation. */
  private explainQueue(): void {
    let queued = false;
    for (const r of this.active.values()) {
      if (r.state === 'queued') {
        queued = true;
        break;
      }
    }
    if (!queued) {
      this.pending = new Map();
      return;
    }
    // Words for people: once a second is fresh enough, and keeps passes cheap under a long queue.
    if (this.o.now() - this.explainedAt < EXPLAIN_EVERY_MS) return;
    this.explainedAt = this.o.now();
    const view = this.view();
    let own: ReadonlyMap<string, string> | undefined;
    try {
      own = this.o.policy.explain?.(view, this.ctx);
    } catch (e) {
      this.o.log?.(`policy ${this.o.policy.name} could not explain its queue: ${e instanceof Error ? e.message : String(e)}`);
    }
    const reasons = explainPending(view, this.ctx, this.o.policy.name, own, this.o.policy.recutRule);
    if (this.reconfiguring.size > 0) for (const id of reasons.keys()) if (!own?.has(id)) reasons.set(id, `re-partitioning GPU ${[...this.reconfiguring].join(', ')}`);
    // A GPU whose re-partition failed is left as it is for a while: the jobs that wait hear why.
    const backingOff = this.backoffText();
    if (backingOff !== '') for (const [id, why] of reasons) reasons.set(id, `${why}; ${backingOff}`);
    // What is wrong with the GPUs themselves, and what to do, to everyone who waits.
    const gpuTrouble = [
      ...[...this.lostGpus.values()].map((why) => `${why}: no job starts there until it answers`),
      ...(this.gpuReadFailure !== null ? [`the GPUs cannot be read (${this.gpuReadFailure}): jobs are placed on what was last read`] : []),
    ].join('; ');
    // A lost GPU is unavailable in the view as a GPU being re-partitioned is (busyUntil): the
    // generic reason that names only lost GPUs as "re-partitioning" is replaced by what is wrong.
    const lostIds = view.gpus.filter((g) => this.lostGpus.has(this.gpusFound[g.id]?.index ?? -1)).map((g) => g.id);
    const onlyLost = lostIds.length > 0 && view.gpus.filter((g) => g.busyUntil !== null && g.busyUntil > view.now).length === lostIds.length ? `re-partitioning GPU ${lostIds.join(', ')}` : null;
    if (gpuTrouble !== '') for (const [id, why] of reasons) reasons.set(id, why === onlyLost ? gpuTrouble : `${why}; ${gpuTrouble}`);
    for (const [id, why] of this.gate.held) reasons.set(id, why);
    this.pending = reasons;
  }

  /**
   * Hands the running jobs' measured speeds and memory to the learner; the open jobs of a workload
   * whose fit changed see the refitted workload from the next pass on.
   */
  private async learn(): Promise<void> {
    const modelOf = (index: number) => this.gpusFound.find((g) => g.index === index)?.model.name ?? null;
    const changed = await this.learning.observe(this.active.values(), modelOf, (id) => this.progress.get(id)?.samplesPerSecond ?? null, this.o.now());
    this.refitJobs(changed);
  }

  /** The open jobs of the workloads in `changed` see their refitted workload (the same object where their fit did not change). */
  private refitJobs(changed: ReadonlySet<string>): void {
    if (changed.size === 0) return;
    for (const r of this.active.values()) {
      const spec = this.specs.get(r.id);
      if (!spec || r.spec.workload === undefined || !changed.has(r.spec.workload)) continue;
      this.specs.set(r.id, { ...spec, workload: this.jobSpecOf(r).workload });
      this.reported.delete(r.id);
    }
  }

  /** Reads the progress lines running jobs printed since the last read (bounded per job, see ProgressReader). */
  private async readProgress(): Promise<void> {
    if (this.readingProgress) return;
    this.readingProgress = true;
    try {
      for (const { id } of [...this.active.values()]) {
        // As it is now: a job that ended while the logs before it were read is forgotten (finish),
        // and reading its log now would track it again, for the service's life.
        const r = this.active.get(id);
        if (r?.state !== 'running' || !r.process) continue;
        await this.progress.poll(r.id, this.o.executor.logPaths(r.process).stdout, this.o.now());
      }
      await this.learn();
    } catch (e) {
      this.o.log?.(`reading progress failed: ${e instanceof Error ? e.message : String(e)}`);
    } finally {
      this.readingProgress = false;
    }
  }

  private sample(): void {
    void this.readProgress().then(() => this.multiplexTick());
    void this.readForeign();
    this.checkGpus();
    const occupants = this.occupants();
    let busy = 0;
    let all = 0;
    for (const g of this.gpusFound) {
      all += g.model.computeSlices;
      if ((occupants.whole.get(g.index) ?? []).length > 0) busy += g.model.computeSlices;
      else for (const i of g.current.instances) if (occupants.instances.has(`${g.index}|${i.start}`)) busy += i.profile.computeSlices;
    }
    const now = this.o.now();
    while (this.finishedAt.length > 0 && this.finishedAt[0]! < now - THROUGHPUT_WINDOW_MS) this.finishedAt.shift();
    const span = Math.min(THROUGHPUT_WINDOW_MS, Math.max(1000, now - this.startedAt));
    let queued = 0;
    let running = 0;
    for (const r of this.active.values()) {
      if (r.state === 'queued') queued++;
      else running++;
    }
    this.timeline.push({ t: now, utilization: all === 0 ? 0 : busy / all, throughputJobsPerHour: (this.finishedAt.length * 3_600_000) / span, queued, running });
    if (this.timeline.length > TIMELINE) this.timeline.shift();
  }

  /** MPS: measures foreground jobs beside background ones and backs the background off where they slow beyond the bound. */
  private async multiplexTick(): Promise<void> {
    if (this.stopped) return;
    const byIndex = new Map(this.gpusFound.map((g) => [g.index, g]));
    const over = this.mux.observe(this.o.now(), mpsClients(this.active.values(), (id) => this.progress.get(id), (id) => (this.active.get(id)?.spec.workload !== undefined ? (this.specs.get(id)?.workload ?? null) : null), (gpu) => byIndex.get(gpu)?.model ?? null));
    for (const s of over) {
      await this.locked(() =>
        backOffNeighbours(s, {
          mux: this.mux,
          running: (id) => this.active.get(id),
          preemptible: (id) => this.specs.get(id)?.preemptible === true,
          markPreempting: async (rec) => void (await this.update(rec, { reason: 'preempting' })),
          event: (e) => this.event(e),
          cancel: (id) => this.o.executor.cancel(id),
          ...(this.o.log ? { log: this.o.log } : {}),
        }),
      );
    }
  }

  /** MPS: stops the daemons no running client needs any more. */
  private async releaseMps(): Promise<void> {
    try {
      const stopped = await this.mux.release(() => mpsDevicesInUse(this.active.values()), this.active);
      for (const key of stopped) this.o.log?.(`MPS control daemon for ${key} stopped: no client left`);
    } catch (e) {
      this.o.log?.(`stopping MPS daemons failed: ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  /** Checks what the schema cannot: the workload exists and the profile exists on some GPU here. */
  private checkSpec(spec: JobSpecInput, where: string): void {
    if (spec.workload !== undefined) {
      try {
        resolveWorkload(spec.workload, this.o.workloads ?? []);
      } catch (e) {
        throw badInput(`${where}: workload: ${e instanceof Error ? e.message : String(e)}`, { path: 'workload' });
      }
    }
    const refused = launchRefusal(spec.command, { ...this.o.jobEnv, ...spec.env }, spec.workdir);
    if (refused) throw badInput(`${where}: ${refused.path}: ${refused.message}`, { path: refused.path });
    const memory = spec.resources.memory;
    if (memory !== undefined && this.gpusFound.length > 0 && !this.gpusFound.some((g) => g.model.memoryGB >= memory)) {
      const most = Math.max(...this.gpusFound.map((g) => g.model.memoryGB));
      throw badInput(`${where}: resources.memory: ${memory} GiB is more than any GPU here holds (${most} GB at most); ask for less, or for several whole GPUs with resources.gpus`, { path: 'resources.memory' });
    }
    const profile = profileOf(spec);
    if (profile !== undefined && this.gpusFound.length > 0 && !this.gpusFound.some((g) => g.model.giProfiles.some((p) => p.name === profile))) {
      const names = [...new Set(this.gpusFound.flatMap((g) => g.model.giProfiles.map((p) => p.name)))];
      throw badInput(`${where}: resources.profile: no GPU here offers '${profile}'; profiles here: ${names.join(', ')}`, { path: 'resources.profile' });
    }
    // A job that asks for exactly a profile the policy never cuts (MIG off, another static layout) would wait forever.
    const sliceProfiles = this.o.policy.sliceProfiles?.bind(this.o.policy);
    if (profile !== undefined && isExactProfile(spec) && sliceProfiles && this.gpusFound.length > 0 && !this.gpusFound.some((g) => sliceProfiles(g.model).includes(profile))) {
      const given = [...new Set(this.gpusFound.flatMap((g) => sliceProfiles(g.model)))];
      const gives = given.length === 0 ? 'runs no job on a MIG slice (it keeps MIG off)' : `runs jobs on ${given.join(', ')} slices only`;
      throw badInput(
        `${where}: resources.profile: the service's policy ${this.o.policy.name} ${gives}, so a job that asks for exactly ${profile} would wait forever; ask for at least it ({atLeast: ${profile}}, or --at-least ${profile}: a whole GPU then does too), or start migpool serve with a policy that cuts ${profile} slices (e.g. --policy migpool)`,
        { path: 'resources.profile' },
      );
    }
    const gpus = spec.resources.gpus ?? 1;
    if (this.gpusFound.length > 0 && gpus > this.gpusFound.length) {
      const have = this.gpusFound.length;
      throw badInput(`${where}: resources.gpus: ${gpus} is more GPUs than this machine has (${have}); ask for ${have === 1 ? '1' : `${have} or fewer`}`, { path: 'resources.gpus' });
    }
  }

  private unnamed: Workload | null = null;
  /** The default workload without its memory figure (one object, so policies' caches hold). */
  private unnamedWorkload(base: Workload): Workload {
    if (this.unnamed?.name !== base.name) this.unnamed = { ...base, memoryGiB: null };
    return this.unnamed;
  }

  /** The user a job belongs to (`JobSpec.user`), or null. */
  private ownerOf(r: JobRecord): string | null {
    return this.o.jobOwner?.(r) ?? r.owner ?? null;
  }

  private jobSpecOf(r: JobRecord): JobSpec {
    let workload: Workload;
    try {
      workload = resolveWorkload(r.spec.workload ?? this.o.defaultWorkload, this.o.workloads ?? []);
    } catch {
      workload = resolveWorkload(this.o.defaultWorkload);
    }
    if (r.spec.workload !== undefined) workload = this.learning.workload(r.spec.workload, workload, this.ownerOf(r));
    // A job that names no workload borrows the default's speed curve, not its memory: what it
    // needs is unknown (the user's profile or memory request says where it fits).
    if (r.spec.workload === undefined) workload = this.unnamedWorkload(workload);
    const owner = this.o.jobOwner?.(r) ?? r.owner ?? undefined;
    return {
      id: r.id,
      workload,
      gpus: r.spec.resources.gpus ?? 1,
      priority: r.spec.priority,
      arrival: r.submittedAt / 1000,
      estimate: r.spec.estimatedSeconds ?? null,
      memoryGiB: r.spec.resources.memory ?? null,
      profile: profileOf(r.spec) ?? null,
      exactProfile: isExactProfile(r.spec),
      // Records written before the contract existed have no field: not preemptible.
      preemptible: r.spec.preemptible === true,
      ...(owner === undefined ? {} : { user: owner }),
    };
  }
}
