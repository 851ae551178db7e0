import { AggregatorRegistry, type Registry } from 'prom-client';
import type { PoolService } from '../control/service-port.js';
import type { ServerMetrics } from './metrics.js';
import { canSee, type Caller } from './users.js';

/** Labels whose value is a job's id: `hpc_job` (joins dcgm-exporter's series), `job` (MPS slowdowns). */
export const JOB_ID_LABELS: readonly string[] = ['hpc_job', 'job'];
/** The label whose value is a job's owner, or the user a per-user series is about. */
export const OWNER_LABEL = 'user';

type Scraped = Awaited<ReturnType<Registry['getMetricsAsJSON']>>;

/**
 * GET /metrics as `caller` may see it, as GET /v1/gpus (visible-gpus.ts): an admin gets every
 * series. Another user gets every series that names no user and no job (the pool's: allocation
 * per GPU and instance, slices, pass times, re-partitions, build and process), and of the series
 * that do, only those about them: `user` their own name, `hpc_job`/`job` one of their jobs (each
 * job's owner looked up once). Other users' jobs still count in the pool's series, by no id or
 * name. The filtered series are written by prom-client itself ({@link AggregatorRegistry.aggregate}
 * over one scrape's values is that scrape; `first` keeps the series it would `omit` across
 * processes, such as process_start_time_seconds).
 */
export async function visibleMetrics(metrics: ServerMetrics, service: Pick<PoolService, 'getJob'>, caller: Caller): Promise<string> {
  if (caller.admin) return metrics.scrape();
  const owns = new Map<string, Promise<boolean>>();
  const ownsJob = (id: string): Promise<boolean> => {
    let ok = owns.get(id);
    if (ok === undefined) {
      ok = service.getJob(id).then((j) => j !== null && canSee(caller, j));
      owns.set(id, ok);
    }
    return ok;
  };
  const maySee = async (labels: Partial<Readonly<Record<string, string | number>>>): Promise<boolean> => {
    const owner = labels[OWNER_LABEL];
    if (owner !== undefined && String(owner) !== caller.name) return false;
    for (const label of JOB_ID_LABELS) {
      const id = labels[label];
      if (id !== undefined && !(await ownsJob(String(id)))) return false;
    }
    return true;
  };
  const scraped: Scraped = await metrics.scrapeValues();
  const kept = await Promise.all(
    scraped.map(async (m) => {
      const seen = await Promise.all(m.values.map((v) => maySee(v.labels)));
      return { ...m, aggregator: 'first' as const, values: m.values.filter((_, k) => seen[k]) };
    }),
  );
  return AggregatorRegistry.aggregate([kept]).metrics();
}
