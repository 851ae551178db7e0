/**
 * The packing problem in the shape the solvers use: identical GPUs grouped by model, identical jobs
 * grouped into classes, profiles with the same speed for every job merged into one slot type, and
 * each model's candidate layouts as counts of slot types.
 */
import { badInput } from '../errors.js';
import { enumerateLayouts, type Layout } from '../mig/geometry.js';
import type { GpuModel } from '../mig/types.js';
import { FULL_GPU, type PackingProblem } from './types.js';

/** Interchangeable places on one model: profiles every job runs on at the same speed, or the whole GPU. */
export interface SlotType {
  readonly model: number;
  /** Profile names (or [`full`]) in catalogue order. */
  readonly profiles: readonly string[];
}

/** A layout a GPU of a model may take: a maximal MIG layout, or MIG off (`layout` null). */
export interface LayoutOption {
  readonly layout: Layout | null;
  /** How many slots of each of the model's slot types it offers, parallel to `ModelGroup.slotTypes`. */
  readonly counts: readonly number[];
}

export interface ModelGroup {
  readonly model: GpuModel;
  /** Indices of its GPUs in the problem, ascending. */
  readonly gpus: readonly number[];
  /** Indices into `Compiled.slotTypes`. */
  readonly slotTypes: readonly number[];
  readonly options: readonly LayoutOption[];
}

export interface JobClass {
  /** Indices of its jobs in the problem, ascending. */
  readonly jobs: readonly number[];
  readonly weight: number;
}

export interface Compiled {
  readonly models: readonly ModelGroup[];
  readonly slotTypes: readonly SlotType[];
  readonly classes: readonly JobClass[];
  /** Weighted speed of one job of class c on slot type t: `value[c * slotTypes.length + t]`. */
  readonly value: Float64Array;
  /** 1 where class c runs on slot type t at all (speed above 0), same indexing. */
  readonly fits: Uint8Array;
  readonly placeAll: boolean;
}

function speedOf(speeds: Readonly<Record<string, Readonly<Record<string, number>>>>, model: string, slot: string): number {
  return speeds[model]?.[slot] ?? 0;
}

function checkJobs(problem: PackingProblem): void {
  problem.jobs.forEach((job, j) => {
    const w = job.weight ?? 1;
    if (!Number.isFinite(w) || w < 0) throw badInput(`job ${j}${job.name ? ` (${job.name})` : ''}: weight ${w} is not a non-negative number`);
    for (const [model, bySlot] of Object.entries(job.speeds)) {
      for (const [slot, s] of Object.entries(bySlot)) {
        if (!Number.isFinite(s) || s < 0) {
          throw badInput(`job ${j}${job.name ? ` (${job.name})` : ''}: speed ${s} on ${model} ${slot} is not a non-negative number`);
        }
      }
    }
  });
}

/**
 * Among layouts that offer the same slots, the plainest is kept: fewest instances of variant
 * profiles (`+me`, `-me`, `+gfx`), then fewest distinct profiles.
 */
function plainness(layout: Layout): number {
  const names = layout.instances.map((i) => i.profile.name);
  return 100 * names.filter((n) => /[+-]/.test(n)).length + new Set(names).size;
}

/** Keeps options whose slot counts no other option covers (extra idle slots never lower the objective). */
function undominated(options: readonly LayoutOption[]): LayoutOption[] {
  const covers = (a: LayoutOption, b: LayoutOption) => a.counts.every((n, i) => n >= (b.counts[i] ?? 0));
  const kept: LayoutOption[] = [];
  options.forEach((o, i) => {
    const beaten = options.some((p, k) => k !== i && covers(p, o) && (!covers(o, p) || k < i));
    if (!beaten) kept.push(o);
  });
  return kept;
}

