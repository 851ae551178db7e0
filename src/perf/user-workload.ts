import { isMap, isSeq, LineCounter, parseDocument, stringify } from 'yaml';
import { z } from 'zod';
import { badInput } from '../errors.js';
import { fieldPath, firstIssue, plainWords } from '../schema-words.js';
import { resolveGpuModel } from '../mig/catalog/index.js';
import { DEFAULT_MEMORY_BOUND_SHARE } from './calibrated.js';
import { fitCurve, type CurvePoint } from './fit.js';
import { effectiveCapacity, resourceShape } from './resources.js';
import type { Resource, SharingPoint, SpeedCurve, Workload } from './types.js';

/** A measured iteration time: on a resource, or on a resource of known effective capacity. */
export type MeasuredPoint = {
  readonly iterationMs: number;
  /** Batch of the measurement; the workload's batch when absent. */
  readonly batchSize?: number;
} & ({ readonly resource: Resource } | { readonly capacity: number });

/** Options of a user workload. */
export interface UserWorkloadOptions {
  readonly memoryGiB?: number | null;
  /** Measured NxTIMESLICE / NxMPS iteration times (they replace the model's). */
  readonly sharing?: readonly SharingPoint[];
  readonly memoryBoundShare?: number;
  readonly description?: string;
}

function capacityOf(point: MeasuredPoint, m: number): number {
  if ('capacity' in point) return point.capacity;
  const r = point.resource;
  if (r.kind === 'timeslice' || r.kind === 'mps') throw badInput(`a measured point must be on a MIG instance or a whole GPU, not ${r.kind}`);
  return effectiveCapacity(resourceShape(r.gpu, r.kind === 'mig' ? r.profile : null), m);
}

/**
 * A workload fitted to a few measured iteration times (at least one; three or more on different
 * instance sizes pin the curve down). The memory-bound share is not fitted: 0.5 unless given.
 */
export function workloadFromPoints(name: string, batchSize: number, datasetSize: number, points: readonly MeasuredPoint[], options: UserWorkloadOptions = {}): Workload {
  if (!(batchSize > 0) || !(datasetSize > 0)) throw badInput(`workload '${name}': batchSize and datasetSize must be positive`);
  if (points.length === 0) throw badInput(`workload '${name}': give at least one measured point`);
  const m = options.memoryBoundShare ?? DEFAULT_MEMORY_BOUND_SHARE;
  const curvePoints: CurvePoint[] = points.map((p) => ({ batch: p.batchSize ?? batchSize, capacity: capacityOf(p, m), iterationMs: p.iterationMs }));
  return {
    name,
    aliases: [],
    description: options.description ?? `${name}, batch ${batchSize} (user workload)`,
    batchSize,
    datasetSize,
    curve: fitCurve(curvePoints, m),
    memoryGiB: options.memoryGiB ?? null,
    ...(options.sharing && options.sharing.length > 0 ? { sharing: options.sharing } : {}),
    source: `fitted to ${points.length} measured point(s)`,
  };
}

/** A point as the YAML file holds it: a GPU (any name the catalogue knows) and `full` or a profile. */
export interface YamlPoint {
  readonly gpu: string;
  readonly profile: string;
  readonly iterationMs: number;
  readonly batchSize?: number;
}

const positive = z.number().positive();
const SCHEMA = z
  .object({
    name: z.string().min(1),
    description: z.string().optional(),
    batchSize: z.number().int().positive(),
    datasetSize: z.number().int().positive(),
    memoryGiB: positive.nullable().optional(),
    memoryBoundShare: z.number().min(0).max(1).optional(),
    points: z
      .array(z.object({ gpu: z.string().min(1), profile: z.string().min(1), iterationMs: positive, batchSize: z.number().int().positive().optional() }).strict())
      .optional(),
    curve: z.object({ latencyMs: z.number().min(0), peakSamplesPerMs: positive, sharpness: positive }).strict().optional(),
    sharing: z
      .array(z.object({ gpu: z.string().min(1), kind: z.enum(['timeslice', 'mps']), jobs: z.number().int().positive(), iterationMs: positive }).strict())
      .optional(),
  })
  .strict();

/**
 * Reads a workload file as `migpool bench --out` writes it:
 * ```yaml
 * name: my-resnet            # required
 * description: ...           # optional
 * batchSize: 128             # samples per iteration, required
 * datasetSize: 50000         # samples per epoch, required
 * memoryGiB: 4.75            # memory one job needs; null or absent: unknown (fit 'unknown')
 * memoryBoundShare: 0.5      # optional, 0..1
 * points:                    # measured iteration times; the curve is fitted to them
 *   - { gpu: A100-SXM4-40GB, profile: 1g.5gb, iterationMs: 64.8 }
 *   - { gpu: A100-SXM4-40GB, profile: full, iterationMs: 28.1, batchSize: 128 }
 * curve:                     # the fitted curve, for people; used only when there are no points
 *   { latencyMs: 27.5, peakSamplesPerMs: 23.9, sharpness: 1.5 }
 * sharing:                   # optional: one job's iteration time among N sharing a whole GPU;
 *   - { gpu: A100-SXM4-40GB, kind: mps, jobs: 4, iterationMs: 70.2 }   # replaces the model's NxMPS
 *   - { gpu: A100-SXM4-40GB, kind: timeslice, jobs: 2, iterationMs: 61 }
 * ```
 * Errors name `file:line` and the field.
 */
