import { ciProfilesOf } from '../mig/compute-instances.js';
import { fragmentation, type PlacedInstance } from '../mig/geometry.js';
import type { CiProfile, GiProfile, GpuModel } from '../mig/types.js';
import { groupSignature, type CurrentGpu, type CurrentGpuInstance, type DesiredGpu, type DesiredGroup } from './state.js';

/** One step of a plan, in the order it runs. */
export type PlanOperation =
  | { readonly kind: 'set-mig-mode'; readonly gpu: number; readonly enabled: boolean }
  /** Reset the GPU if (and only if) its MIG mode change is still pending. */
  | { readonly kind: 'reset-if-pending'; readonly gpu: number }
  | { readonly kind: 'destroy-ci'; readonly gpu: number; readonly gpuInstanceId: number; readonly computeInstanceId: number; readonly profile: string }
  | { readonly kind: 'destroy-gi'; readonly gpu: number; readonly gpuInstanceId: number; readonly profile: string }
  | { readonly kind: 'create-gi'; readonly gpu: number; readonly profile: string; readonly profileId: number | null; readonly start: number; readonly size: number }
  /** A compute instance in the GPU instance that sits at `giStart` (kept, or created by this plan). */
  | { readonly kind: 'create-ci'; readonly gpu: number; readonly giStart: number; readonly giProfile: string; readonly profile: string; readonly profileId: number };

/** The plan for one GPU. */
export interface GpuPlan {
  readonly gpu: number;
  readonly operations: readonly PlanOperation[];
  /** GPU instances left as they are (possibly with compute instances added or removed). */
  readonly kept: readonly { readonly id: number; readonly profile: string; readonly start: number; readonly size: number }[];
  readonly destroyedGpuInstances: number;
  readonly destroyedComputeInstances: number;
  /** Processes whose instances --force destroys. */
  readonly forcedPids: readonly number[];
  /** The layout once applied, with how fragmented its free space is (0 = not at all). */
  readonly fragmentation: number;
}

export type PlanOutcome = { readonly ok: true; readonly plan: GpuPlan } | { readonly ok: false; readonly gpu: number; readonly reason: string };

export interface PlanOptions {
  /** Destroy instances that have processes, when the target needs it. */
  readonly force?: boolean;
  /** Only the MIG mode: leave instances alone. */
  readonly modeOnly?: boolean;
}

function pidsOf(gi: CurrentGpuInstance): number[] {
  return gi.computeInstances.flatMap((c) => c.pids);
}

function describeBusy(gi: CurrentGpuInstance): string {
  return `GPU instance ${gi.id} (${gi.profile.name} at ${gi.start}:${gi.size}) runs processes ${pidsOf(gi).join(', ')}`;
}

/** Compute instances of `have` that `want` keeps, and what must go and come. */
function diffComputeInstances(have: CurrentGpuInstance, want: readonly CiProfile[]) {
  const remaining = [...want];
  const keep: number[] = [];
  const destroy: CurrentGpuInstance['computeInstances'][number][] = [];
  for (const ci of have.computeInstances) {
    const at = remaining.findIndex((w) => w.name === ci.profile);
    if (at >= 0) {
      remaining.splice(at, 1);
      keep.push(ci.id);
    } else {
      destroy.push(ci);
    }
  }
  return { keep, destroy, create: remaining };
}

interface Candidate {
  readonly keptPairs: readonly { readonly have: CurrentGpuInstance; readonly want: DesiredGroup }[];
  readonly destroyed: readonly CurrentGpuInstance[];
  readonly placed: readonly { readonly group: DesiredGroup; readonly start: number; readonly size: number }[];
  readonly score: readonly number[];
}

/**
 * Every way to place `groups` beside `fixed`, best first by fragmentation of what remains free,
 * then by lowest starts. Returns null when none exists.
 */
function bestPlacement(model: GpuModel, fixed: readonly PlacedInstance[], groups: readonly DesiredGroup[]) {
  const todo = [...groups].sort((a, b) => (b.gi.placements[0]?.size ?? 0) - (a.gi.placements[0]?.size ?? 0) || a.gi.placements.length - b.gi.placements.length || a.gi.name.localeCompare(b.gi.name));
  const layout: PlacedInstance[] = [...fixed];
  const chosen: { group: DesiredGroup; start: number; size: number }[] = [];
  let best: { placed: typeof chosen; frag: number; key: string } | null = null;
  const overlaps = (a: { start: number; size: number }, b: { start: number; size: number }) => a.start < b.start + b.size && b.start < a.start + a.size;
  const walk = (i: number, minStart: number): void => {
    const group = todo[i];
    if (!group) {
      const frag = fragmentation(model, layout).score;
      const key = chosen.map((c) => String(c.start).padStart(3, '0')).join(',');
      if (!best || frag < best.frag - 1e-9 || (Math.abs(frag - best.frag) < 1e-9 && key < best.key)) best = { placed: [...chosen], frag, key };
      return;
    }
    for (const pl of group.gi.placements) {
      if (pl.start < minStart || layout.some((q) => overlaps(q, pl))) continue;
      layout.push({ profile: group.gi, start: pl.start, size: pl.size });
      chosen.push({ group, start: pl.start, size: pl.size });
      const next = todo[i + 1];
      walk(i + 1, next && groupSignature(next.gi.name, next.cis.map((c) => c.name)) === groupSignature(group.gi.name, group.cis.map((c) => c.name)) ? pl.start + 1 : 0);
      chosen.pop();
      layout.pop();
    }
  };
  walk(0, 0);
  return best as { placed: { group: DesiredGroup; start: number; size: number }[]; frag: number } | null;
}

