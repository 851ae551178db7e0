import { parseJobSpec } from '../src/jobs/job-spec.js';
import { badInput, MigpoolError } from '../src/errors.js';
import type { GpuSnapshot, LogChunk, PoolService, ServiceStats, SubmitOptions } from '../src/control/service-port.js';
import { DEFAULT_USER, ObserverSet, type LiveJob, type ServiceObserver } from '../src/control/service-observer.js';
import { FINAL_STATES, type EventRecord, type EventType, type JobFilter, type JobPlacement, type JobRecord } from '../src/store/types.js';

type Mutable<T> = { -readonly [K in keyof T]: T[K] };
type Instance = Mutable<GpuSnapshot['instances'][number]>;
interface FakeGpu extends Omit<Mutable<GpuSnapshot>, 'instances' | 'wholeGpuJobs'> {
  instances: Instance[];
  wholeGpuJobs: string[];
}

/** Workloads the fake knows; any other `workload` is refused (as the real service may do). */
export const FAKE_WORKLOADS = ['small', 'resnet50-b64', 'bert-large'];

/**
 * An in-memory `PoolService` for the HTTP and CLI tests: jobs, logs, GPUs and events kept in
 * plain objects, with helpers that play the scheduler's part (start, finish, write logs).
 */
export class FakePoolService implements PoolService {
  readonly jobs = new Map<string, JobRecord>();
  readonly eventLog: EventRecord[] = [];
  readonly gpuList: FakeGpu[] = [];
  readonly logs = new Map<string, { stdout: string; stderr: string }>();
  private readonly listeners = new Set<(event: EventRecord) => void>();
  private readonly observers = new ObserverSet();
  /** Owners of jobs (JobSpec.user as the real service reads it), by id; absent: the default user. */
  readonly owners = new Map<string, string>();
  private nextId = 1;
  now = 1_700_000_000_000;
  reconfigurations = 0;

  /** Listeners subscribed now. */
  get subscribers(): number {
    return this.listeners.size;
  }

  /** Checks every spec first, then queues them all (as the real service does). */
  async submitMany(specs: readonly unknown[], options?: SubmitOptions): Promise<JobRecord[]> {
    specs.forEach((s, i) => this.check(s, `job spec ${i + 1}`));
    const out: JobRecord[] = [];
    for (const s of specs) out.push(await this.submit(s, options));
    return out;
  }

  private check(spec: unknown, where: string): void {
    const parsed = parseJobSpec(spec, where);
    if (parsed.workload !== undefined && !FAKE_WORKLOADS.includes(parsed.workload)) {
      throw badInput(`${where}: workload: unknown workload '${parsed.workload}': use one of ${FAKE_WORKLOADS.join(', ')}`, { path: 'workload' });
    }
  }

  async submit(spec: unknown, options: SubmitOptions = {}): Promise<JobRecord> {
    this.check(spec, 'job spec');
    const parsed = parseJobSpec(spec);
    const job: JobRecord = {
      id: String(this.nextId++),
      spec: parsed,
      state: 'queued',
      version: 1,
      submittedAt: this.now,
      startedAt: null,
      endedAt: null,
      attempt: 0,
      placement: null,
      process: null,
      exitCode: null,
      reason: null,
      cancelRequested: false,
      owner: options.owner ?? null,
    };
    this.jobs.set(job.id, job);
    this.logs.set(job.id, { stdout: '', stderr: '' });
    this.emit('job-submitted', job.id, { name: parsed.name });
    return job;
  }

  async getJob(id: string): Promise<JobRecord | null> {
    return this.jobs.get(id) ?? null;
  }

  async listJobs(filter: JobFilter = {}): Promise<JobRecord[]> {
    const desc = filter.order === 'desc';
    let jobs = [...this.jobs.values()].sort((a, b) => (desc ? Number(b.id) - Number(a.id) : Number(a.id) - Number(b.id)));
    if (filter.states) jobs = jobs.filter((j) => filter.states!.includes(j.state));
    if (filter.priority) jobs = jobs.filter((j) => j.spec.priority === filter.priority);
    if (filter.owner !== undefined) jobs = jobs.filter((j) => j.owner === filter.owner);
    if (filter.after !== undefined) jobs = jobs.filter((j) => (desc ? Number(j.id) < Number(filter.after) : Number(j.id) > Number(filter.after)));
    // As the stores: no limit lists every match.
    return filter.limit === undefined ? jobs : jobs.slice(0, filter.limit);
  }

