import type { ClusterView, Decision, GpuView, JobSpec, Policy, PolicyContext, RunningJobView } from '../types.js';
import { canEverRunWhole, memoryNeed, migOffIdle, Picker, wholeGpusWith } from './common.js';

/**
 * Background jobs are not placed where they would get less than this share of a GPU's speed: a
 * policy parameter (a job there mostly holds memory), not a measured figure.
 */
export const MIN_FILL_SHARE = 0.05;

/**
 * Foreground first, on whole GPUs with MIG off; what `dp` and `deeppool` share:
 * - foreground jobs in queue order take idle GPUs whose memory holds them; when too few are idle,
 *   background jobs running alone on whole GPUs are preempted (checkpointed, requeued) for them,
 *   the latest started first; the first foreground job that still cannot start blocks the
 *   foreground jobs behind it (no backfill, so large jobs are not starved);
 * - `burst`: a multi-GPU foreground job with `strongScaling` runs burst-parallel (when the context
 *   has a scaling model) unless a foreground job is left waiting for GPUs in the same call: a burst
 *   plan is slower than data parallelism on the same GPUs, and the waiting job would wait on it;
 *   otherwise such jobs run data-parallel (the simulator's default);
 * - background jobs in queue order take idle whole GPUs; with `burst`, single-GPU background jobs
 *   then fill the idle time of burst-parallel jobs' GPUs, best background share first (one per
 *   GPU, at least MIN_FILL_SHARE, memory of both jobs within the GPU's);
 * - GPUs found with MIG on are turned off as soon as all their instances are idle.
 * Jobs the fleet can never hold are skipped.
 */
export function foregroundFirstPolicy(name: string, burst: boolean): Policy {
  return {
    name,
    decide(view, ctx): Decision[] {
      const decisions: Decision[] = migOffIdle(view);
      if (view.queue.length === 0) return decisions;
      const idle = new Picker<GpuView>(wholeGpusWith(view, 0));
      let idleLeft = wholeGpusWith(view, 0).size;
      const preempted = new Set<string>();
      let victims: RunningJobView[] | null = null;
      let blocked = false;
      const fitsOn = (job: JobSpec) => (g: GpuView) => ctx.fits(job, { kind: 'whole', model: g.model });
      /** Burst-parallel jobs started by this call: their GPUs may be filled in the same call. */
      const started: { job: JobSpec; gpus: readonly number[] }[] = [];
      /** Foreground starts, decided first; burst or not is settled once the foreground queue is known. */
      const foreground: { job: JobSpec; gpus: readonly number[] }[] = [];
      const start = (job: JobSpec, gpus: readonly GpuView[]): void => {
        foreground.push({ job, gpus: gpus.map((g) => g.id) });
      };

      for (const job of view.queue) {
        if (job.priority !== 'foreground' || blocked) continue;
        if (!canEverRunWhole(view, ctx, job)) continue;
        const gs = job.gpus <= idleLeft ? idle.takeMany(job.gpus, fitsOn(job)) : null;
        if (gs) {
          start(job, gs);
          idleLeft -= job.gpus;
          continue;
        }
        victims ??= preemptible(view);
        const fits = fitsOn(job);
        const candidates = victims.filter((r) => r.spec.preemptible !== false && !preempted.has(r.spec.id) && fits(gpuOf(view, r)));
        const wantIdle = Math.min(idleLeft, job.gpus);
        const mine = wantIdle + candidates.length >= job.gpus ? (wantIdle > 0 ? idle.takeMany(wantIdle, fits) : []) : null;
        if (!mine) {
          blocked = true;
          continue;
        }
        const theirs = candidates.slice(0, job.gpus - mine.length);
        idleLeft -= mine.length;
        for (const r of theirs) {
          preempted.add(r.spec.id);
          decisions.push({ kind: 'preempt', job: r.spec.id });
        }
        start(job, [...mine, ...theirs.map((r) => gpuOf(view, r))]);
      }
      // A burst plan trades the foreground job's latency for idle GPU time that background jobs
      // fill. While foreground jobs are left waiting for GPUs that trade loses (the queue waits on
      // the slower job), so they run data-parallel then.
      const burstNow = burst && ctx.scaling !== undefined && !blocked;
      for (const { job, gpus } of foreground) {
        const scaled = burstNow && job.strongScaling !== undefined && job.gpus > 1;
        decisions.push({ kind: 'start-on-gpus', job: job.id, gpus, sharing: 'exclusive', ...(scaled ? { parallelism: 'burst' as const } : {}) });
        if (scaled) started.push({ job, gpus });
      }

      let slots: { gpu: number; share: number; memory: number }[] | null = null;
      for (const job of view.queue) {
        if (job.priority !== 'background') continue;
        if (!canEverRunWhole(view, ctx, job)) continue;
        if (idleLeft >= job.gpus) {
          const gs = idle.takeMany(job.gpus, fitsOn(job));
          if (gs) {
            decisions.push({ kind: 'start-on-gpus', job: job.id, gpus: gs.map((g) => g.id), sharing: 'exclusive' });
            idleLeft -= job.gpus;
            continue;
          }
        }
        if (!burst || job.gpus !== 1 || !ctx.scaling) continue;
        slots ??= fillSlots(view, ctx, started, preempted);
        const need = memoryNeed(job) ?? 0;
        const k = slots.findIndex((s) => s.memory + need <= (view.gpus[s.gpu] as GpuView).model.memoryGB || memoryNeed(job) === null);
        if (k < 0) continue;
        const slot = slots.splice(k, 1)[0] as (typeof slots)[number];
        decisions.push({ kind: 'start-on-gpus', job: job.id, gpus: [slot.gpu], sharing: 'mps', fill: true });
      }
      return decisions;
    },
  };
}

