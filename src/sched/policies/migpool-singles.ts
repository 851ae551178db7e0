import type { GpuModel } from '../../mig/types.js';
import type { GpuView, InstanceView, JobSpec } from '../types.js';
import { fleetModels, isInstanceUsable, expectedWork } from './common.js';
import { waitLine, type Estimates } from './migpool-estimates.js';
import { MAX_PER_GPU, RESTART_SECONDS, type Plan } from './migpool-plan.js';
import { shareBusyGpus } from './migpool-split.js';
import { bestExtension, bestLayoutFor } from './packing.js';

/** Id prefix of the stand-in jobs a layout is padded with (no trace or service id starts with NUL). */
const PHANTOM = '\u0000pad';

/** What placing single-GPU jobs needs to know besides the plan. */
export interface SinglesContext {
  /** The committed horizon (Estimates.horizon). */
  readonly horizon: number;
  /** Expected GPU releases (Estimates.releases). */
  readonly releases: Estimates['releases'];
  /** Expected release of each busy GPU (Estimates.releaseAt). */
  readonly releaseAt: Estimates['releaseAt'];
  /** GPUs that waiting multi-GPU jobs of this priority or a higher one want. */
  readonly otherDemand: number;
}

/** The smallest plain profile of a model below the whole GPU (fewest compute slices, then least memory). */
function smallestProfile(model: GpuModel): string | undefined {
  const plain = model.giProfiles.filter((p) => !/[+-]/.test(p.name) && p.computeSlices < model.computeSlices);
  plain.sort((a, b) => a.computeSlices - b.computeSlices || (a.memoryGiB ?? 0) - (b.memoryGiB ?? 0));
  return plain[0]?.name;
}

/**
 * Places single-GPU jobs of one priority, in serve order (those looked at: as many as could start
 * now, skipping, when no GPU is idle, those that no idle instance suits):
 * - when they (and the multi-GPU jobs waiting, `otherDemand`) do not outnumber the idle GPUs,
 *   each gets a whole GPU;
 * - otherwise jobs that no slice suits take whole GPUs first; then the jobs that lose most on a
 *   one-slice instance keep whole GPUs, as many as leave enough idle GPUs to cut for the others
 *   (seven to a GPU, after the idle instances already there) and for the multi-GPU jobs; the
 *   others fill idle instances of partly used GPUs (where they do the most work per slice), then
 *   idle GPUs cut for them seven at a time (the layout of most total speed, padded with copies of
 *   the group's jobs so that the instances left over suit the jobs that come next), then the
 *   re-cut idle part of partly used GPUs, then busy GPUs shared with them (migpool-split.ts).
 * A job goes on an instance only if it fits (memory, the profile it asked for as a floor), does
 * at least a whole GPU's work per compute slice there (slicing must add throughput), still ends
 * within the committed horizon (slicing never lengthens the schedule), and is expected to end no
 * later there than on the whole GPU it would otherwise wait for (list scheduling of the waiting
 * line on the GPUs' expected releases): its earliest expected completion. On a busy GPU the
 * expected end counts growth: once the jobs there now are done, it gets the whole GPU.
 */
