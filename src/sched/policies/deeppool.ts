import type { Policy } from '../types.js';
import { foregroundFirstPolicy } from './dp.js';

/**
 * `deeppool`: DeepPool's two ideas (Park et al., MLSys 2022) as a cluster policy. Foreground jobs
 * first on whole GPUs as in `dp`, but a multi-GPU foreground job with `strongScaling` runs a
 * burst-parallel plan (src/burst/planner.ts), and single-GPU background jobs fill the GPU time
 * it leaves idle, beside it at low priority, while it stays within its slowdown bound
 * (src/burst/multiplex.ts). Background jobs take idle whole GPUs first, then the burst jobs' GPUs
 * with the best background share. Without a scaling model in the context (the live service) it
 * behaves as `dp`. See foregroundFirstPolicy.
 */
export function deeppoolPolicy(): Policy {
  return foregroundFirstPolicy('deeppool', true);
}
