import { AggregatorRegistry, type Registry } from 'prom-client';
import type { PoolService } from '../control/service-port.js';
import type { ServerMetrics } from './metrics.js';
import { canSee, type Caller } from './users.js';

/** Labels whose value is a job's id: `hpc_job` (joins dcgm-exporter's series), `job` (MPS slowdowns). */
export const JOB_ID_LABELS: readonly string[] = ['hpc_job', 'job'];
/** The label whose value is a job's owner, or the user a per-user series is about. */
export const OWNER_LABEL = 'user';

/**
 * The `user` of other users' series in a user's scrape, their values summed (counts, allocations,
 * weights, histograms' buckets): the pool's totals stay `sum without (user)`, with no name in them.
 * Not a possible user name (those start with a letter: `migpool users add`).
 */
export const OTHER_USERS = '(others)';

/** Per-user series where a sum over users means nothing (a user without a quota has no series): others' are left out. */
const NOT_SUMMED: ReadonlySet<string> = new Set(['migpool_user_quota_gpus']);

type Scraped = Awaited<ReturnType<Registry['getMetricsAsJSON']>>;
type Labels = Scraped[number]['values'][number]['labels'];

/**
 * GET /metrics as `caller` may see it, as GET /v1/gpus (visible-gpus.ts) shows GPUs: an admin
 * gets every series. Another user gets every series that names no user and no job (the pool's:
 * allocation per GPU and instance, slices, pass times, re-partitions, build and process); the
 * series of a job (`hpc_job`, `job`) only for their own jobs (each job's owner looked up once);
 * and the per-user series (`user`) with their own name, and other users' summed under
 * {@link OTHER_USERS}. No other user's name or job id is in it. The series are written by
 * prom-client itself: {@link AggregatorRegistry.aggregate} sums values whose labels are equal (as
 * it does across a cluster's workers), so over one scrape it changes only the values relabelled
 * (`sum` for every metric: each other value has labels of its own).
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
  /** The labels the caller sees a value under, or null when they do not see it. */
  const shown = async (metric: string, labels: Labels): Promise<Labels | null> => {
    for (const label of JOB_ID_LABELS) {
      const id = labels[label];
      if (id !== undefined && !(await ownsJob(String(id)))) return null;
    }
    const owner = labels[OWNER_LABEL];
    if (owner === undefined || String(owner) === caller.name) return labels;
    return NOT_SUMMED.has(metric) ? null : { ...labels, [OWNER_LABEL]: OTHER_USERS };
  };
  const scraped: Scraped = await metrics.scrapeValues();
  const kept = await Promise.all(
    scraped.map(async (m) => {
      const labels = await Promise.all(m.values.map((v) => shown(m.name, v.labels)));
      const values = m.values.flatMap((v, k) => (labels[k] ? [{ ...v, labels: labels[k] }] : []));
      return { ...m, aggregator: 'sum' as const, values };
    }),
  );
  return AggregatorRegistry.aggregate([kept]).metrics();
}
