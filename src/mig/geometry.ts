import type { GiProfile, GpuModel } from './types.js';

/** One GPU instance of a layout: a profile at a placement (`start`, `size` in `-lgipp` units). */
export interface PlacedInstance {
  readonly profile: GiProfile;
  readonly start: number;
  readonly size: number;
}

/** The outcome of placing profiles on a GPU. */
export type PlacementOutcome =
  | { readonly valid: true; readonly placements: readonly PlacedInstance[] }
  | { readonly valid: false; readonly reason: string };

type EngineKey = 'copyEngines' | 'decoders' | 'encoders' | 'jpeg' | 'ofa';
const ENGINE_LABELS: Readonly<Record<EngineKey, string>> = {
  copyEngines: 'copy engines',
  decoders: 'decoders',
  encoders: 'encoders',
  jpeg: 'JPEG decoders',
  ofa: 'optical-flow accelerators',
};

/** `2g.10gb@0:2`, the way migpool prints an instance (`-lgi` prints the placement as `0:2`). */
export function describeInstance(i: PlacedInstance): string {
  return `${i.profile.name} at ${i.start}:${i.size}`;
}

function overlaps(a: { start: number; size: number }, b: { start: number; size: number }): boolean {
  return a.start < b.start + b.size && b.start < a.start + a.size;
}

/**
 * The engines a whole GPU has with MIG on: those of its full-size profile (the plain `7g`/`4g`
 * profile that spans all placement units). Null entries are unknown and not enforced.
 */
function engineBudget(model: GpuModel): Partial<Record<EngineKey, number>> {
  const full = model.giProfiles.find((p) => p.placements.some((pl) => pl.start === 0 && pl.size === model.placementUnits) && !/[+-]/.test(p.name));
  const budget: Partial<Record<EngineKey, number>> = {};
  if (!full) return budget;
  for (const key of Object.keys(ENGINE_LABELS) as EngineKey[]) {
    const v = full[key];
    if (v !== null) budget[key] = v;
  }
  return budget;
}

/**
 * Checks the counting limits a set of profiles must meet whatever the placement: per-profile
 * maximum counts, compute slices, memory and engines. Returns the first violation or null.
 */
export function countingViolation(model: GpuModel, profiles: readonly GiProfile[]): string | null {
  const counts = new Map<string, number>();
  for (const p of profiles) counts.set(p.name, (counts.get(p.name) ?? 0) + 1);
  for (const [name, n] of counts) {
    const p = profiles.find((q) => q.name === name);
    if (p && n > p.maxCount) return `${model.name} allows at most ${p.maxCount} × ${name}, ${n} requested`;
  }
  const compute = profiles.reduce((s, p) => s + p.computeSlices, 0);
  if (compute > model.computeSlices) {
    return `the profiles need ${compute} compute slices and ${model.name} has ${model.computeSlices}`;
  }
  const units = profiles.reduce((s, p) => s + (p.placements[0]?.size ?? 0), 0);
  if (units > model.placementUnits) {
    const per = model.placementUnits / model.memorySlices;
    return `the profiles need ${units / per} memory slices and ${model.name} has ${model.memorySlices}`;
  }
  const budget = engineBudget(model);
  for (const key of Object.keys(budget) as EngineKey[]) {
    const have = budget[key] ?? 0;
    if (profiles.some((p) => p[key] === null)) continue;
    const need = profiles.reduce((s, p) => s + (p[key] ?? 0), 0);
    if (need > have) return `the profiles need ${need} ${ENGINE_LABELS[key]} and ${model.name} has ${have}`;
  }
  return null;
}

/** Larger instances and those with fewer positions first: the search then fails fast. */
function placementOrder(a: GiProfile, b: GiProfile): number {
  const sa = a.placements[0]?.size ?? 0;
  const sb = b.placements[0]?.size ?? 0;
  return sb - sa || a.placements.length - b.placements.length || a.name.localeCompare(b.name);
}

/**
 * Places `profiles` on a GPU that already holds `existing` (kept where they are). Returns one
 * concrete placement of the new instances (existing ones first, then the new ones, in placement
 * order), or why none exists: a counting limit, or which instances take the slices a profile needs.
 */
export function placeProfiles(
  model: GpuModel,
  profiles: readonly GiProfile[],
  existing: readonly PlacedInstance[] = [],
): PlacementOutcome {
  const limit = countingViolation(model, [...existing.map((e) => e.profile), ...profiles]);
  if (limit) return { valid: false, reason: limit };
  const todo = [...profiles].sort(placementOrder);
  const placed: PlacedInstance[] = [...existing];
  let deepest = { depth: -1, snapshot: [] as PlacedInstance[] };

  const search = (i: number, minStart: number): boolean => {
    if (i > deepest.depth) deepest = { depth: i, snapshot: [...placed] };
    const profile = todo[i];
    if (!profile) return true;
    for (const pl of profile.placements) {
      if (pl.start < minStart) continue;
      if (placed.some((q) => overlaps(q, pl))) continue;
      placed.push({ profile, start: pl.start, size: pl.size });
      const next = todo[i + 1];
      if (search(i + 1, next && next.name === profile.name ? pl.start + 1 : 0)) return true;
      placed.pop();
    }
    return false;
  };

  if (search(0, 0)) return { valid: true, placements: placed };
  const stuck = todo[deepest.depth];
  if (!stuck) return { valid: false, reason: 'no arrangement of the profiles fits' };
  const blockers = new Set<string>();
  for (const pl of stuck.placements) {
    for (const q of deepest.snapshot) if (overlaps(q, pl)) blockers.add(describeInstance(q));
  }
  const where = stuck.placements.map((p) => p.start).join(',');
  return {
    valid: false,
    reason: `${stuck.name} can start only at slice ${where} (size ${stuck.placements[0]?.size}), and every such position collides with ${[...blockers].join(', ')}`,
  };
}

