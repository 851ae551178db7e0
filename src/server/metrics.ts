import { hostname as osHostname } from 'node:os';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { DEFAULT_USER, type LiveJob, type ServiceObserver } from '../control/service-observer.js';
import type { GpuSnapshot, PoolService, ServiceStats } from '../control/service-port.js';
import type { UserShare } from '../sched/types.js';
import { allocatedGpusByUser, allocatedSlices } from './allocation.js';
import { buildInfo } from './build-info.js';
import { GPU_LABELS, gpuLabels, INSTANCE_LABELS, instanceLabels } from './dcgm-labels.js';

/**
 * The service's Prometheus metrics, in a registry of their own (never prom-client's global one, so
 * that two servers in one process, as in tests, do not clash). Named after Prometheus' "Metric and
 * label naming" and "Instrumentation" practices (prometheus.io/docs/practices/naming,
 * .../instrumentation): base units, `_total` on counters, live state in gauges and what happened in
 * counters and histograms, `_info` for metadata. GPU and instance labels are dcgm-exporter's
 * (dcgm-labels.ts), so migpool's series join DCGM's. The README's metrics section lists every
 * series and the renames from earlier versions.
 *
 * Live state (gauges, read from the service at each scrape):
 * - `migpool_jobs{state,priority,user}`: jobs queued, starting and running (final states are
 *   counted by `migpool_jobs_finished_total`).
 * - `migpool_running_job_info{hpc_job,user,priority,Hostname}` 1 per starting or running job: joins
 *   DCGM series that carry `hpc_job` (the job mapping files) to the job's owner,
 *   `on(Hostname, hpc_job)`.
 * - `migpool_slices{profile,state}`: MIG instances per profile, `busy` (allocated) or `idle`.
 * - `migpool_gpu_instance_allocated{gpu,UUID,modelName,Hostname,GPU_I_ID,GPU_I_PROFILE}`: 1 while a
 *   job holds the instance, 0 idle.
 * - `migpool_gpu_allocation_ratio{gpu,UUID,modelName,Hostname}`: share of the GPU's compute slices
 *   allocated to jobs (a whole-GPU job allocates all).
 * - `migpool_allocation_ratio`: the same over the pool.
 * - `migpool_user_allocated_gpus{user}`: GPUs' worth of compute slices each owner's jobs hold.
 * - `migpool_user_quota_gpus{user}`: each user's quota in the same unit (users with no quota have
 *   no series), and `migpool_user_weight{user}`: each user's fair-share weight (the service's users).
 * - `migpool_build_info{version,nodejs_version}` 1, `migpool_service_start_time_seconds`.
 *
 * Occurrences (since the service started, observed as they happen):
 * - `migpool_jobs_finished_total{outcome,priority,user}`: outcome succeeded, failed or cancelled.
 * - `migpool_queue_wait_seconds{priority,user}` (histogram): submission to first start of each job.
 * - `migpool_scheduling_pass_seconds` (histogram): wall time of each scheduling pass.
 * - `migpool_reconfigurations_total`, `migpool_reconfigurations_failed_total`: GPU re-partitions
 *   applied, and failed.
 * - `migpool_mps_backoffs_total` (counter): background MPS clients backed off (restarted with fewer
 *   threads, or stopped) because a foreground neighbour slowed beyond the bound.
 * - `migpool_mps_daemons` (gauge): MPS control daemons the service runs now.
 * - `migpool_mps_foreground_slowdown_ratio{job,gpu}` (gauge): a foreground job's samples/s alone
 *   over its samples/s beside background jobs, as measured now.
 * - the process metrics of prom-client's `collectDefaultMetrics` (`process_*`, `nodejs_*`).
 */

/**
 * Buckets of `migpool_queue_wait_seconds`, seconds. Below 1 s: started by the pass its submission
 * triggered (an idle pool); 5 and 15 s: a tick or a few (the service passes every 2 s,
 * ServiceOptions.tickMs) or a re-partition (5 s assumed, reconfigureSeconds); 30 s to 2 h: waiting
 * behind other jobs, the range of the queueing delays in Microsoft's Philly trace (Jeon et al.,
 * ATC'19, Fig. 4: minutes to hours); up to a day for a long queue. Each bound is 2 to 3 times the
 * previous one, so histogram_quantile's linear interpolation within a bucket errs by less than
 * that factor, and 1800 s (half an hour) is a bound so that the alert on p95 wait is exact there.
 */