  async cancel(id: string): Promise<JobRecord | null> {
    const job = this.jobs.get(id);
    if (!job) return null;
    if (FINAL_STATES.includes(job.state)) return job;
    if (job.state === 'queued') {
      this.observers.each((o) => o.jobFinished?.(this.observed(job), 'cancelled'));
      return this.update(id, { state: 'cancelled', endedAt: this.now, reason: 'cancelled while queued' }, 'job-finished');
    }
    return this.update(id, { cancelRequested: true }, 'job-cancel-requested');
  }

  /** As the service: a running job whose spec allows it is marked for its move; others are refused. */
  async preempt(id: string): Promise<JobRecord | null> {
    const job = this.jobs.get(id);
    if (!job) return null;
    if (job.state !== 'running') throw new MigpoolError('CHECK_FAILED', `job ${id} is ${job.state}, not running: only a running job can be preempted`);
    if (job.spec.preemptible !== true) throw new MigpoolError('CHECK_FAILED', `job ${id} may not be moved: its spec does not say preemptible: true`);
    return this.update(id, { reason: 'preempting' }, 'job-preempting');
  }

  async readLog(id: string, stream: 'stdout' | 'stderr', offset: number, limit = 64 * 1024): Promise<LogChunk | null> {
    const job = this.jobs.get(id);
    const logs = this.logs.get(id);
    if (!job || !logs) return null;
    const bytes = Buffer.from(logs[stream]);
    const end = Math.min(bytes.length, offset + limit);
    const text = offset >= bytes.length ? '' : bytes.subarray(offset, end).toString();
    const nextOffset = Math.max(offset, end);
    return { text, nextOffset, done: FINAL_STATES.includes(job.state) && nextOffset >= bytes.length };
  }

  /** A GPU whose re-partitions fail, as the service reports it (null: none). */
  repartitionFailure: { gpu: number; failures: number; error: string; retryAt: number } | null = null;

  async gpus(): Promise<GpuSnapshot[]> {
    const f = this.repartitionFailure;
    return structuredClone(this.gpuList).map((g) => (f && f.gpu === g.index ? { ...g, repartitionFailure: { failures: f.failures, error: f.error, retryAt: f.retryAt } } : g));
  }

  observe(observer: ServiceObserver): () => void {
    return this.observers.add(observer);
  }

  liveJobs(): LiveJob[] {
    return [...this.jobs.values()]
      .filter((j) => j.state === 'queued' || j.state === 'starting' || j.state === 'running')
      .map((j) => ({ ...this.observed(j), state: j.state as LiveJob['state'], placement: j.placement }));
  }

  private observed(j: JobRecord): { id: string; priority: 'foreground' | 'background'; user: string } {
    return { id: j.id, priority: j.spec.priority, user: this.owners.get(j.id) ?? DEFAULT_USER };
  }

  /** Plays a scheduling pass of `seconds` for the observers. */
  pass(seconds: number): void {
    this.observers.each((o) => o.schedulingPass?.(seconds));
  }

  subscribe(listener: (event: EventRecord) => void): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  async events(afterSeq: number, limit = 1000): Promise<EventRecord[]> {
    return this.eventLog.filter((e) => e.seq > afterSeq).slice(0, limit);
  }

  async stats(): Promise<ServiceStats> {
    const counts = new Map<string, { state: JobRecord['state']; priority: 'foreground' | 'background'; count: number }>();
    for (const j of this.jobs.values()) {
      const key = `${j.state}/${j.spec.priority}`;
      const row = counts.get(key) ?? { state: j.state, priority: j.spec.priority, count: 0 };
      row.count++;
      counts.set(key, row);
    }
    const slices = new Map<string, { profile: string; state: 'busy' | 'idle'; count: number }>();
    for (const g of this.gpuList) {
      for (const i of g.instances) {
        const state = i.job === null ? 'idle' : 'busy';
        const row = slices.get(`${i.profile}/${state}`) ?? { profile: i.profile, state, count: 0 };
        row.count++;
        slices.set(`${i.profile}/${state}`, row);
      }
    }
    const timeline = Array.from({ length: 30 }, (_, k) => ({
      t: this.now - (29 - k) * 60_000,
      utilization: Math.min(1, 0.2 + 0.025 * k),
      throughputJobsPerHour: 4 + (k % 7),
      queued: Math.max(0, 8 - Math.floor(k / 4)),
      running: 2 + (k % 3),
    }));
    return {
      policy: 'fake-fifo',
      startedAt: this.now - 3_600_000,
      jobsByState: [...counts.values()],
      slices: [...slices.values()],
      reconfigurations: this.reconfigurations,
      passMs: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
      queueWaitSeconds: [30, 60, 90, 120],
      timeline,
    };
  }

