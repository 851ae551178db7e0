import { enumerateLayouts } from '../mig/geometry.js';
import type { GpuModel } from '../mig/types.js';

/** One instance of a layout as engines and configs name it: a profile at a placement start. */
export interface DemandInstance {
  readonly profile: string;
  readonly start: number;
}

/** A GPU as a cluster engine (Slurm, Kubernetes) reports it. */
export interface DemandGpu {
  /** The caller's name for it, e.g. `node1/0`. */
  readonly key: string;
  readonly model: GpuModel;
  /** Its instances now; null when MIG is off (it is offered as a whole GPU). */
  readonly current: readonly DemandInstance[] | null;
  /** Whether it may be re-partitioned now (all its slices idle and the operator allows it). */
  readonly changeable: boolean;
  /**
   * For a GPU that stays as it is: how many of its current instances of each profile are free
   * (`gpu` for the whole GPU when MIG is off). Absent: none is free.
   */
  readonly free?: Readonly<Record<string, number>>;
}

/** Waiting requests for one kind of slice: a MIG profile name, or `gpu` for a whole GPU. */
export interface SliceDemand {
  readonly profile: string;
  readonly count: number;
}

export interface DemandPlanGpu {
  readonly key: string;
  /** The layout to have: null means MIG off (a whole GPU). */
  readonly layout: readonly DemandInstance[] | null;
  /** Whether it differs from `current`. */
  readonly changed: boolean;
}

export interface DemandPlan {
  readonly gpus: readonly DemandPlanGpu[];
  /** Requests the plan's free slices cover, per profile. */
  readonly served: Readonly<Record<string, number>>;
  /** Requests left waiting, per profile (only profiles with some left). */
  readonly unserved: Readonly<Record<string, number>>;
}

/** The name demand uses for a whole GPU (MIG off). */
export const WHOLE_GPU = 'gpu';

const maximalCache = new Map<string, readonly (readonly DemandInstance[])[]>();

function maximalLayouts(model: GpuModel): readonly (readonly DemandInstance[])[] {
  let layouts = maximalCache.get(model.name);
  if (!layouts) {
    layouts = enumerateLayouts(model, { maximal: true }).map((l) => l.instances.map((i) => ({ profile: i.profile.name, start: i.start })));
    maximalCache.set(model.name, layouts);
  }
  return layouts;
}

function sameLayout(a: readonly DemandInstance[] | null, b: readonly DemandInstance[] | null): boolean {
  if (a === null || b === null) return a === b;
  const key = (l: readonly DemandInstance[]) =>
    l
      .map((i) => `${i.profile}@${i.start}`)
      .sort()
      .join(',');
  return key(a) === key(b);
}

function counts(layout: readonly DemandInstance[] | null): Map<string, number> {
  const m = new Map<string, number>();
  if (layout === null) m.set(WHOLE_GPU, 1);
  else for (const i of layout) m.set(i.profile, (m.get(i.profile) ?? 0) + 1);
  return m;
}

/** Compute slices a request for `profile` needs on `model` (the whole GPU for `gpu`); 0 if the model lacks it. */
function weightOf(model: GpuModel, profile: string): number {
  if (profile === WHOLE_GPU) return model.computeSlices;
  return model.giProfiles.find((p) => p.name === profile)?.computeSlices ?? 0;
}

/** Compute slices of waiting work a layout would serve, given what is still waiting. */
function score(model: GpuModel, layout: readonly DemandInstance[] | null, waiting: ReadonlyMap<string, number>): number {
  let s = 0;
  for (const [profile, n] of counts(layout)) s += Math.min(n, waiting.get(profile) ?? 0) * weightOf(model, profile);
  return s;
}

/** Instances whose profile carries an option (`+me`, `-me`, `+gfx`): kept for when they are asked for. */
function optionCount(layout: readonly DemandInstance[] | null): number {
  return layout === null ? 0 : layout.filter((i) => /[+-]/.test(i.profile)).length;
}

/**
 * Chooses MIG layouts for the changeable GPUs of a cluster so that their free slices cover as much
 * of the waiting demand as possible, weighted by compute slices (a `3g` request counts three times a
 * `1g` one, a whole GPU counts all its slices).
 *
 * Free slices of the GPUs that stay as they are serve the demand first. Then each changeable GPU,
 * in the order given, takes the layout (MIG off, its current one, or a maximal layout of its model)
 * that serves the most of what is still waiting; ties keep the current layout, then prefer layouts
 * without option profiles (`+me`). A GPU that would serve nothing keeps its layout: only what must
 * change changes. Greedy, GPU by GPU: exact for one GPU, and good enough for the handful of idle
 * nodes an engine offers at a time.
 */
export function planLayoutsForDemand(gpus: readonly DemandGpu[], demand: readonly SliceDemand[]): DemandPlan {
  const waiting = new Map<string, number>();
  for (const d of demand) {
    if (!Number.isInteger(d.count) || d.count < 0) throw new RangeError(`demand for ${d.profile}: count must be a whole number ≥ 0, got ${d.count}`);
    if (d.count > 0) waiting.set(d.profile, (waiting.get(d.profile) ?? 0) + d.count);
  }
  const keys = new Set<string>();
  for (const g of gpus) {
    if (keys.has(g.key)) throw new RangeError(`GPU key ${g.key} appears twice`);
    keys.add(g.key);
  }
  const total = new Map(waiting);
  const take = (have: ReadonlyMap<string, number>) => {
    for (const [profile, n] of have) {
      const w = waiting.get(profile) ?? 0;
      if (w > 0) waiting.set(profile, w - Math.min(w, n));
    }
  };

  for (const g of gpus) if (!g.changeable) take(new Map(Object.entries(g.free ?? {})));

  const chosen = new Map<string, readonly DemandInstance[] | null>();
  for (const g of gpus) {
    if (!g.changeable) continue;
    const candidates: (readonly DemandInstance[] | null)[] = [g.current, null, ...maximalLayouts(g.model)];
    let best = g.current;
    let bestScore = score(g.model, g.current, waiting);
    for (const c of candidates) {
      const s = score(g.model, c, waiting);
      if (s > bestScore || (s === bestScore && s > 0 && !sameLayout(best, g.current) && optionCount(c) < optionCount(best))) {
        best = c;
        bestScore = s;
      }
    }
    chosen.set(g.key, best);
    take(counts(best));
  }

  const served: Record<string, number> = {};
  const unserved: Record<string, number> = {};
  for (const [profile, n] of total) {
    const left = waiting.get(profile) ?? 0;
    served[profile] = n - left;
    if (left > 0) unserved[profile] = left;
  }
  return {
    gpus: gpus.map((g) => {
      const layout = chosen.has(g.key) ? chosen.get(g.key)! : g.current;
      return { key: g.key, layout, changed: !sameLayout(layout, g.current) };
    }),
    served,
    unserved,
  };
}