export const QUEUE_WAIT_BUCKETS = [1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 28800, 86400] as const;

/**
 * Buckets of `migpool_scheduling_pass_seconds`, seconds. A pass over a few GPUs and a short queue
 * takes well under a millisecond (measured: 24 short jobs on 2 simulated A100s, 69 passes, 31 under
 * 0.5 ms, 58 under 50 ms, one up to 2.5 s; README, Metrics);
 * 0.05 s is the p99 target for 10,000 queued jobs on 1,000 GPUs (bench/service.ts,
 * PASS_P99_TARGET_MS), so it is a bound; a pass that re-partitions runs nvidia-smi's create and
 * destroy commands inside it (seconds each on real GPUs), hence bounds up to 30 s.
 */
export const SCHEDULING_PASS_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30] as const;

/** The outcomes `migpool_jobs_finished_total` counts, each published from the start (0 until one happens). */
export const OUTCOMES = ['succeeded', 'failed', 'cancelled'] as const;
const PRIORITIES = ['foreground', 'background'] as const;
const LIVE_STATES = ['queued', 'starting', 'running'] as const;

/** Options of {@link createMetrics}. */
export interface MetricsOptions {
  /** Also publish process metrics (collectDefaultMetrics). Default true. */
  readonly processMetrics?: boolean;
  /** The `Hostname` label of GPU series, as dcgm-exporter sets it [os.hostname()]. */
  readonly hostname?: string;
}

/** The metrics of one server. */
export interface ServerMetrics {
  readonly registry: Registry;
  /** The Prometheus text of one scrape (content type `registry.contentType`). */
  scrape(): Promise<string>;
  /** The same scrape as prom-client's objects (`registry.getMetricsAsJSON()`), to filter before writing (visible-metrics.ts). */
  scrapeValues(): ReturnType<Registry['getMetricsAsJSON']>;
  /** Stops observing the service. */
  close(): void;
}

/** Live jobs: the service's own list, or (a service without one) its counts, owned by the default user. */
function liveJobsOf(service: PoolService, s: ServiceStats): LiveJob[] {
  if (service.liveJobs) return [...service.liveJobs()];
  const out: LiveJob[] = [];
  for (const row of s.jobsByState) {
    if (!(LIVE_STATES as readonly string[]).includes(row.state)) continue;
    for (let k = 0; k < row.count; k++) out.push({ id: '', priority: row.priority, user: DEFAULT_USER, state: row.state as LiveJob['state'], placement: null });
  }
  return out;
}

