import { enumerateLayouts } from '../../mig/geometry.js';
import type { GpuModel } from '../../mig/types.js';
import type { GpuView, JobSpec, PolicyContext } from '../types.js';

/** A layout chosen for a set of jobs: instances by start, and which job goes on which. */
export interface PackedLayout {
  readonly layout: readonly { readonly profile: string; readonly start: number }[];
  /** Job id -> placement start of its instance. */
  readonly assignment: ReadonlyMap<string, number>;
  /** Sum of the assigned jobs' speeds (full-GPU work per second). */
  readonly value: number;
}

const layoutsByModel = new Map<string, ReturnType<typeof enumerateLayouts>>();

function layoutsOf(model: GpuModel) {
  let all = layoutsByModel.get(model.name);
  if (!all) {
    // Plain profiles only (media-engine variants have the same speed and are scarcer).
    const plain = { ...model, giProfiles: model.giProfiles.filter((p) => !/[+-]/.test(p.name)) };
    all = enumerateLayouts(plain);
    layoutsByModel.set(model.name, all);
  }
  return all;
}

/**
 * The layout of a fully idle GPU and an assignment of `jobs` (at most one per instance) that
 * maximise the total speed of the jobs placed, as MISO chooses partitions: every legal layout of
 * the model is tried, each with the best assignment (dynamic programming over instances and
 * subsets of jobs). `mustPlaceAll` keeps only layouts that place every job. Ties go to the layout
 * with fewer instances (more room per job), then to the first found. Null when nothing fits.
 * `allowed(job, profile)`, when given, keeps a job off the profiles it rejects.
 */
export function bestLayoutFor(
  model: GpuModel,
  given: readonly JobSpec[],
  ctx: PolicyContext,
  mustPlaceAll: boolean,
  allowed?: (job: JobSpec, profile: string) => boolean,
): PackedLayout | null {
  // Jobs of the same workload, memory (and allowed profiles) are interchangeable: solve once per multiset (cached).
  const keyOf = (j: JobSpec) => `${j.workload.name}|${j.memoryGiB ?? ''}|${j.profile ?? ''}${allowed ? `|${allowedSignature(model, j, allowed)}` : ''}`;
  const jobs = [...given].sort((a, b) => keyOf(a).localeCompare(keyOf(b)));
  const cacheKey = `${model.name}#${mustPlaceAll}#${allowed ? 'a' : ''}#${jobs.map(keyOf).join(',')}`;
  if (solved.size > 200_000) solved.clear();
  let cached = solved.get(cacheKey);
  if (cached === undefined) {
    const result = solveExtension(model, [], jobs, ctx, allowed ?? (() => true), mustPlaceAll);
    // Kept in the assignment's own order, so that a cache hit gives the same decisions, in the same order, as the solve did.
    cached = result === null ? null : { layout: result.layout, value: result.value, picks: [...result.assignment].map(([id, start]) => [jobs.findIndex((j) => j.id === id), start] as const) };
    solved.set(cacheKey, cached);
  }
  if (cached === null) return null;
  const assignment = new Map(cached.picks.map(([k, start]) => [(jobs[k] as JobSpec).id, start]));
  return { layout: cached.layout, assignment, value: cached.value };
}

/** Solved packings by model and multiset of jobs: the assignment as (index in the sorted jobs, start) in its order. */
const solved = new Map<string, { layout: PackedLayout['layout']; value: number; picks: readonly (readonly [number, number])[] } | null>();

/** Which of the model's plain profiles `allowed` lets a job take, as a string of 0s and 1s (part of cache keys). */
function allowedSignature(model: GpuModel, job: JobSpec, allowed: (job: JobSpec, profile: string) => boolean): string {
  let sig = '';
  for (const p of layoutProfiles(model)) sig += allowed(job, p) ? '1' : '0';
  return sig;
}

const profilesByModel = new Map<string, readonly string[]>();
function layoutProfiles(model: GpuModel): readonly string[] {
  let names = profilesByModel.get(model.name);
  if (!names) {
    names = model.giProfiles.filter((p) => !/[+-]/.test(p.name)).map((p) => p.name);
    profilesByModel.set(model.name, names);
  }
  return names;
}

const extensionCache = new Map<string, PackedLayout | null>();

/**
 * Re-cutting the idle part of a GPU: among the model's legal layouts that keep every instance in
 * `fixed` (busy ones: same profile and start), the one whose other instances hold the most of
 * `jobs` by total speed, with the assignment. Instances in `fixed` take no job. Jobs for which
 * `allowed(job, profile)` is false are not placed on that profile. Cached per model, fixed set and
 * multiset of jobs (with what `allowed` says of each). Null when no job can be placed.
 */
