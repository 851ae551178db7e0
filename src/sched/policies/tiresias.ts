import { badInput } from '../../errors.js';
import type { ClusterView, Decision, GpuView, JobSpec, Policy, PolicyContext } from '../types.js';
import { canEverRunWhole, chain, historyOf, migOffIdle, Picker, pruneQueues, wholeGpusWith } from './common.js';
import { shareOf, sharesActive, userOf, weightedDeficitOrder } from '../shares.js';

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
  /** When each running job reaches the threshold below its queue, soonest first (stale entries skipped). */
  const crossings = new MinHeap<{ at: number; id: string; run: number }>((a, b) => a.at - b.at || a.run - b.run);
  /** Per running job, the run its crossing entry belongs to (a preempted job's entry goes stale). */
  const runOf = new Map<string, number>();
  let runs = 0;
  const watch = (view: ClusterView, id: string, gpus: number): void => {
    const level = levelOf.get(id) as number;
    const run = runs++;
    runOf.set(id, run);
    if (level < limits.length) crossings.push({ at: view.now + ((limits[level] as number) - historyOf(view, id).attainedGpuSeconds) / gpus, id, run });
  };
  const live = (view: ClusterView, e: { id: string; run: number }): boolean => runOf.get(e.id) === e.run && view.running.has(e.id);
  /** Moves running jobs that reached a threshold down, in arrival order. */
  const demote = (view: ClusterView): void => {
    const down: string[] = [];
    for (let e = crossings.peek(); e && e.at <= view.now + CROSSING_TIME_TOLERANCE; e = crossings.peek()) {
      crossings.pop();
      if (live(view, e)) down.push(e.id);
    }
    if (down.length === 0) return;
    down.sort((a, b) => (seenAt.get(a) as number) - (seenAt.get(b) as number));
    for (const id of down) {
      const level = levelFor(historyOf(view, id).attainedGpuSeconds);
      const from = levelOf.get(id) as number;
      if (level > from) {
        const q = queues[from] as string[];
        q.splice(q.indexOf(id), 1);
        join(id, level);
      }
      const r = view.running.get(id);
      if (r && r.placement.kind === 'gpus') watch(view, id, r.placement.gpus.length);
    }
  };

  return {
    name,
    decide(view: ClusterView, ctx: PolicyContext): Decision[] {
      demote(view);
      // Nothing waits: nothing to start and no one to preempt for; the queues are tidied next time.
      if (view.queue.length === 0) return migOffIdle(view);
      const queued = new Map<string, JobSpec>();
      for (const j of view.queue) queued.set(j.id, j);

      // Forget finished jobs; note newcomers (arrival order), then running jobs it never saw.
      pruneQueues(queues, queued, view, (id) => {
        levelOf.delete(id);
        seenAt.delete(id);
        runOf.delete(id);
      });
      for (const j of view.queue) {
        if (levelOf.has(j.id)) continue;
        seenAt.set(j.id, seen++);
        join(j.id, levelFor(historyOf(view, j.id).attainedGpuSeconds));
      }
      if (levelOf.size < queued.size + view.running.size) {
        for (const [id, r] of view.running) {
          if (levelOf.has(id)) continue;
          seenAt.set(id, seen++);
          join(id, levelFor(historyOf(view, id).attainedGpuSeconds));
          if (r.placement.kind === 'gpus') watch(view, id, r.placement.gpus.length);
        }
      }

      // One pass in priority order over the GPUs idle now plus those its running jobs hold.
      const idle = wholeGpusWith(view, 0);
      let free = idle.size;
      const preempts: Decision[] = [];
      const freed: number[] = [];
      const starts: JobSpec[] = [];
      const runsAfter = new Set<string>();
      for (const [id, r] of view.running) {
        if (r.placement.kind !== 'gpus') continue;
        // A job that may not be preempted keeps its GPUs whatever its queue says.
        if (r.spec.preemptible === false) runsAfter.add(id);
        else free += r.placement.gpus.length;
      }
      // Fair share among users (when the view has them): within each queue, users take turns by
      // weighted deficit (shares.ts), counting the GPUs handed out so far in this pass.
      const fair = sharesActive(view);
      const handed = new Map<string, number>();
      const specOf = (id: string): JobSpec => (view.running.get(id)?.spec ?? queued.get(id)) as JobSpec;
      const hand = (id: string): void => {
        if (!fair) return;
        const spec = specOf(id);
        handed.set(userOf(spec), (handed.get(userOf(spec)) ?? 0) + spec.gpus);
      };
      for (const q of queues) {
        const order = fair ? weightedDeficitOrder(q, (id) => userOf(specOf(id)), (id) => specOf(id).gpus, (u) => shareOf(view, u).weight, handed) : q;
        for (const id of order) {
          const r = view.running.get(id);
          if (r) {
            if (r.placement.kind !== 'gpus' || r.spec.preemptible === false) {
              runsAfter.add(id);
              hand(id);
              continue;
            }
            const n = r.placement.gpus.length;
            if (n <= free) {
              free -= n;
              runsAfter.add(id);
              hand(id);
            } else {
              preempts.push({ kind: 'preempt', job: id });
              runOf.delete(id);
              freed.push(...r.placement.gpus);
            }
            continue;
          }
          const job = queued.get(id) as JobSpec;
          if (job.gpus > free || !canEverRunWhole(view, ctx, job)) continue;
          free -= job.gpus;
          starts.push(job);
          runsAfter.add(id);
          hand(id);
        }
      }

      const decisions: Decision[] = [...preempts, ...migOffIdle(view)];
      const gpuAt = (id: number): GpuView => (view.gpus[id]?.id === id ? view.gpus[id] : view.gpus.find((g) => g.id === id)) as GpuView;
      const picker = new Picker<GpuView>(chain(idle, freed.map(gpuAt)));
      for (const job of starts) {
        const gs = picker.takeMany(job.gpus, (g) => ctx.fits(job, { kind: 'whole', model: g.model }));
        if (!gs) {
          runsAfter.delete(job.id);
          continue;
        }
        decisions.push({ kind: 'start-on-gpus', job: job.id, gpus: gs.map((g) => g.id), sharing: 'exclusive' });
        watch(view, job.id, job.gpus);
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
      for (let e = crossings.peek(); e; e = crossings.peek()) {
        if (live(view, e)) return e.at > view.now ? e.at : null;
        crossings.pop();
      }
      return null;
    },
  };
}