function engineAndCountOk(model: GpuModel, profiles: readonly GiProfile[]): boolean {
  const compute = profiles.reduce((s, p) => s + p.computeSlices, 0);
  if (compute > model.computeSlices) return false;
  const counts = new Map<string, number>();
  for (const p of profiles) counts.set(p.name, (counts.get(p.name) ?? 0) + 1);
  return profiles.every((p) => (counts.get(p.name) ?? 0) <= p.maxCount);
}

/**
 * Plans one GPU from its current state to the desired one. Keeps every GPU instance it can (and
 * the compute instances inside those that match), destroys as few as possible, never destroys one
 * with processes unless `force` (and then lists them), places new instances at explicit
 * placements that leave the least fragmented free space, and resets the GPU only when its MIG
 * mode change is pending. When the target cannot be reached without touching a busy instance it
 * says so and plans nothing. Planning an applied state gives no operations.
 */
export function planGpu(current: CurrentGpu, desired: DesiredGpu, options: PlanOptions = {}): PlanOutcome {
  const gpu = current.index;
  const model = current.model;
  const ops: PlanOperation[] = [];
  const busyInstances = current.instances.filter((gi) => pidsOf(gi).length > 0);
  const empty = (frag = 0): GpuPlan => ({ gpu, operations: ops, kept: [], destroyedGpuInstances: 0, destroyedComputeInstances: 0, forcedPids: [], fragmentation: frag });

  if (!desired.migEnabled) {
    let destroyedCis = 0;
    const forced: number[] = [];
    if (!options.modeOnly || current.instances.length > 0) {
      for (const gi of busyInstances) {
        if (!options.force) return { ok: false, gpu, reason: `MIG must be disabled but ${describeBusy(gi)}; nothing changed (use --force to destroy it)` };
        forced.push(...pidsOf(gi));
      }
      for (const gi of current.instances) {
        for (const ci of gi.computeInstances) {
          ops.push({ kind: 'destroy-ci', gpu, gpuInstanceId: gi.id, computeInstanceId: ci.id, profile: ci.profile });
          destroyedCis++;
        }
      }
      for (const gi of current.instances) ops.push({ kind: 'destroy-gi', gpu, gpuInstanceId: gi.id, profile: gi.profile.name });
    }
    if (current.migMode.pending !== 'disabled') ops.push({ kind: 'set-mig-mode', gpu, enabled: false });
    if (current.migMode.current !== 'disabled') ops.push({ kind: 'reset-if-pending', gpu });
    return { ok: true, plan: { ...empty(), destroyedGpuInstances: current.instances.length, destroyedComputeInstances: destroyedCis, forcedPids: forced } };
  }

  if (current.migMode.pending !== 'enabled') ops.push({ kind: 'set-mig-mode', gpu, enabled: true });
  if (current.migMode.current !== 'enabled') {
    if (current.gpuPids.length > 0 && !options.force) {
      return { ok: false, gpu, reason: `MIG mode must be enabled but processes ${current.gpuPids.join(', ')} use the GPU, so it cannot be reset; nothing changed` };
    }
    ops.push({ kind: 'reset-if-pending', gpu });
  }
  // Processes on the whole GPU block its reset: --force names them with the instances' ones.
  const gpuForced = current.migMode.current !== 'enabled' ? current.gpuPids : [];
  if (options.modeOnly) return { ok: true, plan: { ...empty(), forcedPids: [...gpuForced] } };

  // The GPU's instances once MIG is on: none if MIG is off now (a reset clears them).
  const existing = current.migMode.current === 'enabled' ? current.instances : [];
  let best: Candidate | null = null;
  const assignment: ({ want: number } | 'destroy')[] = [];
  const wanted = desired.groups;

  const evaluate = (): void => {
    const keptPairs = existing.flatMap((have, i) => {
      const a = assignment[i];
      return a && a !== 'destroy' ? [{ have, want: wanted[a.want] as DesiredGroup }] : [];
    });
    const destroyed = existing.filter((_, i) => assignment[i] === 'destroy');
    const usedWants = new Set(assignment.flatMap((a) => (a && a !== 'destroy' ? [a.want] : [])));
    const rest = wanted.filter((_, j) => !usedWants.has(j));
    let busyDestroyed = 0;
    let destroyedCis = 0;
    let createdCis = 0;
    for (const gi of destroyed) {
      if (pidsOf(gi).length > 0) busyDestroyed++;
      destroyedCis += gi.computeInstances.length;
    }
    for (const { have, want } of keptPairs) {
      const d = diffComputeInstances(have, want.cis);
      if (d.destroy.some((c) => c.pids.length > 0)) busyDestroyed++;
      destroyedCis += d.destroy.length;
      createdCis += d.create.length;
    }
    if (busyDestroyed > 0 && !options.force) return;
    const fixed = keptPairs.map(({ have }) => ({ profile: have.profile, start: have.start, size: have.size }));
    if (!engineAndCountOk(model, [...fixed.map((f) => f.profile), ...rest.map((g) => g.gi)])) return;
    const placement = bestPlacement(model, fixed, rest);
    if (!placement) return;
    for (const p of placement.placed) createdCis += p.group.cis.length;
    const score = [busyDestroyed, destroyed.length, destroyedCis, placement.frag, rest.length + createdCis];
    if (!best || lexLess(score, best.score)) {
      best = { keptPairs, destroyed, placed: placement.placed, score };
    }
  };

  const walk = (i: number): void => {
    const have = existing[i];
    if (!have) return evaluate();
    const taken = new Set(assignment.flatMap((a) => (a && a !== 'destroy' ? [a.want] : [])));
    const tried = new Set<string>();
    wanted.forEach((w, j) => {
      if (taken.has(j) || w.gi.name !== have.profile.name) return;
      const sig = groupSignature(w.gi.name, w.cis.map((c) => c.name));
      if (tried.has(sig)) return;
      tried.add(sig);
      assignment[i] = { want: j };
      walk(i + 1);
    });
    assignment[i] = 'destroy';
    walk(i + 1);
    assignment.length = i;
  };
  walk(0);

  const chosen = best as Candidate | null;
  if (!chosen) {
    const busy = busyInstances.map(describeBusy).join('; ');
    const why = busy && !options.force ? `the target cannot be reached without touching busy instances: ${busy}` : 'the target layout does not fit this GPU';
    return { ok: false, gpu, reason: `${why}; nothing changed${busy && !options.force ? ' (use --force to destroy them)' : ''}` };
  }

  const forced = new Set<number>(gpuForced);
  const destroyCi: PlanOperation[] = [];
  const createCi: PlanOperation[] = [];
  let destroyedCis = 0;
  for (const gi of chosen.destroyed) {
    for (const ci of gi.computeInstances) {
      destroyCi.push({ kind: 'destroy-ci', gpu, gpuInstanceId: gi.id, computeInstanceId: ci.id, profile: ci.profile });
      ci.pids.forEach((p) => forced.add(p));
      destroyedCis++;
    }
  }
  for (const { have, want } of chosen.keptPairs) {
    const d = diffComputeInstances(have, want.cis);
    for (const ci of d.destroy) {
      destroyCi.push({ kind: 'destroy-ci', gpu, gpuInstanceId: have.id, computeInstanceId: ci.id, profile: ci.profile });
      ci.pids.forEach((p) => forced.add(p));
      destroyedCis++;
    }
    for (const ci of sortLargestFirst(d.create)) createCi.push({ kind: 'create-ci', gpu, giStart: have.start, giProfile: have.profile.name, profile: ci.name, profileId: ci.id });
  }
  ops.push(...destroyCi);
  for (const gi of chosen.destroyed) ops.push({ kind: 'destroy-gi', gpu, gpuInstanceId: gi.id, profile: gi.profile.name });
  const placed = [...chosen.placed].sort((a, b) => a.start - b.start);
  for (const p of placed) ops.push({ kind: 'create-gi', gpu, profile: p.group.gi.name, profileId: p.group.gi.id, start: p.start, size: p.size });
  for (const p of placed) {
    for (const ci of sortLargestFirst(p.group.cis)) createCi.push({ kind: 'create-ci', gpu, giStart: p.start, giProfile: p.group.gi.name, profile: ci.name, profileId: ci.id });
  }
  ops.push(...createCi);
  return {
    ok: true,
    plan: {
      gpu,
      operations: ops,
      kept: chosen.keptPairs.map(({ have }) => ({ id: have.id, profile: have.profile.name, start: have.start, size: have.size })),
      destroyedGpuInstances: chosen.destroyed.length,
      destroyedComputeInstances: destroyedCis,
      forcedPids: [...forced],
      fragmentation: chosen.score[3] ?? 0,
    },
  };
}

