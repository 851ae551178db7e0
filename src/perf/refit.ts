import { badInput } from '../errors.js';
import { fitCurve, type CurvePoint } from './fit.js';
import { iterationTime, scaleTime } from './curve.js';
import { effectiveCapacity, resourceShape } from './resources.js';
import type { Resource, Workload } from './types.js';

/** What a running job told about its workload: an iteration time on a resource, and/or the memory it used. */
export interface ObservedPoint {
  readonly resource: Resource;
  readonly iterationMs: number;
  /** Batch of the observation; the workload's when absent. */
  readonly batchSize?: number;
}

/** Distinct resources (by effective capacity) needed before the curve's shape is refitted rather than rescaled. */
export const POINTS_FOR_SHAPE = 3;

function capacityOf(r: Resource, m: number): number {
  if (r.kind === 'timeslice' || r.kind === 'mps') throw badInput(`an observed point must be on a MIG instance or a whole GPU, not ${r.kind}`);
  return effectiveCapacity(resourceShape(r.gpu, r.kind === 'mig' ? r.profile : null), m);
}

/**
 * `workload` refitted to what its jobs measured (pure; the service calls it as points arrive).
 * With points on at least POINTS_FOR_SHAPE resources of different capacity the whole curve is
 * fitted to them; with fewer, the model's curve keeps its shape (its slice-to-slice ratios) and
 * is scaled in time by the geometric mean of measured over predicted, which corrects the
 * absolute time a proxy gets wrong. `peakMemoryGiB` (the largest per-process memory seen) raises
 * the memory need, never lowers it below a bound already known.
 */
export function refitWorkload(workload: Workload, points: readonly ObservedPoint[], peakMemoryGiB: number | null = null): Workload {
  const m = workload.curve.memoryBoundShare;
  const cps: CurvePoint[] = points
    .filter((p) => p.iterationMs > 0)
    .map((p) => ({ batch: p.batchSize ?? workload.batchSize, capacity: capacityOf(p.resource, m), iterationMs: p.iterationMs }));
  let curve = workload.curve;
  let how = '';
  if (cps.length > 0) {
    const capacities = new Set(cps.map((p) => p.capacity.toFixed(6))).size;
    if (capacities >= POINTS_FOR_SHAPE) {
      curve = fitCurve(cps, m);
      how = `curve refitted to ${cps.length} observed point(s)`;
    } else {
      const logRatio = cps.reduce((s, p) => s + Math.log(p.iterationMs / iterationTime(workload.curve, p.batch, p.capacity)), 0) / cps.length;
      curve = scaleTime(workload.curve, Math.exp(logRatio));
      how = `time scaled x${Math.exp(logRatio).toFixed(3)} to ${cps.length} observed point(s)`;
    }
  }
  let memoryGiB = workload.memoryGiB;
  if (peakMemoryGiB !== null && peakMemoryGiB > 0 && (memoryGiB === null || peakMemoryGiB > memoryGiB)) {
    memoryGiB = Math.ceil(peakMemoryGiB * 100) / 100;
    how += `${how ? '; ' : ''}memory raised to the observed peak`;
  }
  if (!how) return workload;
  return { ...workload, curve, memoryGiB, source: `${workload.source}; learned: ${how}` };
}

/**
 * The workload after one of its jobs ran out of memory on an instance of `instanceGiB`: its need
 * is raised just above that, so it is no longer placed there (the service requeues it on a larger one).
 */
export function raiseMemoryAfterOom(workload: Workload, instanceGiB: number): Workload {
  const above = Math.ceil(instanceGiB * 100 + 1) / 100;
  if (workload.memoryGiB !== null && workload.memoryGiB >= above) return workload;
  return { ...workload, memoryGiB: above, memorySource: `raised after running out of memory on a ${instanceGiB} GiB instance`, source: `${workload.source}; learned: out of memory on ${instanceGiB} GiB` };
}
