import { badInput } from '../errors.js';
import { iterationTime } from './curve.js';
import type { SpeedCurve } from './types.js';

/** One measured iteration time: a batch on a resource of known effective capacity. */
export interface CurvePoint {
  readonly batch: number;
  /** Effective capacity in A100 compute slices (resources.ts). */
  readonly capacity: number;
  readonly iterationMs: number;
}

/** Largest fixed work accepted, in multiples of the largest measured batch. */
const MAX_FIXED_PER_BATCH = 4;

/** Sharpness values tried by the fit: 1 adds latency and work, 8 is nearly their maximum. */
export const SHARPNESS_GRID: readonly number[] = [1, 1.25, 1.5, 2, 3, 4, 6, 8];

/** Minimises `f` from `start` by Nelder–Mead (deterministic: fixed initial simplex, fixed iterations). */
export function nelderMead(f: (x: readonly number[]) => number, start: readonly number[], step: number, iterations = 400): { x: number[]; value: number } {
  const n = start.length;
  let simplex = [start.slice(), ...start.map((_, i) => start.map((v, j) => (i === j ? v + step : v)))].map((x) => ({ x, v: f(x) }));
  const at = (a: number[], b: number[], t: number): number[] => a.map((ai, i) => ai + t * ((b[i] ?? 0) - ai));
  for (let k = 0; k < iterations; k++) {
    simplex.sort((a, b) => a.v - b.v);
    const best = simplex[0];
    const worst = simplex[n];
    const second = simplex[n - 1];
    if (!best || !worst || !second) break;
    if (Math.abs(worst.v - best.v) < 1e-12) break;
    const centroid = start.map((_, i) => simplex.slice(0, n).reduce((s, p) => s + (p.x[i] ?? 0), 0) / n);
    const reflect = at(centroid, worst.x, -1);
    const fr = f(reflect);
    if (fr < best.v) {
      const expand = at(centroid, worst.x, -2);
      const fe = f(expand);
      simplex[n] = fe < fr ? { x: expand, v: fe } : { x: reflect, v: fr };
    } else if (fr < second.v) {
      simplex[n] = { x: reflect, v: fr };
    } else {
      const contract = fr < worst.v ? at(centroid, worst.x, -0.5) : at(centroid, worst.x, 0.5);
      const fc = f(contract);
      if (fc < Math.min(fr, worst.v)) {
        simplex[n] = { x: contract, v: fc };
      } else {
        simplex = simplex.map((p, i) => (i === 0 ? p : { x: at(best.x, p.x, 0.5), v: f(at(best.x, p.x, 0.5)) }));
      }
    }
  }
  simplex.sort((a, b) => a.v - b.v);
  const top = simplex[0];
  return { x: top?.x ?? start.slice(), value: top?.v ?? f(start) };
}

function sumSquaredLogError(curve: SpeedCurve, points: readonly CurvePoint[]): number {
  let s = 0;
  for (const p of points) {
    const e = Math.log(iterationTime(curve, p.batch, p.capacity)) - Math.log(p.iterationMs);
    s += e * e;
  }
  return s;
}

/**
 * Fits latency, peak throughput, sharpness and (when the points span resources of different
 * capacity) fixed work to measured points, minimising the squared log error
 * of the iteration time. Sharpness comes from SHARPNESS_GRID; for each, (log L, log θ) are found by
 * Nelder–Mead from a start read off the data, then restarted once from the optimum. One point fixes
 * only the throughput (latency 0): the fit says so through its error being zero by construction.
 */
export function fitCurve(points: readonly CurvePoint[], memoryBoundShare: number): SpeedCurve {
  const valid = points.filter((p) => p.batch > 0 && p.capacity > 0 && p.iterationMs > 0);
  if (valid.length === 0) throw badInput('fitting a speed curve needs at least one point with positive batch, capacity and time');
  const rate = Math.max(...valid.map((p) => (p.batch * 7) / p.capacity / p.iterationMs));
  if (valid.length === 1) return { latencyMs: 0, peakSamplesPerMs: rate, sharpness: 1, memoryBoundShare };
  const floor = Math.min(...valid.map((p) => p.iterationMs));
  // Fixed work is only identifiable when the points span resources of different capacity.
  const spansCapacities = new Set(valid.map((p) => p.capacity.toFixed(6))).size > 1;
  let best: { curve: SpeedCurve; err: number } | null = null;
  for (const sharpness of SHARPNESS_GRID) {
    for (const withFixed of spansCapacities ? [false, true] : [false]) {
      const curveAt = (x: readonly number[]): SpeedCurve => ({
        latencyMs: Math.exp(x[0] ?? 0),
        peakSamplesPerMs: Math.exp(x[1] ?? 0),
        sharpness,
        memoryBoundShare,
        ...(withFixed ? { fixedSamples: Math.exp(x[2] ?? 0) } : {}),
      });
      const f = (x: readonly number[]): number => sumSquaredLogError(curveAt(x), valid);
      const start = [Math.log(floor * 0.8), Math.log(rate * 1.2), ...(withFixed ? [Math.log(Math.min(...valid.map((p) => p.batch)))] : [])];
      let run = nelderMead(f, start, 0.5, 600);
      run = nelderMead(f, run.x, 0.1, 600);
      const curve = curveAt(run.x);
      // A fixed work far beyond the batches measured is a degenerate fit (noisy data), not a finding.
      if (withFixed && (curve.fixedSamples ?? 0) > MAX_FIXED_PER_BATCH * Math.max(...valid.map((p) => p.batch))) continue;
      if (!best || run.value < best.err - 1e-9) best = { curve, err: run.value };
    }
  }
  if (!best) throw new Error('unreachable: empty sharpness grid');
  return best.curve;
}

/** Mean and maximum relative error of the iteration time over `points`. */
export function relativeErrors(curve: SpeedCurve, points: readonly CurvePoint[]): { mean: number; max: number } {
  const errs = points.map((p) => Math.abs(iterationTime(curve, p.batch, p.capacity) / p.iterationMs - 1));
  return { mean: errs.reduce((s, e) => s + e, 0) / Math.max(1, errs.length), max: Math.max(0, ...errs) };
}
