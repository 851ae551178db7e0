import type { LiveJob } from '../control/service-observer.js';
import type { GpuSnapshot } from '../control/service-port.js';
import { GPU_MODELS } from '../mig/catalog/index.js';
import { sliceShare } from '../sched/shares.js';

/**
 * Compute slices of a MIG profile by its name: the catalogue's figure (the same for a name on
 * every GPU that has it), else the number before `g` (NVIDIA's MIG user guide names profiles
 * `<compute slices>g.<memory>gb`; that number agrees with the catalogue for all 15 GPUs it lists).
 * A snapshot's `size` is the placement's width in memory slices, not this.
 */
export function computeSlicesOf(profile: string): number {
  for (const m of GPU_MODELS) {
    const p = m.giProfiles.find((x) => x.name === profile);
    if (p) return p.computeSlices;
  }
  const n = Number.parseInt(profile, 10);
  return Number.isFinite(n) && n > 0 ? n : 0;
}

/** Compute slices allocated on a GPU: all of them under a whole-GPU job, else its busy instances'. */
export function allocatedSlices(g: GpuSnapshot): number {
  if (g.wholeGpuJobs.length > 0) return g.slices;
  return g.instances.reduce((sum, i) => sum + (i.job === null ? 0 : computeSlicesOf(i.profile)), 0);
}

/**
 * GPUs' worth of compute slices each user's starting and running jobs hold, counted as quotas
 * count them (src/sched/shares.ts, heldBy): an instance counts its compute slices over its GPU's, a
 * whole GPU 1 for each job on it, shared (time-slicing, MPS) or not.
 */
export function allocatedGpusByUser(gpus: readonly GpuSnapshot[], live: readonly LiveJob[]): Map<string, number> {
  const byIndex = new Map(gpus.map((g) => [g.index, g]));
  const out = new Map<string, number>();
  for (const j of live) {
    const p = j.placement;
    if (j.state === 'queued' || p === null) continue;
    let held = 0;
    if (p.kind === 'instance') {
      const g = byIndex.get(p.gpu);
      if (g) held = sliceShare(computeSlicesOf(p.profile), g.slices);
    } else {
      held = p.gpus.length;
    }
    out.set(j.user, (out.get(j.user) ?? 0) + held);
  }
  return out;
}