export function bestExtension(
  model: GpuModel,
  fixed: readonly { readonly profile: string; readonly start: number }[],
  given: readonly JobSpec[],
  ctx: PolicyContext,
  allowed: (job: JobSpec, profile: string) => boolean,
): PackedLayout | null {
  // The key holds what `allowed` says of each job, so that different predicates never share an entry.
  const keyOf = (j: JobSpec) => `${j.workload.name}|${j.memoryGiB ?? ''}|${allowedSignature(model, j, allowed)}`;
  const jobs = [...given].sort((a, b) => keyOf(a).localeCompare(keyOf(b)));
  const fixedKey = [...fixed].map((f) => `${f.profile}@${f.start}`).sort().join('+');
  const cacheKey = `${model.name}#${fixedKey}#${jobs.map(keyOf).join(',')}`;
  if (extensionCache.size > 200_000) extensionCache.clear();
  let result = extensionCache.get(cacheKey);
  if (result === undefined) {
    result = solveExtension(model, fixed, jobs, ctx, allowed);
    extensionCache.set(cacheKey, result === null ? null : { ...result, assignment: new Map([...result.assignment].map(([id, start]) => [String(jobs.findIndex((j) => j.id === id)), start])) });
    return result;
  }
  if (result === null) return null;
  const assignment = new Map<string, number>();
  for (const [k, start] of result.assignment) assignment.set((jobs[Number(k)] as JobSpec).id, start);
  return { layout: result.layout, assignment, value: result.value };
}

function solveExtension(
  model: GpuModel,
  fixed: readonly { readonly profile: string; readonly start: number }[],
  jobs: readonly JobSpec[],
  ctx: PolicyContext,
  allowed: (job: JobSpec, profile: string) => boolean,
  mustPlaceAll = false,
): PackedLayout | null {
  const n = jobs.length;
  if (n === 0 || n > 8) return null;
  const speed = new Map<string, number>();
  const speedOf = (j: number, profile: string): number => {
    const key = `${j}:${profile}`;
    let v = speed.get(key);
    if (v === undefined) {
      const job = jobs[j] as JobSpec;
      const on = { kind: 'instance' as const, model, profile };
      v = ctx.fits(job, on) && allowed(job, profile) ? ctx.speedOn(job, on) : -1;
      speed.set(key, v);
    }
    return v;
  };
  let best: PackedLayout | null = null;
  for (const layout of layoutsOf(model)) {
    const inst = layout.instances;
    if (mustPlaceAll && inst.length < n) continue;
    if (!fixed.every((f) => inst.some((i) => i.start === f.start && i.profile.name === f.profile))) continue;
    const free = inst.filter((i) => !fixed.some((f) => f.start === i.start && f.profile === i.profile.name));
    if (free.length === 0) continue;
    let dp = new Map<number, { value: number; picks: [number, number][] }>([[0, { value: 0, picks: [] }]]);
    for (const instance of free) {
      const next = new Map(dp);
      for (const [mask, state] of dp) {
        for (let j = 0; j < n; j++) {
          if (mask & (1 << j)) continue;
          const s = speedOf(j, instance.profile.name);
          if (s < 0) continue;
          const m2 = mask | (1 << j);
          const v = state.value + s;
          const cur = next.get(m2);
          if (!cur || v > cur.value + 1e-12) next.set(m2, { value: v, picks: [...state.picks, [j, instance.start]] });
        }
      }
      dp = next;
    }
    for (const [mask, state] of dp) {
      if (state.picks.length === 0 || (mustPlaceAll && mask !== (1 << n) - 1)) continue;
      const better = !best || state.value > best.value + 1e-9 || (Math.abs(state.value - best.value) <= 1e-9 && inst.length < best.layout.length);
      if (!better) continue;
      best = {
        layout: inst.map((i) => ({ profile: i.profile.name, start: i.start })),
        assignment: new Map(state.picks.map(([j, start]) => [(jobs[j] as JobSpec).id, start])),
        value: state.value,
      };
    }
  }
  return best;
}

/**
 * Whether GPU `g` is in MIG mode with exactly `layout` already. A re-partition to it would change
 * nothing (and the simulator sends no "ready" event for it): start jobs on its instances instead.
 */
export function hasLayout(g: GpuView, layout: readonly { readonly profile: string; readonly start: number }[]): boolean {
  return g.migEnabled && g.instances.length === layout.length && layout.every((l) => g.instances.some((i) => i.start === l.start && i.profile.name === l.profile));
}
