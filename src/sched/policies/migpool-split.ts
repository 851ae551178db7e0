import type { GpuView, JobSpec } from '../types.js';
import { isSettled, expectedWork } from './common.js';
import { expectedLeft } from './migpool-estimates.js';
import { MAX_PER_GPU, RESTART_SECONDS, type Plan } from './migpool-plan.js';
import { bestLayoutFor } from './packing.js';

/** A GPU re-cut to take one more job: the decisions, and the expected net saving in seconds. */
interface Split {
  readonly gpu: GpuView;
  readonly layout: readonly { readonly profile: string; readonly start: number }[];
  readonly assignment: ReadonlyMap<string, number>;
  /** Running jobs whose instance changes (checkpointed first). */
  readonly moved: readonly string[];
  readonly saving: number;
}

/**
 * Sharing a busy GPU with a job that would otherwise wait (what MISO does on every arrival, here
 * only when it pays). For a waiting single-GPU job expected to get a whole GPU only at `waitUntil`,
 * the GPUs running fewest single-GPU jobs are candidates: the GPU is re-cut for its jobs and the
 * new one (the layout of most total speed; whole GPUs are turned to MIG), the jobs whose instance
 * changes are checkpointed and restart after the re-partition. The expected saving is what the
 * new job gains (waiting for a whole GPU and running alone, against starting after the
 * re-partition on its instance) minus what the others lose: each moved job pays the
 * re-partition and `restartSeconds`, and runs slower for as long as it shares (the shorter of its
 * and the new job's expected runs, as growth then gives the space back; with a `longLine` of jobs
 * still waiting, its whole run, as growth waits until no job does). The best candidate is
 * taken if it saves more than the re-partition and a restart, and if every job on the GPU still
 * ends within the committed `horizon` (sharing never lengthens the schedule) and, on a GPU an EASY
 * reservation holds, by its deadline (the reserved job starts no later). Estimates come from
 * `work`, `done` and speeds, as elsewhere in migpool.
 */
function bestSplit(plan: Plan, job: JobSpec, waitUntil: number, horizon: number, restartSeconds: number, candidates: readonly GpuView[], longLine = false): Split | null {
  const { ctx, view } = plan;
  const now = plan.now;
  const rc = ctx.reconfigureSeconds;
  let best: Split | null = null;
  for (const g of candidates) {
    if (plan.touched.has(g.id) || plan.gotJobs.has(g.id)) continue;
    const on: { spec: JobSpec; left: number; speed: number; start: number | null; profile: string | null }[] = [];
    let ok = true;
    const ids = g.migEnabled ? g.instances.flatMap((i) => (i.job === null ? [] : [{ id: i.job, start: i.start, profile: i.profile.name }])) : g.wholeGpuJobs.map((id) => ({ id, start: null, profile: null }));
    for (const x of ids) {
      const r = view.running.get(x.id);
      // A background job never stops a foreground one to share its GPU.
      if (!r || r.spec.gpus !== 1 || (r.placement.kind === 'gpus' && g.sharing !== 'exclusive') || (r.spec.priority === 'foreground' && job.priority !== 'foreground')) {
        ok = false;
        break;
      }
      on.push({ spec: r.spec, left: expectedLeft(r), speed: Math.max(r.speed, 1e-9), start: x.start, profile: x.profile });
    }
    if (!ok || on.length === 0 || on.length >= MAX_PER_GPU) continue;
    const allowed = (j: JobSpec, profile: string) => plan.speedOn(j, g.model, profile) > 0;
    const packed = bestLayoutFor(
      g.model,
      [...on.map((o) => o.spec), job],
      ctx,
      true,
      allowed,
    );
    if (!packed) continue;
    const startOf = (id: string) => packed.assignment.get(id) as number;
    const profileAt = (start: number) => (packed.layout.find((l) => l.start === start) as { profile: string }).profile;
    const vNew = plan.speedOn(job, g.model, profileAt(startOf(job.id)));
    if (!(vNew > 0)) continue;
    const runNew = expectedWork(job) / vNew;
    // Sharing never lengthens the schedule: every job on the GPU still ends within the horizon,
    // and, on a GPU a reservation holds, by its deadline (the reserved job is not delayed).
    const limit = Math.min(horizon, plan.deadline.get(g.id) ?? Number.POSITIVE_INFINITY);
    if (now + rc + runNew > limit) continue;
    const cost = rc + restartSeconds;
    // The others' runs at their new speeds; once they are all done the new job grows to the whole GPU.
    let othersDone = 0;
    for (const o of on) {
      const v = plan.speedOn(o.spec, g.model, profileAt(startOf(o.spec.id)));
      othersDone = Math.max(othersDone, v > 0 ? o.left / v : Number.POSITIVE_INFINITY);
    }
    const newEnd = othersDone + cost < runNew ? othersDone + (expectedWork(job) - othersDone * vNew) + cost : runNew;
    let saving = waitUntil + expectedWork(job) - (now + rc + newEnd);
    const moved: string[] = [];
    for (const o of on) {
      const start = startOf(o.spec.id);
      const profile = profileAt(start);
      if (g.migEnabled && o.start === start && o.profile === profile) continue;
      const v = plan.speedOn(o.spec, g.model, profile);
      if (!(v > 0) || now + rc + o.left / v > limit) {
        saving = Number.NEGATIVE_INFINITY;
        break;
      }
      // It runs slower while it shares (and grows back afterwards, at a second restart; not while
      // a long line waits: growth waits for the line to empty).
      const shared = longLine ? o.left / v : Math.min(o.left / v, newEnd);
      saving -= cost + shared * Math.max(0, 1 - v / o.speed) + (shared < o.left / v ? cost : 0);
      moved.push(o.spec.id);
    }
    if (saving <= rc + restartSeconds) continue;
    if (!best || saving > best.saving) best = { gpu: g, layout: packed.layout, assignment: packed.assignment, moved, saving };
  }
  return best;
}

