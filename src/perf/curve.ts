import type { SpeedCurve } from './types.js';
import { REFERENCE_SLICES } from './resources.js';

/** `(L^p + (work/θ)^p)^(1/p)` for `work` samples' worth of GPU work on the reference GPU, ms. */
function blend(curve: SpeedCurve, work: number): number {
  const a = curve.latencyMs;
  const b = work / curve.peakSamplesPerMs;
  const top = Math.max(a, b);
  if (top <= 0) return 0;
  const p = curve.sharpness;
  return top * ((a / top) ** p + (b / top) ** p) ** (1 / p);
}

/** `T(B) = (L^p + ((B + B0)/θ)^p)^(1/p)`: iteration time on the reference 7-slice A100 at batch `B`, ms. */
export function referenceTime(curve: SpeedCurve, batch: number): number {
  return blend(curve, batch + (curve.fixedSamples ?? 0));
}

/**
 * Iteration time of one job of `batch` samples on a resource of effective `capacity` (A100 compute
 * slices): the GPU work of `batch` (and the fixed work) runs `7 / capacity` times longer than on the
 * reference GPU, the latency does not change ("batch equivalence").
 */
export function iterationTime(curve: SpeedCurve, batch: number, capacity: number): number {
  return blend(curve, ((batch + (curve.fixedSamples ?? 0)) * REFERENCE_SLICES) / capacity);
}

/** The GPU work term alone of iterationTime (no latency floor): the time the GPU is busy, ms. */
export function gpuWorkTime(curve: SpeedCurve, batch: number, capacity: number): number {
  return ((batch + (curve.fixedSamples ?? 0)) * REFERENCE_SLICES) / capacity / curve.peakSamplesPerMs;
}

/**
 * The curve of the same job doing `factor` times the GPU work per sample (a larger input, a deeper
 * net): batch B then runs like batch `factor * B` of the original, fixed work unchanged.
 */
export function scaleWork(curve: SpeedCurve, factor: number): SpeedCurve {
  const fixed = curve.fixedSamples ?? 0;
  return { ...curve, peakSamplesPerMs: curve.peakSamplesPerMs / factor, ...(fixed > 0 ? { fixedSamples: fixed / factor } : {}) };
}

/**
 * The curve of a model that takes `factor` times as long per iteration at every batch: latency
 * and per-sample work both scale (e.g. a network with `factor` times the layers of the same kind).
 */
export function scaleTime(curve: SpeedCurve, factor: number): SpeedCurve {
  return { ...curve, latencyMs: curve.latencyMs * factor, peakSamplesPerMs: curve.peakSamplesPerMs / factor };
}