  // ---- the scheduler's part ----------------------------------------------------------------

  /** Adds a GPU; instances given as [profile, start, size] (MIG on when any, or `mig: true`). */
  addGpu(name: string, slices: number, instances: readonly [string, number, number][], mig = instances.length > 0): FakeGpu {
    const index = this.gpuList.length;
    const gpu: FakeGpu = {
      index,
      name,
      uuid: `GPU-00000000-0000-0000-0000-00000000000${index}`,
      migEnabled: mig,
      slices,
      instances: instances.map(([profile, start, size]) => ({ profile, start, size, uuid: `MIG-${index}-${start}`, job: null, gpuInstanceId: start + 1 })),
      wholeGpuJobs: [],
      reconfiguring: false,
    };
    this.gpuList.push(gpu);
    return gpu;
  }

  /** Starts a queued job on a MIG instance (`gpu`, `start`) or, with `start` null, on the whole GPU. */
  startJob(id: string, gpu: number, start: number | null): JobRecord {
    const g = this.gpuList[gpu];
    if (!g) throw new Error(`no GPU ${gpu}`);
    let placement: JobPlacement;
    if (start === null) {
      g.wholeGpuJobs.push(id);
      placement = { kind: 'gpus', gpus: [gpu], sharing: 'exclusive', devices: [g.uuid] };
    } else {
      const inst = g.instances.find((i) => i.start === start);
      if (!inst) throw new Error(`no instance at ${start} on GPU ${gpu}`);
      inst.job = id;
      placement = { kind: 'instance', gpu, start, profile: inst.profile, devices: [inst.uuid ?? ''] };
    }
    const job = this.jobs.get(id)!;
    this.observers.each((o) => o.jobStarted?.(this.observed(job), (this.now - job.submittedAt) / 1000, job.attempt + 1));
    return this.update(id, { state: 'running', startedAt: this.now, attempt: job.attempt + 1, placement }, 'job-started');
  }

  /** Ends a running job and frees its slice. */
  finishJob(id: string, exitCode: number): JobRecord {
    for (const g of this.gpuList) {
      for (const i of g.instances) if (i.job === id) i.job = null;
      g.wholeGpuJobs = g.wholeGpuJobs.filter((j) => j !== id);
    }
    this.observers.each((o) => o.jobFinished?.(this.observed(this.jobs.get(id)!), exitCode === 0 ? 'succeeded' : 'failed'));
    return this.update(id, { state: exitCode === 0 ? 'succeeded' : 'failed', endedAt: this.now, exitCode, reason: exitCode === 0 ? null : `exited with ${exitCode}` }, 'job-finished');
  }

  appendLog(id: string, stream: 'stdout' | 'stderr', text: string): void {
    const logs = this.logs.get(id);
    if (!logs) throw new Error(`no job ${id}`);
    logs[stream] += text;
  }

  emit(type: EventType, jobId: string | null, data: Record<string, unknown> = {}): EventRecord {
    const event: EventRecord = { seq: this.eventLog.length + 1, time: this.now, type, jobId, data };
    this.eventLog.push(event);
    for (const l of [...this.listeners]) l(event);
    return event;
  }

  private update(id: string, patch: Partial<Mutable<JobRecord>>, event: EventType): JobRecord {
    const job = this.jobs.get(id);
    if (!job) throw new Error(`no job ${id}`);
    const next: JobRecord = { ...job, ...patch, version: job.version + 1 };
    this.jobs.set(id, next);
    this.emit(event, id, { state: next.state });
    return next;
  }
}
