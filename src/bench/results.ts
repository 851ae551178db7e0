import { predict } from '../perf/model.js';
import type { Prediction, Resource, Workload } from '../perf/types.js';
import type { GpuModel } from '../mig/types.js';
import type { BenchConfig } from './configs.js';

/** One row of a bench table, predicted or measured. */
export interface ConfigResult {
  readonly name: string;
  readonly jobs: number;
  /** Whether the jobs fit in memory; 'unknown' when the workload's memory is not known (then the speed is shown all the same). */
  readonly fits: boolean | 'unknown';
  /** Time per epoch of each job while it runs; null when it does not fit. */
  readonly epochSeconds: number | null;
  /** Aggregate samples per second of all the config's jobs. */
  readonly samplesPerSecond: number | null;
  /** Aggregate throughput over that of `1xfull`. */
  readonly speedup: number | null;
}

function resourceOf(config: BenchConfig, gpu: GpuModel): Resource {
  switch (config.kind) {
    case 'full':
    case 'serial':
      return { kind: 'full', gpu };
    case 'mig':
      return { kind: 'mig', gpu, profile: config.profile.name };
    case 'timeslice':
    case 'mps':
      return { kind: config.kind, gpu, jobs: config.jobs };
  }
}

/** Aggregate throughput of a config from one job's: N side by side add up, serial jobs do not. */
export function aggregate(config: BenchConfig, perJobSamplesPerSecond: number): number {
  return config.kind === 'serial' ? perJobSamplesPerSecond : perJobSamplesPerSecond * config.jobs;
}

/** The model's answer for each config (`migpool bench --simulate`), speedups against `1xfull`. */
export function predictConfigs(workload: Workload, gpu: GpuModel, configs: readonly BenchConfig[]): { results: ConfigResult[]; caveats: string[] } {
  const full = predict(workload, { kind: 'full', gpu });
  const baseline = full.samplesPerSecond;
  const caveats = new Set<string>(full.caveats);
  const results = configs.map((config) => {
    const p: Prediction = predict(workload, resourceOf(config, gpu));
    for (const c of p.caveats) caveats.add(c);
    const total = p.samplesPerSecond === null ? null : aggregate(config, p.samplesPerSecond);
    return {
      name: config.name,
      jobs: config.jobs,
      fits: p.memoryFit,
      epochSeconds: p.epochSeconds,
      samplesPerSecond: total,
      speedup: total !== null && baseline ? total / baseline : null,
    };
  });
  return { results, caveats: [...caveats] };
}

/** Rows from measurements: per-job throughput and dataset size to epoch time, speedups against `1xfull`. */
export function measuredResults(
  measured: readonly { name: string; jobs: number; perJob: readonly number[]; samplesPerSecond: number; datasetSize: number | null }[],
  datasetSize: number,
): ConfigResult[] {
  const baseline = measured.find((m) => m.name === '1xfull')?.samplesPerSecond ?? null;
  return measured.map((m) => {
    const perJob = m.perJob.reduce((a, b) => a + b, 0) / m.perJob.length;
    return {
      name: m.name,
      jobs: m.jobs,
      fits: true,
      epochSeconds: (m.datasetSize ?? datasetSize) / perJob,
      samplesPerSecond: m.samplesPerSecond,
      speedup: baseline ? m.samplesPerSecond / baseline : null,
    };
  });
}
