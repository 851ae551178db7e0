import { badInput } from '../errors.js';
import type { JobSpec, Parallelism, ScaledRun, ScalingModel } from '../sched/types.js';
import { DEFAULT_AMPLIFICATION, DEFAULT_NETWORK } from './cost.js';
import { backgroundShareOf, DEFAULT_MULTIPLEX, multiplex, type MultiplexOptions } from './multiplex.js';
import { planBurst, planDataParallel, singleGpuMs } from './planner.js';
import type { ModelGraph, Network } from './types.js';

/** Settings of the simulator's scaling model. */
export interface ScalingOptions {
  readonly amplification: number;
  readonly network: Network;
  readonly multiplex: MultiplexOptions;
}

export const DEFAULT_SCALING: ScalingOptions = { amplification: DEFAULT_AMPLIFICATION, network: DEFAULT_NETWORK, multiplex: DEFAULT_MULTIPLEX };

/**
 * The simulator's strong-scaling model over the planner: a job with `strongScaling` {model,
 * globalBatch} on N whole GPUs does `work` (seconds alone on one GPU at the global batch) at
 * - data-parallel: T1 / T_dp(N), where T1 is the model's iteration on one GPU at the global batch
 *   and T_dp(N) the data-parallel iteration (every layer on all N GPUs);
 * - burst: T1 / T_burst(N) alone, T1 / (T_burst(N) x slowdown) with background jobs filling its
 *   idle GPU time; each of its GPUs offers a background job its multiplexing share (multiplex.ts).
 * Plans are computed once per (model, batch, N, parallelism) and cached. Pure.
 */
export function createScalingModel(models: readonly ModelGraph[], options: ScalingOptions = DEFAULT_SCALING): ScalingModel {
  const byName = new Map(models.map((m) => [m.name, m]));
  const cache = new Map<string, ScaledRun>();
  return {
    run(job: JobSpec, gpus: number, parallelism: Parallelism): ScaledRun {
      const s = job.strongScaling;
      if (!s) throw badInput(`job '${job.id}' has no strongScaling description`);
      const key = `${s.model}|${s.globalBatch}|${gpus}|${parallelism}`;
      const hit = cache.get(key);
      if (hit) return hit;
      const model = byName.get(s.model);
      if (!model) throw badInput(`job '${job.id}': unknown model '${s.model}' for strong scaling (known: ${[...byName.keys()].join(', ')})`);
      const req = { gpus, globalBatch: s.globalBatch, amplification: options.amplification, network: options.network };
      const t1 = singleGpuMs(model, s.globalBatch);
      let run: ScaledRun;
      if (parallelism === 'data-parallel') {
        const speed = t1 / planDataParallel(model, req).iterationMs;
        run = { soloSpeed: speed, sharedSpeed: speed, backgroundShare: () => 0 };
      } else {
        const m = multiplex(planBurst(model, req), gpus, options.multiplex);
        run = { soloSpeed: t1 / m.soloMs, sharedSpeed: t1 / m.sharedMs, backgroundShare: (rank) => backgroundShareOf(m, rank) };
      }
      cache.set(key, run);
      return run;
    },
  };
}
