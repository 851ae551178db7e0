import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import type { PoolService, ServiceStats } from '../control/service-port.js';

/**
 * The service's Prometheus metrics, in a registry of their own (never prom-client's global one, so
 * that two servers in one process, as in tests, do not clash). Every figure is read from
 * `service.stats()` when scraped; one scrape calls it once.
 *
 * - `migpool_jobs{state,priority}` (gauge): jobs per state and priority.
 * - `migpool_slices{profile,state}` (gauge): MIG instances per profile, `busy` or `idle`.
 * - `migpool_reconfigurations_total` (counter): GPU re-partitions applied since the service started.
 * - `migpool_reconfigurations_failed_total` (counter): GPU re-partitions that failed.
 * - `migpool_mps_backoffs_total` (counter): background MPS clients backed off (restarted with fewer
 *   threads, or stopped) because a foreground neighbour slowed beyond the bound.
 * - `migpool_mps_daemons` (gauge): MPS control daemons the service runs now.
 * - `migpool_mps_foreground_slowdown_ratio{job,gpu}` (gauge): a foreground job's samples/s alone
 *   over its samples/s beside background jobs, as measured now.
 * - `migpool_queue_wait_seconds{quantile}` and `migpool_scheduling_pass_seconds{quantile}` (gauges):
 *   the 0.5, 0.9, 0.99 quantiles and the maximum (`quantile="1"`) of the service's recent window
 *   (its last 1000 started jobs, its last 1000 scheduling passes). They are gauges, not a
 *   Prometheus summary, because the service keeps only a window: a summary's `_sum` and `_count`
 *   must only grow. Do not average quantiles across instances.
 * - `migpool_queue_wait_window_samples`, `migpool_scheduling_pass_window_samples` (gauges): how
 *   many samples those quantiles are computed from (0: the quantile series are absent).
 * - `migpool_utilization_ratio` (gauge): busy share of compute slices, latest timeline sample.
 * - `migpool_throughput_jobs_per_hour` (gauge): jobs finished per hour, latest timeline sample.
 * - `migpool_service_start_time_seconds` (gauge): when the service started, Unix seconds.
 * - the process metrics of prom-client's `collectDefaultMetrics` (`process_*`, `nodejs_*`).
 */

/** Quantiles published for the recent windows. */
export const WINDOW_QUANTILES = [0.5, 0.9, 0.99, 1] as const;

/** The q-quantile of ascending `sorted` values (nearest rank); NaN when empty. */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank]!;
}

/** Options of {@link createMetrics}. */
export interface MetricsOptions {
  /** Also publish process metrics (collectDefaultMetrics). Default true. */
  readonly processMetrics?: boolean;
}

/** The metrics of one server. */
export interface ServerMetrics {
  readonly registry: Registry;
  /** The Prometheus text of one scrape (content type `registry.contentType`). */
  scrape(): Promise<string>;
}

/** Builds the metrics of a server over `service`. */
export function createMetrics(service: PoolService, options: MetricsOptions = {}): ServerMetrics {
  const registry = new Registry();
  let pending: Promise<ServiceStats> | null = null;
  // registry.metrics() runs every collect() callback synchronously up to its first await, so one
  // scrape shares one stats() call; `scrape` starts each with a fresh one.
  const stats = (): Promise<ServiceStats> => (pending ??= service.stats());

  new Gauge({
    name: 'migpool_jobs',
    help: 'Jobs per state and priority.',
    labelNames: ['state', 'priority'] as const,
    registers: [registry],
    async collect() {
      const s = await stats();
      this.reset();
      for (const row of s.jobsByState) this.set({ state: row.state, priority: row.priority }, row.count);
    },
  });

  new Gauge({
    name: 'migpool_slices',
    help: 'MIG instances per profile, busy (a job holds it) or idle.',
    labelNames: ['profile', 'state'] as const,
    registers: [registry],
    async collect() {
      const s = await stats();
      this.reset();
      for (const row of s.slices) this.set({ profile: row.profile, state: row.state }, row.count);
    },
  });

  new Counter({
    name: 'migpool_reconfigurations_total',
    help: 'GPU re-partitions applied since the service started.',
    registers: [registry],
    async collect() {
      const s = await stats();
      this.reset();
      this.inc(s.reconfigurations);
    },
  });

  new Counter({
    name: 'migpool_reconfigurations_failed_total',
    help: 'GPU re-partitions that failed since the service started (each GPU then backs off).',
    registers: [registry],
    async collect() {
      const s = await stats();
      this.reset();
      this.inc(s.reconfigurationsFailed ?? 0);
    },
  });

  new Counter({
    name: 'migpool_mps_backoffs_total',
    help: 'Background MPS clients backed off (restarted with fewer threads, or stopped) since the service started.',
    registers: [registry],
    async collect() {
      const s = await stats();
      this.reset();
      this.inc(s.multiplex?.backoffs ?? 0);
    },
  });

  new Gauge({
    name: 'migpool_mps_daemons',
    help: 'MPS control daemons the service runs now (one per GPU or MIG instance with MPS clients).',
    registers: [registry],
    async collect() {
      this.set((await stats()).multiplex?.daemons ?? 0);
    },
  });

  new Gauge({
    name: 'migpool_mps_foreground_slowdown_ratio',
    help: "A foreground job's samples/s alone over its samples/s beside background MPS clients, measured.",
    labelNames: ['job', 'gpu'] as const,
    registers: [registry],
    async collect() {
      const s = await stats();
      this.reset();
      for (const x of s.multiplex?.slowdowns ?? []) this.set({ job: x.job, gpu: String(x.gpu) }, x.slowdown);
    },
  });

  const windowGauges = (name: string, help: string, values: (s: ServiceStats) => readonly number[]): void => {
    new Gauge({
      name,
      help,
      labelNames: ['quantile'] as const,
      registers: [registry],
      async collect() {
        const sorted = [...values(await stats())].sort((a, b) => a - b);
        this.reset();
        if (sorted.length === 0) return;
        for (const q of WINDOW_QUANTILES) this.set({ quantile: String(q) }, quantile(sorted, q));
      },
    });
    new Gauge({
      name: name.replace(/_seconds$/, '_window_samples'),
      help: `Samples in the recent window that ${name} is computed from.`,
      registers: [registry],
      async collect() {
        this.set(values(await stats()).length);
      },
    });
  };
  windowGauges('migpool_queue_wait_seconds', 'Queue wait of recently started jobs (last 1000): quantiles, 1 = maximum.', (s) => s.queueWaitSeconds);
  windowGauges('migpool_scheduling_pass_seconds', 'Duration of recent scheduling passes (last 1000): quantiles, 1 = maximum.', (s) => s.passMs.map((ms) => ms / 1000));

  const latest = (s: ServiceStats) => s.timeline[s.timeline.length - 1];
  new Gauge({
    name: 'migpool_utilization_ratio',
    help: 'Busy share of compute slices (latest sample).',
    registers: [registry],
    async collect() {
      const last = latest(await stats());
      this.reset();
      if (last) this.set(last.utilization);
    },
  });
  new Gauge({
    name: 'migpool_throughput_jobs_per_hour',
    help: 'Jobs finished per hour over the last window (latest sample).',
    registers: [registry],
    async collect() {
      const last = latest(await stats());
      this.reset();
      if (last) this.set(last.throughputJobsPerHour);
    },
  });
  new Gauge({
    name: 'migpool_service_start_time_seconds',
    help: 'When the service started, seconds since the Unix epoch.',
    registers: [registry],
    async collect() {
      this.set((await stats()).startedAt / 1000);
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
  };
}
