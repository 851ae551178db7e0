import type { Decision, GpuView, JobSpec, PolicyContext, RunningJobView } from '../types.js';
import { profileAllows } from './common.js';
import { expectedLeft, type MigpoolPromise } from './migpool-estimates.js';
import { bestLayoutFor } from './packing.js';

/** A re-cut of one GPU for the jobs already on it: what to do, and the promises to keep. */
export interface Growth {
  readonly decisions: readonly Decision[];
  readonly promises: readonly (readonly [string, MigpoolPromise])[];
  /** Seconds of work-time the GPU's jobs are expected to save, net of the costs counted. */
  readonly gain: number;
}

/**
 * Growing the jobs of a cut GPU into its idle part. When the jobs that shared a GPU have left
 * some of it idle and nothing waits for that space, the jobs still there may run faster on bigger
 * instances: the GPU is re-cut for them (the layout that maximises their total speed), or turned
 * whole (MIG off) for a lone job. Jobs whose instance changes are checkpointed first (busy
 * instances are never re-cut) and each pays `restartSeconds` plus the re-partition time; jobs
 * whose instance (profile and start) stays keep running. A growth is proposed only when every
 * moved job ends sooner even after its costs, and their total saving exceeds twice those costs
 * (estimates from `work`, `done` and speeds, as elsewhere in migpool). Null when none is worth it.
 */
export function growth(g: GpuView, running: ReadonlyMap<string, RunningJobView>, ctx: PolicyContext, restartSeconds: number): Growth | null {
  if (!g.migEnabled) return null;
  const jobs: { spec: JobSpec; left: number; speed: number; start: number; profile: string }[] = [];
  let idleSlices = 0;
  for (const i of g.instances) {
    if (i.job === null) {
      idleSlices += i.profile.computeSlices;
      continue;
    }
    const r = running.get(i.job);
    if (!r) return null;
    jobs.push({ spec: r.spec, left: expectedLeft(r), speed: Math.max(r.speed, 1e-9), start: i.start, profile: i.profile.name });
  }
  if (jobs.length === 0) return null;
  // Free compute slices the layout has no instance for count as idle too.
  const used = g.instances.reduce((s, i) => s + i.profile.computeSlices, 0);
  idleSlices += Math.max(0, g.model.computeSlices - used);
  if (idleSlices === 0) return null;
  const cost = ctx.reconfigureSeconds + restartSeconds;

  // Growing moves jobs (checkpoint, re-cut, restart): only those that may be preempted.
  if (jobs.some((j) => j.spec.preemptible === false)) return null;
  if (jobs.length === 1) {
    const j = jobs[0] as (typeof jobs)[number];
    if (!ctx.fits(j.spec, { kind: 'whole', model: g.model })) return null;
    const saving = j.left / j.speed - (j.left + cost);
    if (saving <= 2 * cost) return null;
    return {
      decisions: [
        { kind: 'preempt', job: j.spec.id },
        { kind: 'repartition', gpu: g.id, layout: null },
      ],
      promises: [[j.spec.id, { kind: 'gpus', gpus: [g.id] }]],
      gain: saving - cost,
    };
  }

  const floorOk = (job: JobSpec, profile: string) => profileAllows(job, profile, g.model);
  const packed = bestLayoutFor(
    g.model,
    jobs.map((j) => j.spec),
    ctx,
    true,
    floorOk,
  );
  if (!packed) return null;
  let saving = 0;
  const moved: (typeof jobs)[number][] = [];
  for (const j of jobs) {
    const start = packed.assignment.get(j.spec.id);
    const entry = packed.layout.find((l) => l.start === start);
    if (start === undefined || !entry) return null;
    if (start === j.start && entry.profile === j.profile) continue;
    const speed = ctx.speedOn(j.spec, { kind: 'instance', model: g.model, profile: entry.profile });
    const after = j.left / Math.max(speed, 1e-9) + cost;
    // Every job that moves must gain from it.
    if (after >= j.left / j.speed) return null;
    saving += j.left / j.speed - after;
    moved.push(j);
  }
  // Instances of jobs that stay must survive the new layout unchanged.
  for (const j of jobs) {
    if (moved.includes(j)) continue;
    if (!packed.layout.some((l) => l.start === j.start && l.profile === j.profile)) return null;
  }
  if (moved.length === 0 || saving <= 2 * cost * moved.length) return null;
  return {
    decisions: [...moved.map((j) => ({ kind: 'preempt' as const, job: j.spec.id })), { kind: 'repartition', gpu: g.id, layout: packed.layout }],
    promises: moved.map((j) => [j.spec.id, { kind: 'instance', gpu: g.id, start: packed.assignment.get(j.spec.id) as number }] as const),
    gain: saving,
  };
}