/** Groups GPUs, jobs and profiles; see the file comment. */
export function compile(problem: PackingProblem): Compiled {
  checkJobs(problem);
  const byModel = new Map<string, { model: GpuModel; gpus: number[] }>();
  problem.gpus.forEach((model, g) => {
    const entry = byModel.get(model.name) ?? { model, gpus: [] };
    entry.gpus.push(g);
    byModel.set(model.name, entry);
  });

  const classIndex = new Map<string, number>();
  const classes: { jobs: number[]; weight: number; rep: number }[] = [];
  problem.jobs.forEach((job, j) => {
    const weight = job.weight ?? 1;
    const parts: string[] = [String(weight)];
    for (const { model } of byModel.values()) {
      parts.push(speedOf(job.speeds, model.name, FULL_GPU).toString());
      for (const p of model.giProfiles) parts.push(speedOf(job.speeds, model.name, p.name).toString());
    }
    const key = parts.join(',');
    const found = classIndex.get(key);
    if (found !== undefined) classes[found]?.jobs.push(j);
    else {
      classIndex.set(key, classes.length);
      classes.push({ jobs: [j], weight, rep: j });
    }
  });

  const slotTypes: { model: number; profiles: string[] }[] = [];
  const columns: number[][] = [];
  const fitColumns: boolean[][] = [];
  const models: ModelGroup[] = [];
  for (const { model, gpus } of byModel.values()) {
    const m = models.length;
    const speedColumn = (slot: string) => classes.map((c) => speedOf(problem.jobs[c.rep]?.speeds ?? {}, model.name, slot));
    const typeOfSlot = new Map<string, number>();
    const local: number[] = [];
    const addType = (profiles: string[], speeds: number[]) => {
      local.push(slotTypes.length);
      slotTypes.push({ model: m, profiles });
      columns.push(speeds.map((s, c) => s * (classes[c]?.weight ?? 0)));
      fitColumns.push(speeds.map((s) => s > 0));
      return local.length - 1;
    };
    typeOfSlot.set(FULL_GPU, addType([FULL_GPU], speedColumn(FULL_GPU)));
    const byColumn = new Map<string, number>();
    for (const p of model.giProfiles) {
      const col = speedColumn(p.name);
      const key = col.join(',');
      const same = byColumn.get(key);
      if (same !== undefined) {
        slotTypes[local[same] ?? -1]?.profiles.push(p.name);
        typeOfSlot.set(p.name, same);
      } else {
        const t = addType([p.name], col);
        byColumn.set(key, t);
        typeOfSlot.set(p.name, t);
      }
    }
    const countsOf = (slots: readonly string[]) => {
      const counts = local.map(() => 0);
      for (const s of slots) {
        const t = typeOfSlot.get(s) ?? 0;
        counts[t] = (counts[t] ?? 0) + 1;
      }
      return counts;
    };
    const options: LayoutOption[] = [
      { layout: null, counts: countsOf([FULL_GPU]) },
      ...enumerateLayouts(model, { maximal: true })
        .sort((a, b) => plainness(a) - plainness(b))
        .map((layout) => ({ layout, counts: countsOf(layout.instances.map((i) => i.profile.name)) })),
    ];
    models.push({ model, gpus, slotTypes: local, options: undominated(options) });
  }

  const T = slotTypes.length;
  const value = new Float64Array(classes.length * T);
  const fits = new Uint8Array(classes.length * T);
  classes.forEach((_, c) =>
    columns.forEach((col, t) => {
      value[c * T + t] = col[c] ?? 0;
      fits[c * T + t] = fitColumns[t]?.[c] ? 1 : 0;
    }),
  );
  return {
    models,
    slotTypes,
    classes: classes.map(({ jobs, weight }) => ({ jobs, weight })),
    value,
    fits,
    placeAll: problem.placeAll ?? false,
  };
}

/** Slot counts of a solution: for each model, how many GPUs take each of its layout options. */
export type LayoutCounts = readonly (readonly number[])[];

/** Units of class c on slot type t: `flow[c * slotTypes.length + t]`. */
export type Flow = Float64Array;

/** Slots of each type that layout counts offer. */
export function capacities(compiled: Compiled, counts: LayoutCounts): number[] {
  const cap = compiled.slotTypes.map(() => 0);
  compiled.models.forEach((group, m) => {
    group.options.forEach((o, l) => {
      const n = counts[m]?.[l] ?? 0;
      if (n === 0) return;
      o.counts.forEach((k, i) => {
        const t = group.slotTypes[i] ?? 0;
        cap[t] = (cap[t] ?? 0) + n * k;
      });
    });
  });
  return cap;
}

/** Objective of a flow. */
export function flowValue(compiled: Compiled, flow: Flow): number {
  let total = 0;
  for (let i = 0; i < flow.length; i++) total += (flow[i] ?? 0) * (compiled.value[i] ?? 0);
  return total;
}