/** Builds the metrics of a server over `service`. */
export function createMetrics(service: PoolService, options: MetricsOptions = {}): ServerMetrics {
  const registry = new Registry();
  const host = options.hostname ?? osHostname();
  /** Users seen, so that every user's series stay published (at 0) once they appeared. */
  const users = new Set<string>([DEFAULT_USER]);
  let pending: Promise<{ stats: ServiceStats; gpus: GpuSnapshot[]; live: LiveJob[]; shares: ReadonlyMap<string, UserShare> }> | null = null;
  // registry.metrics() runs every collect() callback synchronously up to its first await, so one
  // scrape shares one read of the service; `scrape` starts each with a fresh one.
  const read = () =>
    (pending ??= Promise.all([service.stats(), service.gpus()]).then(([stats, gpus]) => {
      const live = liveJobsOf(service, stats);
      const shares = service.userShares?.() ?? new Map<string, UserShare>();
      for (const j of live) users.add(j.user);
      for (const user of shares.keys()) users.add(user);
      return { stats, gpus, live, shares };
    }));

  new Gauge({
    name: 'migpool_jobs',
    help: 'Jobs not yet ended, per state (queued, starting, running), priority and owner.',
    labelNames: ['state', 'priority', 'user'] as const,
    registers: [registry],
    async collect() {
      const { live } = await read();
      this.reset();
      for (const user of users) for (const state of LIVE_STATES) for (const priority of PRIORITIES) this.set({ state, priority, user }, 0);
      for (const j of live) this.inc({ state: j.state, priority: j.priority, user: j.user });
    },
  });

  new Gauge({
    name: 'migpool_running_job_info',
    help: "1 per starting or running job: its id as dcgm-exporter's hpc_job label, its owner and priority, and the host as dcgm-exporter's Hostname.",
    labelNames: ['hpc_job', 'user', 'priority', 'Hostname'] as const,
    registers: [registry],
    async collect() {
      const { live } = await read();
      this.reset();
      for (const j of live) if (j.state !== 'queued' && j.id !== '') this.set({ hpc_job: j.id, user: j.user, priority: j.priority, Hostname: host }, 1);
    },
  });

  new Gauge({
    name: 'migpool_user_allocated_gpus',
    help: "GPUs' worth of compute slices each owner's starting and running jobs hold (the unit of quotas).",
    labelNames: ['user'] as const,
    registers: [registry],
    async collect() {
      const { gpus, live } = await read();
      this.reset();
      const held = allocatedGpusByUser(gpus, live);
      for (const user of users) this.set({ user }, held.get(user) ?? 0);
    },
  });

  new Gauge({
    name: 'migpool_user_quota_gpus',
    help: "Each user's quota: the most GPUs' worth of compute slices their jobs may hold (no series for a user without one).",
    labelNames: ['user'] as const,
    registers: [registry],
    async collect() {
      const { shares } = await read();
      this.reset();
      for (const [user, s] of shares) if (s.quotaGpus !== null) this.set({ user }, s.quotaGpus);
    },
  });

  new Gauge({
    name: 'migpool_user_weight',
    help: "Each user's fair-share weight: under contention their share of the pool tends to their weight over the sum of the weights of users with jobs.",
    labelNames: ['user'] as const,
    registers: [registry],
    async collect() {
      const { shares } = await read();
      this.reset();
      for (const [user, s] of shares) this.set({ user }, s.weight);
    },
  });

  new Gauge({
    name: 'migpool_slices',
    help: 'MIG instances per profile, busy (allocated to a job) or idle.',
    labelNames: ['profile', 'state'] as const,
    registers: [registry],
    async collect() {
      const { stats } = await read();
      this.reset();
      for (const row of stats.slices) this.set({ profile: row.profile, state: row.state }, row.count);
    },
  });

  new Gauge({
    name: 'migpool_gpu_instance_allocated',
    help: 'Whether a job holds the MIG instance (1) or it is idle (0); labels as dcgm-exporter.',
    labelNames: INSTANCE_LABELS,
    registers: [registry],
    async collect() {
      const { gpus } = await read();
      this.reset();
      for (const g of gpus) for (const i of g.instances) this.set(instanceLabels(g, i, host), i.job === null ? 0 : 1);
    },
  });

  new Gauge({
    name: 'migpool_gpu_allocation_ratio',
    help: "Share of the GPU's compute slices allocated to jobs (0 to 1); labels as dcgm-exporter.",
    labelNames: GPU_LABELS,
    registers: [registry],
    async collect() {
      const { gpus } = await read();
      this.reset();
      for (const g of gpus) this.set(gpuLabels(g, host), g.slices === 0 ? 0 : allocatedSlices(g) / g.slices);
    },
  });

  new Gauge({
    name: 'migpool_allocation_ratio',
    help: "Share of the pool's compute slices allocated to jobs (0 to 1).",
    registers: [registry],
    async collect() {
      const { gpus } = await read();
      const all = gpus.reduce((s, g) => s + g.slices, 0);
      this.set(all === 0 ? 0 : gpus.reduce((s, g) => s + allocatedSlices(g), 0) / all);
    },
  });

  new Counter({
    name: 'migpool_reconfigurations_total',
    help: 'GPU re-partitions applied since the service started.',
    registers: [registry],
    async collect() {
      const { stats } = await read();
      this.reset();
      this.inc(stats.reconfigurations);
    },
  });

  new Counter({
    name: 'migpool_reconfigurations_failed_total',
    help: 'GPU re-partitions that failed since the service started (each GPU then backs off).',
    registers: [registry],
    async collect() {
      const { stats } = await read();
      this.reset();
      this.inc(stats.reconfigurationsFailed ?? 0);
    },
  });

  new Counter({
    name: 'migpool_mps_backoffs_total',
    help: 'Background MPS clients backed off (restarted with fewer threads, or stopped) since the service started.',
    registers: [registry],
    async collect() {
      const { stats: s } = await read();
      this.reset();
      this.inc(s.multiplex?.backoffs ?? 0);
    },
  });

  new Gauge({
    name: 'migpool_mps_daemons',
    help: 'MPS control daemons the service runs now (one per GPU or MIG instance with MPS clients).',
    registers: [registry],
    async collect() {
      this.set((await read()).stats.multiplex?.daemons ?? 0);
    },
  });

  new Gauge({
    name: 'migpool_mps_foreground_slowdown_ratio',
    help: "A foreground job's samples/s alone over its samples/s beside background MPS clients, measured.",
    labelNames: ['job', 'gpu'] as const,
    registers: [registry],
    async collect() {
      const { stats: s } = await read();
      this.reset();
      for (const x of s.multiplex?.slowdowns ?? []) this.set({ job: x.job, gpu: String(x.gpu) }, x.slowdown);
    },
  });

  const finished = new Counter({
    name: 'migpool_jobs_finished_total',
    help: 'Jobs that reached a final state since the service started, by outcome (succeeded, failed, cancelled), priority and owner.',
    labelNames: ['outcome', 'priority', 'user'] as const,
    registers: [registry],
  });
  const queueWait = new Histogram({
    name: 'migpool_queue_wait_seconds',
    help: "Seconds from a job's submission to its first start, by priority and owner.",
    labelNames: ['priority', 'user'] as const,
    buckets: [...QUEUE_WAIT_BUCKETS],
    registers: [registry],
  });
  const passTime = new Histogram({
    name: 'migpool_scheduling_pass_seconds',
    help: 'Wall time of each scheduling pass (settling ends, policy rounds, starts, preemptions, re-partitions).',
    buckets: [...SCHEDULING_PASS_BUCKETS],
    registers: [registry],
  });
  /** A user's finished counters exist from the moment the user is seen, at 0. */
  const seeUser = (user: string): void => {
    users.add(user);
    for (const outcome of OUTCOMES) for (const priority of PRIORITIES) finished.inc({ outcome, priority, user }, 0);
  };
  seeUser(DEFAULT_USER);
  const observer: ServiceObserver = {
    schedulingPass: (seconds) => passTime.observe(seconds),
    jobStarted: (job, wait, attempt) => {
      seeUser(job.user);
      // The wait until a job first runs: a later attempt's "wait" since submission would hold the
      // time its earlier attempts ran.
      if (attempt === 1) queueWait.observe({ priority: job.priority, user: job.user }, Math.max(0, wait));
    },
    jobFinished: (job, outcome) => {
      seeUser(job.user);
      finished.inc({ outcome, priority: job.priority, user: job.user });
    },
  };
  const unobserve = service.observe?.(observer) ?? (() => undefined);

  const build = buildInfo();
  new Gauge({
    name: 'migpool_build_info',
    help: 'Always 1: the version of migpool serving and the Node.js running it.',
    labelNames: ['version', 'nodejs_version'] as const,
    registers: [registry],
  }).set({ version: build.version, nodejs_version: build.nodeVersion }, 1);

  new Gauge({
    name: 'migpool_service_start_time_seconds',
    help: 'When the service started, seconds since the Unix epoch.',
    registers: [registry],
    async collect() {
      this.set((await read()).stats.startedAt / 1000);
    },
  });

  if (options.processMetrics !== false) collectDefaultMetrics({ register: registry });
  return {
    registry,
    scrape(): Promise<string> {
      pending = null;
      const text = registry.metrics();
      pending = null;
      return text;
    },
    scrapeValues() {
      pending = null;
      const values = registry.getMetricsAsJSON();
      pending = null;
      return values;
    },
    close: unobserve,
  };
}