/** GPU-seconds by which attained service may fall short of a threshold and count as reaching it (float rounding at a wake-up). */
const CROSSING_TOLERANCE = 1e-6;

/** Seconds by which a wake-up may come before a crossing and still count it (float rounding). */
const CROSSING_TIME_TOLERANCE = 1e-9;

/** A binary min-heap (migpool keeps its wake-ups in one too). */
export class MinHeap<T> {
  private readonly a: T[] = [];
  constructor(private readonly less: (x: T, y: T) => number) {}
  peek(): T | undefined {
    return this.a[0];
  }
  push(x: T): void {
    const a = this.a;
    a.push(x);
    for (let i = a.length - 1; i > 0; ) {
      const p = (i - 1) >> 1;
      if (this.less(a[i] as T, a[p] as T) >= 0) break;
      [a[i], a[p]] = [a[p] as T, a[i] as T];
      i = p;
    }
  }
  pop(): T | undefined {
    const a = this.a;
    const top = a[0];
    const last = a.pop();
    if (a.length > 0 && last !== undefined) {
      a[0] = last;
      for (let i = 0; ; ) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && this.less(a[l] as T, a[m] as T) < 0) m = l;
        if (r < a.length && this.less(a[r] as T, a[m] as T) < 0) m = r;
        if (m === i) break;
        [a[i], a[m]] = [a[m] as T, a[i] as T];
        i = m;
      }
    }
    return top;
  }
}

/**
 * The thresholds of `tiresias:T1,T2,...`: GPU-seconds, positive and increasing (one or more).
 * @throws MigpoolError BAD_INPUT saying what is wrong and the fix (parsePolicy names the policy)
 */
export function parseTiresiasThresholds(arg: string): number[] {
  const parts = arg.split(/[,/]/).map((s) => s.trim());
  const values = parts.map((s) => (/^\d+(\.\d+)?$/.test(s) ? Number(s) : NaN));
  const bad = values.findIndex((v, i) => !(v > 0) || (i > 0 && v <= (values[i - 1] as number)));
  if (arg.trim() === '' || bad >= 0) {
    throw badInput(`tiresias thresholds must be increasing positive GPU-seconds separated by commas (e.g. tiresias:3250,7200), got '${parts[Math.max(0, bad)] ?? arg}'`);
  }
  return values;
}