/** A layout: one placeable multiset of profiles with one concrete placement. */
export interface Layout {
  readonly instances: readonly PlacedInstance[];
}

/** Sorted key of a multiset of profile names, `1g.5gb+1g.5gb+3g.20gb`. */
export function multisetKey(profiles: readonly GiProfile[]): string {
  return profiles
    .map((p) => p.name)
    .sort()
    .join('+');
}

/** A placement as a bit mask over placement units. */
function maskOf(start: number, size: number): number {
  return ((1 << size) - 1) << start;
}

/**
 * Every legal layout of a GPU: each non-empty multiset of its profiles that can share the GPU,
 * with one concrete placement (instances ordered by start). With `maximal`, only those to which
 * no further instance can be added.
 *
 * Walks count vectors profile by profile, carrying the set of occupancy masks the instances chosen
 * so far can take; a branch dies as soon as that set is empty or a counting limit is passed, so
 * only feasible multisets are visited.
 */
export function enumerateLayouts(model: GpuModel, options: { maximal?: boolean } = {}): Layout[] {
  const profiles = model.giProfiles;
  const masks = profiles.map((p) => p.placements.map((pl) => maskOf(pl.start, pl.size)));
  const feasible: GiProfile[][] = [];
  const chosen: GiProfile[] = [];

  const walk = (pi: number, occupancies: readonly number[]): void => {
    const profile = profiles[pi];
    if (!profile) {
      if (chosen.length > 0) feasible.push([...chosen]);
      return;
    }
    walk(pi + 1, occupancies);
    let current = occupancies;
    let added = 0;
    for (let n = 1; n <= profile.maxCount; n++) {
      const next = new Set<number>();
      for (const occ of current) for (const m of masks[pi] ?? []) if ((occ & m) === 0) next.add(occ | m);
      if (next.size === 0) break;
      chosen.push(profile);
      added++;
      if (countingViolation(model, chosen)) break;
      current = [...next];
      walk(pi + 1, current);
    }
    for (let k = 0; k < added; k++) chosen.pop();
  };
  walk(0, [0]);

  const keys = new Set(feasible.map(multisetKey));
  const kept = options.maximal ? feasible.filter((set) => profiles.every((p) => !keys.has(multisetKey([...set, p])))) : feasible;
  return kept.map((set) => {
    const outcome = placeProfiles(model, set);
    if (!outcome.valid) throw new Error(`internal: enumerated layout ${multisetKey(set)} does not place`);
    return { instances: [...outcome.placements].sort((a, b) => a.start - b.start) };
  });
}

/** Legal positions for one more instance of `profile` beside the instances already on the GPU. */
export function freePlacements(model: GpuModel, layout: readonly PlacedInstance[], profile: GiProfile): PlacedInstance[] {
  if (countingViolation(model, [...layout.map((i) => i.profile), profile])) return [];
  return profile.placements
    .filter((pl) => !layout.some((q) => overlaps(q, pl)))
    .map((pl) => ({ profile, start: pl.start, size: pl.size }));
}

/** How broken up a layout's free space is. */
export interface Fragmentation {
  /** Free placement units (memory slices on most GPUs). */
  readonly freeUnits: number;
  readonly freeComputeSlices: number;
  /** Profiles of which one more instance still fits. */
  readonly admits: readonly string[];
  /** Units of the largest profile that still fits (0 when none). */
  readonly largestAdmittedUnits: number;
  /**
   * 0 when no free space is usable (no units or no compute slices left: the A100's 8th memory slice
   * beside seven 1g instances) or one instance can use all of it; towards 1 as the largest
   * instance that still fits covers less of the free space: `1 - largestAdmittedUnits / freeUnits`.
   */
  readonly score: number;
}

/** Measures the fragmentation of the free space of `layout`. */
export function fragmentation(model: GpuModel, layout: readonly PlacedInstance[]): Fragmentation {
  const used = layout.reduce((s, i) => s + i.size, 0);
  const freeUnits = model.placementUnits - used;
  const freeComputeSlices = model.computeSlices - layout.reduce((s, i) => s + i.profile.computeSlices, 0);
  const admitted = model.giProfiles.filter((p) => freePlacements(model, layout, p).length > 0);
  const largestAdmittedUnits = Math.max(0, ...admitted.map((p) => p.placements[0]?.size ?? 0));
  const score = freeUnits === 0 || freeComputeSlices === 0 ? 0 : 1 - largestAdmittedUnits / freeUnits;
  return { freeUnits, freeComputeSlices, admits: admitted.map((p) => p.name), largestAdmittedUnits, score };
}