function gpuOf(view: ClusterView, r: RunningJobView): GpuView {
  const id = r.placement.kind === 'gpus' ? (r.placement.gpus[0] as number) : r.placement.gpu;
  return view.gpus[id] as GpuView;
}

/** Background jobs running alone on one whole GPU, latest started first. */
function preemptible(view: ClusterView): RunningJobView[] {
  const out: RunningJobView[] = [];
  for (const r of view.running.values()) {
    if (r.spec.priority !== 'background' || r.placement.kind !== 'gpus' || r.placement.gpus.length !== 1) continue;
    if (gpuOf(view, r).wholeGpuJobs.length !== 1) continue;
    out.push(r);
  }
  return out.sort((a, b) => b.started - a.started || (a.spec.id < b.spec.id ? -1 : 1));
}

/**
 * GPUs of burst-parallel jobs (running, or started by this call, on GPUs it may have freed by
 * preemption) with room for one background job, best share first.
 */
function fillSlots(
  view: ClusterView,
  ctx: PolicyContext,
  started: readonly { job: JobSpec; gpus: readonly number[] }[],
  preempted: ReadonlySet<string>,
): { gpu: number; share: number; memory: number }[] {
  const out: { gpu: number; share: number; memory: number }[] = [];
  const scaling = ctx.scaling;
  if (!scaling) return out;
  const add = (job: JobSpec, gpus: readonly number[], jobsThere: number): void => {
    const run = scaling.run(job, gpus.length, 'burst');
    gpus.forEach((id, rank) => {
      if ((view.gpus[id] as GpuView).wholeGpuJobs.filter((j) => !preempted.has(j)).length !== jobsThere) return;
      const share = run.backgroundShare(rank);
      if (share >= MIN_FILL_SHARE) out.push({ gpu: id, share, memory: memoryNeed(job) ?? 0 });
    });
  };
  for (const r of view.running.values()) if (r.parallelism === 'burst' && r.placement.kind === 'gpus') add(r.spec, r.placement.gpus, 1);
  for (const s of started) add(s.job, s.gpus, 0);
  return out.sort((a, b) => b.share - a.share || a.gpu - b.gpu);
}

/**
 * `dp`: the baseline of DeepPool's comparison. Foreground jobs first on whole GPUs, strong-scaled
 * ones data-parallel (every layer on all their GPUs); background jobs wait for whole idle GPUs
 * and are preempted when a foreground job needs them. See foregroundFirstPolicy.
 */
export function dpPolicy(): Policy {
  return foregroundFirstPolicy('dp', false);
}