function sortLargestFirst(cis: readonly CiProfile[]): CiProfile[] {
  return [...cis].sort((a, b) => b.computeSlices - a.computeSlices);
}

function lexLess(a: readonly number[], b: readonly number[]): boolean {
  for (let k = 0; k < a.length; k++) {
    const x = a[k] ?? 0;
    const y = b[k] ?? 0;
    if (Math.abs(x - y) > 1e-9) return x < y;
  }
  return false;
}

/** One instance of a layout a policy chose: a GI profile at a placement start. */
export interface LayoutSlot {
  readonly profile: string;
  readonly start: number;
}

/**
 * The plan that makes one GPU hold exactly `layout` (MIG on, instances at the given starts, each
 * with one full-size compute instance), or MIG off (`layout` null): what the service's policies
 * ask for, where a mig-parted config leaves placements to `planGpu`. Instances with the same
 * profile and start are kept with whatever runs on them; others are destroyed (compute instances
 * first) and missing ones created; a MIG mode change is followed by a reset if it stays pending.
 * An instance with processes or named in `busyStarts` (it holds a job whose processes may not show
 * yet), or the GPU's own processes when MIG goes off, is never touched:
 * the plan is refused before any operation, naming them.
 */
export function planLayout(current: CurrentGpu, layout: readonly LayoutSlot[] | null, busyStarts: ReadonlySet<number> = new Set()): PlanOutcome {
  const gpu = current.index;
  const model = current.model;
  const keep = (gi: CurrentGpuInstance): boolean => layout !== null && layout.some((s) => s.start === gi.start && s.profile === gi.profile.name);
  const doomed = current.instances.filter((gi) => !keep(gi));
  const busy = doomed.find((gi) => pidsOf(gi).length > 0);
  if (busy) return { ok: false, gpu, reason: `${describeBusy(busy)}; the new layout drops it` };
  const held = doomed.find((gi) => busyStarts.has(gi.start));
  if (held) return { ok: false, gpu, reason: `GPU instance ${held.id} (${held.profile.name} at ${held.start}:${held.size}) holds a job; the new layout drops it` };
  if (layout === null && current.gpuPids.length > 0) return { ok: false, gpu, reason: `GPU ${gpu} runs processes ${current.gpuPids.join(', ')}; MIG cannot be turned off under them` };
  const ops: PlanOperation[] = [];
  let destroyedCis = 0;
  for (const gi of doomed) {
    for (const ci of gi.computeInstances) {
      ops.push({ kind: 'destroy-ci', gpu, gpuInstanceId: gi.id, computeInstanceId: ci.id, profile: ci.profile });
      destroyedCis++;
    }
    ops.push({ kind: 'destroy-gi', gpu, gpuInstanceId: gi.id, profile: gi.profile.name });
  }
  const wantMig = layout !== null;
  if ((current.migMode.current === 'enabled') !== wantMig || current.migMode.pending !== current.migMode.current) {
    ops.push({ kind: 'set-mig-mode', gpu, enabled: wantMig });
    ops.push({ kind: 'reset-if-pending', gpu });
  }
  const placed: PlacedInstance[] = [];
  for (const slot of [...(layout ?? [])].sort((a, b) => a.start - b.start)) {
    const gi = model.giProfiles.find((p) => p.name === slot.profile);
    if (!gi) return { ok: false, gpu, reason: `${model.name} has no GPU instance profile ${slot.profile}` };
    const pl = gi.placements.find((p) => p.start === slot.start);
    if (!pl) return { ok: false, gpu, reason: `${slot.profile} cannot start at ${slot.start} on ${model.name}` };
    placed.push({ profile: gi, start: slot.start, size: pl.size });
    const have = current.instances.find((i) => i.start === slot.start && i.profile.name === slot.profile);
    // A GPU instance kept without any compute instance (a re-partition stopped between the two
    // creates) holds no device a job could use: it gets its compute instance now.
    if (have && have.computeInstances.length > 0) continue;
    const full = ciProfilesOf(gi).find((c) => c.isDefault);
    if (!full) return { ok: false, gpu, reason: `${model.name} ${gi.name} has no compute instance profile` };
    if (!have) ops.push({ kind: 'create-gi', gpu, profile: gi.name, profileId: gi.id, start: slot.start, size: pl.size });
    ops.push({ kind: 'create-ci', gpu, giStart: slot.start, giProfile: gi.name, profile: full.name, profileId: full.id });
  }
  const kept = current.instances.filter(keep).map((gi) => ({ id: gi.id, profile: gi.profile.name, start: gi.start, size: gi.size }));
  return {
    ok: true,
    plan: { gpu, operations: ops, kept, destroyedGpuInstances: doomed.length, destroyedComputeInstances: destroyedCis, forcedPids: [], fragmentation: wantMig ? fragmentation(model, placed).score : 0 },
  };
}
