import { badInput } from '../../errors.js';
import type { ClusterView, Decision, GpuView, JobSpec, Policy, PolicyContext } from '../types.js';
import { canEverRunWhole, historyOf, migOffIdle, Picker, wholeGpusWith } from './common.js';

/**
 * Queue thresholds of the reference simulator's `dlas-gpu` run, GPU-seconds of attained service:
 * SymbioticLab/Tiresias @ 959f9b0, simulator/jobs.py `_TFJobs.__init__`: `num_queue = 3`,
 * `queue_limit = [3250, 7200, 18000]` (three queues use the first two limits).
 */
export const TIRESIAS_THRESHOLDS: readonly number[] = [3250, 7200];

/**
 * `tiresias` (or `tiresias:T1,T2,...`): discretised two-dimensional Least-Attained-Service, the
 * scheduler of Tiresias (Gu et al., "Tiresias: A GPU Cluster Manager for Distributed Deep
 * Learning", NSDI 2019), as its authors' simulator runs it (`--schedule=dlas-gpu`).
 *
 * - A job's attained service is GPUs held x seconds run, over all its runs (the view's history,
 *   measured). It never reads a job's length or an estimate of it.
 * - Queues Q0..Qn split by the thresholds (GPU-seconds): a job enters Q0 and moves down when its
 *   attained service reaches the next threshold (no starvation guard: it never moves up).
 * - On every call, queues in order and each queue in its order: a job runs if the GPUs not yet
 *   handed out (counting those of running jobs) hold it, else it waits (later, smaller jobs may
 *   still run: greedy fit, no reservation); a running job that does not get its GPUs is preempted
 *   (its progress kept, as with a checkpoint). Whole GPUs, MIG off (MIG-on GPUs found idle are
 *   turned off), one job per GPU, any GPUs of the fleet (no node placement).
 * - Order within a queue, as in the reference: a job joins the end of a queue when it arrives or
 *   moves down to it; after each call the queue's running jobs come first and its waiting jobs
 *   after them, each keeping their order. So a Q0 job is never preempted, a job that moved down
 *   waits behind the jobs already waiting in its new queue, and newcomers to Q0 preempt it when
 *   GPUs run short.
 *
 * What matches the reference (SymbioticLab/Tiresias @ 959f9b0, simulator/run_sim.py
 * `dlas_sim_jobs(gputime=True)`): the thresholds, the queue order and its re-sorting, greedy fit
 * by GPU count alone (its `dlas_sim_jobs` counts `CLUSTER.free_gpu` whatever the `--scheme`, so
 * placement on nodes plays no part), free preemption and restart, demotion by GPUs x executed
 * seconds, and a wake-up when a running job is due to reach its next threshold (Policy.wakeAt; the
 * reference's `next_job_jump`). What differs: that wake-up comes at the exact crossing, while the
 * reference computes it in whole seconds and, for a multi-GPU job, late (`(limit -
 * executed_seconds) / gpus` with Python 2 integer division, where `(limit - executed_seconds *
 * gpus) / gpus` was meant); attained service is not truncated to whole seconds; a job that crossed
 * two thresholds since the last call moves both levels at once (the reference, one per event).
 * Measured against a transcription of `dlas_sim_jobs` (kept outside the project) on the first
 * Philly jobs, average JCT: 10,000 jobs on 512 GPUs, reference 30,751 s, this policy 30,981 s
 * (+0.75%); 20,000 jobs on 256 GPUs, 55,203 s vs 56,070 s (+1.6%). Waking when the reference
 * does instead gives +0.17% and +0.5%; not waking at all (a call only at arrivals and
 * completions), -0.03% and +3.7%.
 *
 * State: the policy remembers each job's queue and its place in it (the reference's order cannot
 * be read back from a view); a job it has not seen joins the end of the queue its attained service
 * puts it in, so a restarted service rebuilds the queues from the history alone.
 */