export function placeSingles(plan: Plan, all: readonly JobSpec[], sc: SinglesContext): void {
  const { ctx, view } = plan;
  const now = plan.now;
  const rc = ctx.reconfigureSeconds;
  const models = fleetModels(view);
  /** When a whole GPU is expected to come free for each job that gets none now. */
  const waitUntil = new Map<string, number>();

  const sliceFits = (job: JobSpec, model: GpuModel, profile: string, delay: number): boolean => {
    const s = plan.speedOn(job, model, profile);
    if (!(s > 0)) return false;
    // A job that asked for exactly this slice has no other choice: no efficiency or horizon test.
    if (job.exactProfile === true) return true;
    const p = model.giProfiles.find((x) => x.name === profile);
    if (!p || s * model.computeSlices < p.computeSlices * (1 - 1e-9)) return false;
    return now + delay + expectedWork(job) / s <= sc.horizon;
  };
  const sliceOk = (job: JobSpec, g: GpuView, profile: string, delay: number): boolean => {
    if (!sliceFits(job, g.model, profile, delay)) return false;
    const s = plan.speedOn(job, g.model, profile);
    const wait = waitUntil.get(job.id);
    if (wait !== undefined && now + delay + runOn(job, g, s) > wait + expectedWork(job)) return false;
    return plan.usableBy(g, job, s, delay);
  };
  /**
   * Expected seconds a job runs at `speed` on a busy GPU g: once the jobs there now are done (the
   * GPU's expected release), growth gives it the whole GPU, at a re-partition and a restart.
   */
  const runOn = (job: JobSpec, g: GpuView, speed: number): number => {
    const run = expectedWork(job) / speed;
    const rel = sc.releaseAt.get(g.id);
    if (rel === undefined) return run;
    const shared = Math.max(0, rel - now);
    const cost = rc + RESTART_SECONDS;
    return shared + cost < run ? shared + (expectedWork(job) - shared * speed) + cost : run;
  };
  /**
   * The first `cap` jobs in serve order; when no GPU is idle, past the first GPU's worth (which
   * may share a busy GPU) only jobs that some idle instance's profile suits, so that jobs that
   * cannot start anywhere now (a profile floor above every idle instance, too slow on them) do not
   * hold the idle instances back from the jobs behind them.
   */
  function lookedAt(queue: readonly JobSpec[], cap: number): readonly JobSpec[] {
    if (queue.length <= cap || plan.idleGpus().length > 0 || plan.idleInstances === 0) return queue.slice(0, cap);
    const kinds = new Map<string, { model: GpuModel; profile: string }>();
    for (const g of plan.partial) {
      if (plan.touched.has(g.id)) continue;
      for (const i of g.instances) if (isInstanceUsable(g, i, now)) kinds.set(`${g.model.name}|${i.profile.name}`, { model: g.model, profile: i.profile.name });
    }
    const idle = [...kinds.values()];
    const out: JobSpec[] = [];
    for (const job of queue) {
      if (out.length >= cap) break;
      if (out.length < MAX_PER_GPU || idle.some((k) => sliceFits(job, k.model, k.profile, 0))) out.push(job);
    }
    return out;
  }
  const giveWholeIfAny = (job: JobSpec) => {
    const g = plan.takeIdle((h) => plan.wholeOk(job, h));
    if (g) plan.giveWhole(job, g);
  };

  // Only the jobs that could start now are looked at (the rest wait their turn): on idle GPUs,
  // idle instances, the idle part of partly used GPUs, or shared busy GPUs (a GPU's worth).
  const jobs = lookedAt(all, (plan.idleGpus().length + plan.partial.length + 1) * MAX_PER_GPU + plan.idleInstances);
  if (jobs.length + sc.otherDemand <= plan.idleGpus().length && !jobs.some((j) => j.exactProfile === true)) {
    for (const job of jobs) giveWholeIfAny(job);
    return;
  }

  // Contention. Jobs that no slice suits (long ones) want whole GPUs: they take them first, in order.
  const slicable = (job: JobSpec) => models.some((m) => m.giProfiles.some((p) => p.computeSlices < m.computeSlices && sliceFits(job, m, p.name, rc)));
  const mayShare: JobSpec[] = [];
  for (const job of jobs) {
    if (slicable(job) || job.exactProfile === true) mayShare.push(job);
    else giveWholeIfAny(job);
  }

  // Whole GPUs for the jobs that lose most on a slice, as many as leave enough idle GPUs to cut
  // for the others and for the multi-GPU jobs waiting.
  const gpusLeft = plan.idleGpus().length;
  const n = mayShare.length;
  let w = Math.min(Math.max(0, gpusLeft - sc.otherDemand), n);
  while (w > 0 && w + Math.ceil(Math.max(0, n - w - plan.idleInstances) / MAX_PER_GPU) > gpusLeft) w--;
  if (w > 0) {
    const loss = (job: JobSpec) => {
      let worst = 0;
      for (const m of models) {
        const smallest = smallestProfile(m);
        const s = smallest === undefined ? -1 : plan.speedOn(job, m, smallest);
        worst = Math.max(worst, s > 0 ? expectedWork(job) * (1 / s - 1) : expectedWork(job));
      }
      return worst;
    };
    const keep = new Set(
      mayShare
        .map((job) => ({ job, loss: loss(job) }))
        .sort((a, b) => b.loss - a.loss)
        .slice(0, w)
        .map((x) => x.job.id),
    );
    for (const job of mayShare) if (keep.has(job.id)) giveWholeIfAny(job);
  }

  // The others would wait in line for whole GPUs (those no reservation holds) as they free up.
  for (const [id, at] of waitLine(
    sc.releases,
    (gpu) => plan.deadline.has(gpu),
    mayShare.filter((j) => !plan.placed.has(j.id)),
  ))
    waitUntil.set(id, at);

  // Idle instances of partly used GPUs: the one where the job does the most work per slice.
  const taken = plan.takenInstances;
  for (const job of mayShare) {
    if (plan.placed.has(job.id)) continue;
    let best: { g: GpuView; inst: InstanceView; score: number } | null = null;
    for (const g of plan.partial) {
      if (plan.touched.has(g.id)) continue;
      for (const inst of g.instances) {
        if (inst.job !== null || !isInstanceUsable(g, inst, now) || taken.has(`${g.id}:${inst.start}`)) continue;
        if (!sliceOk(job, g, inst.profile.name, 0)) continue;
        const score = plan.speedOn(job, g.model, inst.profile.name) / inst.profile.computeSlices;
        if (!best || score > best.score + 1e-12) best = { g, inst, score };
      }
    }
    if (!best) continue;
    plan.startOnInstance(job.id, best.g, best.inst.start);
  }

  // Idle GPUs cut for the others, seven at a time, in order.
  let rest = mayShare.filter((j) => !plan.placed.has(j.id));
  while (rest.length > 0) {
    const g = plan.takeIdle(() => true, true);
    if (!g) break;
    const group = rest.slice(0, MAX_PER_GPU);
    rest = rest.slice(group.length);
    const padded = [...group];
    for (let c = 0; padded.length < MAX_PER_GPU; c++) padded.push({ ...(group[c % group.length] as JobSpec), id: `${PHANTOM}${c}` });
    const found = bestLayoutFor(g.model, padded, ctx, false, (job, profile) => sliceOk(job, g, profile, rc));
    const assignment = new Map([...(found?.assignment ?? [])].filter(([id]) => !id.startsWith(PHANTOM)));
    if (!found || assignment.size === 0) {
      // No job of the group gains from a slice here: the first that fits gets the whole GPU.
      const job = group.find((j) => plan.wholeOk(j, g));
      if (job) plan.giveWhole(job, g);
      continue;
    }
    plan.applyLayout(g, found.layout, assignment);
  }

  // The idle part of partly used GPUs re-cut for the jobs still waiting (busy instances stay).
  let unplaced = mayShare.filter((j) => !plan.placed.has(j.id));
  for (const g of plan.partial) {
    if (unplaced.length === 0) break;
    if (plan.touched.has(g.id) || g.instances.some((i) => i.job === null && taken.has(`${g.id}:${i.start}`))) continue;
    const busy = g.instances.filter((i) => i.job !== null).map((i) => ({ profile: i.profile.name, start: i.start }));
    const ext = bestExtension(g.model, busy, unplaced.slice(0, MAX_PER_GPU), ctx, (job, profile) => sliceOk(job, g, profile, rc));
    if (!ext || ext.assignment.size === 0) continue;
    plan.applyLayout(g, ext.layout, ext.assignment);
    unplaced = unplaced.filter((j) => !plan.placed.has(j.id));
  }

  // Busy GPUs shared with the first jobs still waiting, where that saves more than it costs.
  shareBusyGpus(
    plan,
    unplaced.filter((j) => !plan.placed.has(j.id)),
    waitUntil,
    sc.horizon,
  );
}