/** Busy GPUs looked at per call for sharing (the least loaded ones): bounds the work of a call. */
export const SHARE_CANDIDATES = 16;

/**
 * Shares busy GPUs with the first of `waiting` (single-GPU jobs that found no place, in serve
 * order, each expected to get a whole GPU at `waitUntil`), each job on the best of the least
 * loaded GPUs, where that saves more than it costs (see bestSplit). The GPU's moved jobs are
 * checkpointed, the GPU re-cut, and the moved jobs and the new one promised their instances.
 */
export function shareBusyGpus(plan: Plan, waiting: readonly JobSpec[], waitUntil: ReadonlyMap<string, number>, horizon: number): void {
  const jobs = waiting.slice(0, MAX_PER_GPU);
  if (jobs.length === 0) return;
  const load = (g: GpuView) => (g.migEnabled ? g.instances.filter((i) => i.job !== null).length : g.wholeGpuJobs.length);
  const candidates = plan.view.gpus
    .filter((g) => isSettled(g, plan.now) && !plan.touched.has(g.id) && load(g) > 0 && load(g) < MAX_PER_GPU)
    .sort((a, b) => load(a) - load(b) || a.id - b.id)
    .slice(0, SHARE_CANDIDATES);
  for (const job of jobs) {
    const wait = waitUntil.get(job.id);
    if (wait === undefined) continue;
    // More wait than are looked at here: some still wait after this call, and growth with them.
    const split = bestSplit(plan, job, wait, horizon, RESTART_SECONDS, candidates, waiting.length > jobs.length);
    if (!split) continue;
    // Sharing moves the GPU's jobs: never a job that may not be preempted.
    if (split.moved.some((id) => plan.view.running.get(id)?.spec.preemptible === false)) continue;
    for (const id of split.moved) plan.decisions.push({ kind: 'preempt', job: id });
    const assignment = new Map([...split.assignment].filter(([id]) => id === job.id || split.moved.includes(id)));
    plan.applyLayout(split.gpu, split.layout, assignment);
  }
}