export function tiresiasPolicy(thresholds: readonly number[] = TIRESIAS_THRESHOLDS, name = 'tiresias'): Policy {
  const limits = [...thresholds];
  const queues: string[][] = limits.map(() => []);
  queues.push([]);
  const levelOf = new Map<string, number>();
  /** Order of first sight (arrival order), to move jobs down in the reference's order. */
  const seenAt = new Map<string, number>();
  let seen = 0;
  const levelFor = (attained: number): number => {
    let q = 0;
    while (q < limits.length && attained >= (limits[q] as number) - CROSSING_TOLERANCE) q++;
    return q;
  };
  const join = (id: string, level: number): void => {
    levelOf.set(id, level);
    (queues[level] as string[]).push(id);
  };

  return {
    name,
    decide(view: ClusterView, ctx: PolicyContext): Decision[] {
      const queued = new Map<string, JobSpec>();
      for (const j of view.queue) queued.set(j.id, j);

      // Forget finished jobs; note newcomers (arrival order), then running jobs it never saw.
      for (const q of queues) {
        let w = 0;
        for (const id of q) {
          if (queued.has(id) || view.running.has(id)) q[w++] = id;
          else {
            levelOf.delete(id);
            seenAt.delete(id);
          }
        }
        q.length = w;
      }
      const sight = (id: string): void => {
        if (levelOf.has(id)) return;
        seenAt.set(id, seen++);
        join(id, levelFor(historyOf(view, id).attainedGpuSeconds));
      };
      for (const j of view.queue) sight(j.id);
      for (const id of view.running.keys()) sight(id);

      // Move running jobs down past the thresholds they crossed, in arrival order.
      const down: { id: string; level: number }[] = [];
      for (const id of view.running.keys()) {
        const level = levelFor(historyOf(view, id).attainedGpuSeconds);
        if (level > (levelOf.get(id) as number)) down.push({ id, level });
      }
      down.sort((a, b) => (seenAt.get(a.id) as number) - (seenAt.get(b.id) as number));
      for (const { id, level } of down) {
        const q = queues[levelOf.get(id) as number] as string[];
        q.splice(q.indexOf(id), 1);
        join(id, level);
      }

      // One pass in priority order over the GPUs idle now plus those its running jobs hold.
      const idle = wholeGpusWith(view, 0);
      let free = idle.size;
      for (const r of view.running.values()) if (r.placement.kind === 'gpus') free += r.placement.gpus.length;
      const preempts: Decision[] = [];
      const freed: number[] = [];
      const starts: JobSpec[] = [];
      const runsAfter = new Set<string>();
      for (const q of queues) {
        for (const id of q) {
          const r = view.running.get(id);
          if (r) {
            if (r.placement.kind !== 'gpus') {
              runsAfter.add(id);
              continue;
            }
            const n = r.placement.gpus.length;
            if (n <= free) {
              free -= n;
              runsAfter.add(id);
            } else {
              preempts.push({ kind: 'preempt', job: id });
              freed.push(...r.placement.gpus);
            }
            continue;
          }
          const job = queued.get(id) as JobSpec;
          if (job.gpus > free || !canEverRunWhole(view, ctx, job)) continue;
          free -= job.gpus;
          starts.push(job);
          runsAfter.add(id);
        }
      }

      const decisions: Decision[] = [...preempts, ...migOffIdle(view)];
      const byId = new Map(view.gpus.map((g) => [g.id, g]));
      const picker = new Picker<GpuView>([...idle, ...freed.map((id) => byId.get(id) as GpuView)]);
      for (const job of starts) {
        const gs = picker.takeMany(job.gpus, (g) => ctx.fits(job, { kind: 'whole', model: g.model }));
        if (!gs) {
          runsAfter.delete(job.id);
          continue;
        }
        decisions.push({ kind: 'start-on-gpus', job: job.id, gpus: gs.map((g) => g.id), sharing: 'exclusive' });
      }

      // Running jobs first in each queue, waiting ones after, each keeping their order.
      for (const q of queues) {
        const waiting = q.filter((id) => !runsAfter.has(id));
        if (waiting.length === 0 || waiting.length === q.length) continue;
        let w = 0;
        for (const id of q) if (runsAfter.has(id)) q[w++] = id;
        for (const id of waiting) q[w++] = id;
      }
      return decisions;
    },
    wakeAt(view: ClusterView): number | null {
      // The next time a running job reaches the threshold below its queue (as the reference's
      // `next_job_jump`, but at the exact time).
      let next = Number.POSITIVE_INFINITY;
      for (const [id, r] of view.running) {
        const level = levelOf.get(id);
        if (level === undefined || level >= limits.length || r.placement.kind !== 'gpus') continue;
        const at = view.now + ((limits[level] as number) - historyOf(view, id).attainedGpuSeconds) / r.placement.gpus.length;
        if (at < next) next = at;
      }
      return Number.isFinite(next) && next > view.now ? next : null;
    },
  };
}

/** GPU-seconds by which attained service may fall short of a threshold and count as reaching it (float rounding at a wake-up). */
const CROSSING_TOLERANCE = 1e-6;

/**
 * The thresholds of `tiresias:T1,T2,...`: GPU-seconds, positive and increasing (one or more).
 * @throws MigpoolError BAD_INPUT naming the policy and the fix
 */
export function parseTiresiasThresholds(arg: string, policy: string): number[] {
  const parts = arg.split(/[,/]/).map((s) => s.trim());
  const values = parts.map((s) => (/^\d+(\.\d+)?$/.test(s) ? Number(s) : NaN));
  const bad = values.findIndex((v, i) => !(v > 0) || (i > 0 && v <= (values[i - 1] as number)));
  if (arg.trim() === '' || bad >= 0) {
    throw badInput(`policy '${policy}': tiresias thresholds must be increasing positive GPU-seconds separated by commas (e.g. tiresias:3250,7200), got '${parts[Math.max(0, bad)] ?? arg}'`);
  }
  return values;
}