export function parseWorkloadYaml(text: string, file: string): Workload {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines });
  const lineOf = (path: readonly PropertyKey[]): number | null => {
    let node: unknown = doc.contents;
    let line: number | null = null;
    for (const key of path) {
      if (isMap(node)) node = node.get(key, true);
      else if (isSeq(node) && typeof key === 'number') node = node.get(key, true);
      else break;
      const range = (node as { range?: [number, number, number] } | undefined)?.range;
      if (range) line = lines.linePos(range[0]).line;
    }
    return line;
  };
  if (doc.errors.length > 0) {
    const e = doc.errors[0];
    throw badInput(`${file}:${e?.linePos?.[0]?.line ?? 1}: not valid YAML: ${e?.message.split('\n')[0] ?? ''}`);
  }
  const parsed = SCHEMA.safeParse(doc.toJS(), { error: plainWords });
  if (!parsed.success) {
    const issue = firstIssue(parsed.error.issues);
    const path = issue?.path ?? [];
    const line = lineOf(path) ?? 1;
    throw badInput(`${file}:${line}: ${fieldPath(path)}: ${issue?.message ?? 'invalid'}; a workload file is what 'migpool bench --out' writes`);
  }
  const w = parsed.data;
  const m = w.memoryBoundShare ?? DEFAULT_MEMORY_BOUND_SHARE;
  const sharing: SharingPoint[] = (w.sharing ?? []).map((p, i) => {
    try {
      return { gpu: resolveGpuModel(p.gpu).name, kind: p.kind, jobs: p.jobs, iterationMs: p.iterationMs };
    } catch (e) {
      throw badInput(`${file}:${lineOf(['sharing', i]) ?? 1}: sharing[${i}].gpu: ${(e as Error).message}`);
    }
  });
  const withSharing = (wl: Workload): Workload => (sharing.length > 0 ? { ...wl, sharing } : wl);
  const options = { memoryGiB: w.memoryGiB ?? null, memoryBoundShare: m, ...(w.description !== undefined ? { description: w.description } : {}) };
  if (w.points && w.points.length > 0) {
    const points: MeasuredPoint[] = w.points.map((p, i) => {
      const at = `${file}:${lineOf(['points', i]) ?? 1}: points[${i}]`;
      let gpu;
      try {
        gpu = resolveGpuModel(p.gpu);
      } catch (e) {
        throw badInput(`${at}.gpu: ${(e as Error).message}`);
      }
      const resource: Resource = p.profile.toLowerCase() === 'full' ? { kind: 'full', gpu } : { kind: 'mig', gpu, profile: p.profile };
      try {
        resourceShape(gpu, resource.kind === 'mig' ? resource.profile : null);
      } catch (e) {
        throw badInput(`${at}.profile: ${(e as Error).message}`);
      }
      return { resource, iterationMs: p.iterationMs, ...(p.batchSize !== undefined ? { batchSize: p.batchSize } : {}) };
    });
    return withSharing({ ...workloadFromPoints(w.name, w.batchSize, w.datasetSize, points, options), source: `${file}: fitted to ${points.length} measured point(s)` });
  }
  if (!w.curve) throw badInput(`${file}:1: give 'points' (measured iteration times) or a 'curve'`);
  const curve: SpeedCurve = { ...w.curve, memoryBoundShare: m };
  return withSharing({
    name: w.name,
    aliases: [],
    description: options.description ?? `${w.name}, batch ${w.batchSize} (user workload)`,
    batchSize: w.batchSize,
    datasetSize: w.datasetSize,
    curve,
    memoryGiB: options.memoryGiB,
    source: `${file}: curve as written`,
  });
}

const round = (x: number, digits = 4): number => Number(x.toPrecision(digits));

/** The YAML text of a workload and the points it was measured at (read back by parseWorkloadYaml). */
export function workloadToYaml(workload: Workload, points: readonly YamlPoint[]): string {
  const body = {
    name: workload.name,
    description: workload.description,
    batchSize: workload.batchSize,
    datasetSize: workload.datasetSize,
    memoryGiB: workload.memoryGiB,
    memoryBoundShare: workload.curve.memoryBoundShare,
    points: points.map((p) => ({ gpu: p.gpu, profile: p.profile, iterationMs: round(p.iterationMs, 6), ...(p.batchSize !== undefined ? { batchSize: p.batchSize } : {}) })),
    curve: { latencyMs: round(workload.curve.latencyMs), peakSamplesPerMs: round(workload.curve.peakSamplesPerMs), sharpness: workload.curve.sharpness },
    ...(workload.sharing && workload.sharing.length > 0 ? { sharing: workload.sharing.map((p) => ({ ...p, iterationMs: round(p.iterationMs, 6) })) } : {}),
  };
  return `# migpool workload: measured points and the speed curve fitted to them (migpool bench --out)\n${stringify(body)}`;
}
