/**
 * The bench progress protocol. A workload run by `migpool bench` prints, on stdout, one JSON line
 * per progress report:
 *
 *   {"migpool_samples": 12800}
 *   {"migpool_samples": 25600, "dataset_size": 50000}
 *
 * `migpool_samples` is the number of training samples processed since the job started
 * (cumulative); `dataset_size` (optional, any line) is the samples of one epoch; `migpool_total`
 * (optional, any line) the samples it will process in all (`migpool serve` then shows its progress
 * and an ETA). Any other output
 * is ignored. Report every few iterations (e.g. every 10 or every second). The runner times the
 * lines itself, drops a warm-up, and measures steady-state samples per second. See
 * examples/train_mig.py for a PyTorch script that speaks it.
 */
export interface ProgressReport {
  readonly samples: number;
  readonly datasetSize: number | null;
  /** `migpool_total` (optional): the samples the job will process in all, so that its progress is known. */
  readonly total?: number | null;
}

/** Reads one line of a workload's stdout: a progress report, or null for anything else. */
export function parseProgressLine(line: string): ProgressReport | null {
  const text = line.trim();
  if (!text.startsWith('{') || !text.includes('migpool_samples')) return null;
  try {
    const value = JSON.parse(text) as Record<string, unknown>;
    const samples = value['migpool_samples'];
    const dataset = value['dataset_size'];
    const total = value['migpool_total'];
    if (typeof samples !== 'number' || !Number.isFinite(samples) || samples < 0) return null;
    return { samples, datasetSize: typeof dataset === 'number' && dataset > 0 ? dataset : null, total: typeof total === 'number' && Number.isFinite(total) && total > 0 ? total : null };
  } catch {
    return null;
  }
}

/** A progress report as the runner received it. */
export interface TimedReport {
  /** Seconds since the job started. */
  readonly at: number;
  readonly samples: number;
}

/**
 * Steady-state throughput from timed reports: the samples between the first report at or after
 * the warm-up and the last one, over the time between them. Null with fewer than two reports
 * after the warm-up.
 */
export function steadyThroughput(reports: readonly TimedReport[], warmupSeconds: number): number | null {
  const steady = reports.filter((r) => r.at >= warmupSeconds);
  const first = steady[0];
  const last = steady[steady.length - 1];
  if (!first || !last || last.at <= first.at || last.samples <= first.samples) return null;
  return (last.samples - first.samples) / (last.at - first.at);
}
