import type { Highs } from 'highs';
import { badInput } from '../../errors.js';
import type { GpuModel } from '../../mig/types.js';
import type { ClusterView, Decision, GpuView, JobSpec, Policy, PolicyContext } from '../types.js';
import { fleetModels, migOffIdle, Picker, wholeGpusWith } from './common.js';
import { maxMinFairShares } from './gavel-allocation.js';
import { shareOf, sharesActive, userOf, weightedDeficitOrder } from '../shares.js';

/** Round length, seconds: Gavel's `time_per_iteration` default (scheduler/scheduler.py @ c4fa400, and its trace driver's `--time_per_iteration`). */
export const GAVEL_ROUND_SECONDS = 360;

/** Least seconds between two recomputations of the allocation: Gavel's `minimum_time_between_allocation_resets` default (same file). */
export const GAVEL_RESET_SECONDS = 1920;

/** Options of the gavel policy. */
export interface GavelOptions {
  /** Round length, seconds (default GAVEL_ROUND_SECONDS). */
  readonly roundSeconds?: number;
  /** The HiGHS runtime: needed for fleets of several GPU models (src/exec/highs.ts loads it). */
  readonly highs?: Highs;
  /** The policy's name as given (default `gavel`). */
  readonly name?: string;
}

interface Tracked {
  readonly spec: JobSpec;
  /** First-sight order (arrival order), the last tie-break. */
  readonly seen: number;
  /** Speed on one whole GPU of each type (0 where its memory does not fit). */
  readonly speeds: number[];
  /** Seconds run on each type since the last reset (Gavel's `_job_time_so_far`, seeded with half a round). */
  readonly time: number[];
  /** Its fair share of time on each type, or null until the next recomputation. */
  share: number[] | null;
}

/**
 * `gavel` (or `gavel:SECONDS`, the round length): Gavel's heterogeneity-aware max-min fairness
 * ("LAS" in Narayanan et al., OSDI 2020) realised with its round-based mechanism, after its
 * simulator (stanford-futuredata/gavel @ c4fa400, scheduler/scheduler.py):
 *
 * - the allocation: each job's fair share of time on each GPU type (see maxMinFairShares),
 *   recomputed at a round boundary when jobs arrived or left since the last one and at least
 *   GAVEL_RESET_SECONDS passed since the last recomputation (`_update_priorities`); jobs that
 *   arrived since have no share yet (priority 0: they get only what is left);
 * - rounds of GAVEL_ROUND_SECONDS: at each boundary every job's priority on each type is its share
 *   over the fraction of that type's time it received since the last recomputation (counters
 *   seeded with half a round per job, `_reset_time_run_so_far`); per type in fleet order, jobs in
 *   priority order (ties: larger share, then arrival; Gavel breaks them by its deficit counter,
 *   left out here) take GPUs greedily while they fit (`_schedule_jobs_on_workers_helper`);
 * - a job chosen again on the type it runs on keeps its GPUs; others are preempted (progress
 *   kept) and the chosen ones started; jobs run the round out: GPUs freed by a job that ends
 *   early stay idle and newcomers wait until the next boundary, which comes early when every job
 *   of the round has ended (as in Gavel's simulator);
 * - whole GPUs, MIG off (idle MIG-on GPUs are turned off), any GPUs of a type (Gavel prefers
 *   consolidated placements; migpool's simulator does not model placement).
 *
 * It reads no job's length: only its GPUs, its speed on each GPU model (the performance model:
 * Gavel's measured throughputs) and what it ran. It asks the simulator to call it at each round's
 * end (Policy.wakeAt).
 */
export function gavelPolicy(options: GavelOptions = {}): Policy {
  const round = options.roundSeconds ?? GAVEL_ROUND_SECONDS;
  const name = options.name ?? 'gavel';
  const tracked = new Map<string, Tracked>();
  let seen = 0;
  let workerTime: number[] = [];
  let roundStart: number | null = null;
  let roundEnd: number | null = null;
  let lastReset: number | null = null;
  let needUpdate = false;

  const boundary = (view: ClusterView, ctx: PolicyContext, models: readonly GpuModel[]): Decision[] => {
    const typeOf = new Map(models.map((m, k) => [m.name, k]));
    const gpuAt = (id: number): GpuView => (view.gpus[id]?.id === id ? view.gpus[id] : view.gpus.find((g) => g.id === id)) as GpuView;
    const typeOfGpus = (gpus: readonly number[]): number => typeOf.get(gpuAt(gpus[0] as number).model.name) as number;
    if (workerTime.length !== models.length) workerTime = models.map(() => 0);

    // What the last round's running jobs received.
    if (roundStart !== null) {
      const ran = view.now - roundStart;
      for (const r of view.running.values()) {
        const t = tracked.get(r.spec.id);
        if (!t || r.placement.kind !== 'gpus') continue;
        const k = typeOfGpus(r.placement.gpus);
        t.time[k] = (t.time[k] as number) + ran;
        workerTime[k] = (workerTime[k] as number) + ran;
      }
    }

    // Jobs in the system now: forget those that left, take in newcomers.
    const active: JobSpec[] = [...view.queue];
    for (const r of view.running.values()) active.push(r.spec);
    const ids = new Set(active.map((j) => j.id));
    for (const id of tracked.keys()) {
      if (!ids.has(id)) {
        tracked.delete(id);
        needUpdate = true;
      }
    }
    for (const spec of active) {
      if (tracked.has(spec.id)) continue;
      const speeds = models.map((m) => (ctx.fits(spec, { kind: 'whole', model: m }) ? ctx.speedOn(spec, { kind: 'whole', model: m }) : 0));
      tracked.set(spec.id, { spec, seen: seen++, speeds, time: models.map(() => round / 2), share: null });
      needUpdate = true;
    }

    // Recompute the fair shares (and restart the counters) when due.
    if (needUpdate && (lastReset === null || view.now - lastReset >= GAVEL_RESET_SECONDS)) {
      const jobs = [...tracked.values()];
      const workers = models.map((m) => view.gpus.filter((g) => g.model.name === m.name).length);
      // Fair share among users (when the view has them): a user's weight divided among their jobs,
      // as Gavel's hierarchical policies give an entity's weight to its jobs.
      const perUser = new Map<string, number>();
      const fair = sharesActive(view);
      if (fair) for (const t of jobs) perUser.set(userOf(t.spec), (perUser.get(userOf(t.spec)) ?? 0) + 1);
      const shares = maxMinFairShares(
        jobs.map((t) => ({ gpus: t.spec.gpus, speeds: t.speeds, ...(fair ? { weight: shareOf(view, userOf(t.spec)).weight / (perUser.get(userOf(t.spec)) as number) } : {}) })),
        workers,
        options.highs,
      );
      workerTime = models.map(() => 0);
      jobs.forEach((t, i) => {
        t.share = shares[i] as number[];
        for (let k = 0; k < models.length; k++) {
          t.time[k] = round / 2;
          workerTime[k] = (workerTime[k] as number) + round / 2;
        }
      });
      lastReset = view.now;
      needUpdate = false;
    }

    // GPUs this round may hand out: idle MIG-off GPUs and those of running whole-GPU jobs.
    const left = models.map(() => 0);
    const add = (k: number, n: number): void => {
      left[k] = (left[k] as number) + n;
    };
    for (const g of wholeGpusWith(view, 0)) add(typeOf.get(g.model.name) as number, 1);
    // A job that may not be preempted keeps its GPUs: they are not this round's to hand out.
    const pinned = new Set<string>();
    for (const r of view.running.values()) {
      if (r.placement.kind !== 'gpus') continue;
      if (r.spec.preemptible === false) pinned.add(r.spec.id);
      else add(typeOfGpus(r.placement.gpus), r.placement.gpus.length);
    }

    // Per type, jobs by priority: share over the fraction of the type's time received.
    const chosen = new Map<string, number>();
    const fair = sharesActive(view);
    /** GPUs each user holds in this round: those pinned, then those chosen. */
    const roundHeld = new Map<string, number>();
    if (fair) {
      for (const r of view.running.values()) {
        if (pinned.has(r.spec.id) || r.placement.kind !== 'gpus') roundHeld.set(userOf(r.spec), (roundHeld.get(userOf(r.spec)) ?? 0) + (r.placement.kind === 'gpus' ? r.placement.gpus.length : 0));
      }
    }
    for (let k = 0; k < models.length; k++) {
      const entries: { t: Tracked; priority: number; share: number }[] = [];
      for (const t of tracked.values()) {
        if (chosen.has(t.spec.id) || pinned.has(t.spec.id) || !((t.speeds[k] as number) > 0)) continue;
        const share = t.share ? (t.share[k] as number) : 0;
        const fraction = (workerTime[k] as number) > 0 ? (t.time[k] as number) / (workerTime[k] as number) : 0;
        entries.push({ t, share, priority: share <= 0 ? 0 : fraction > 0 ? share / fraction : share * 1e9 });
      }
      entries.sort((a, b) => b.priority - a.priority || b.share - a.share || a.t.seen - b.t.seen);
      // Fair share among users (when the view has them): users take turns by weighted deficit over
      // this round's GPUs (shares.ts), each user's jobs in Gavel's priority order.
      const order = fair ? weightedDeficitOrder(entries, (e) => userOf(e.t.spec), (e) => e.t.spec.gpus, (u) => shareOf(view, u).weight, roundHeld) : entries;
      for (const e of order) {
        if ((left[k] as number) === 0) break;
        if (e.t.spec.gpus > (left[k] as number)) continue;
        left[k] = (left[k] as number) - e.t.spec.gpus;
        chosen.set(e.t.spec.id, k);
        if (fair) roundHeld.set(userOf(e.t.spec), (roundHeld.get(userOf(e.t.spec)) ?? 0) + e.t.spec.gpus);
      }
    }

    // Realise the round: keep, preempt, start.
    const decisions: Decision[] = [];
    const freed: GpuView[] = [];
    for (const r of view.running.values()) {
      if (r.placement.kind !== 'gpus' || pinned.has(r.spec.id)) continue;
      const k = chosen.get(r.spec.id);
      if (k !== undefined && k === typeOfGpus(r.placement.gpus)) {
        chosen.delete(r.spec.id);
        continue;
      }
      chosen.delete(r.spec.id);
      decisions.push({ kind: 'preempt', job: r.spec.id });
      for (const id of r.placement.gpus) freed.push(gpuAt(id));
    }
    const pool = chosen.size > 0 ? [...wholeGpusWith(view, 0), ...freed] : [];
    const pickers = models.map((m) => new Picker<GpuView>(models.length === 1 ? pool : pool.filter((g) => g.model.name === m.name)));
    for (const [id, k] of chosen) {
      const t = tracked.get(id) as Tracked;
      const gs = (pickers[k] as Picker<GpuView>).takeMany(t.spec.gpus);
      if (gs) decisions.push({ kind: 'start-on-gpus', job: id, gpus: gs.map((g) => g.id), sharing: 'exclusive' });
    }
    // Gavel places a job on GPUs of one model. A job that no model alone can hold (more GPUs than
    // any model has here) would never run: it runs across models when enough GPUs are left idle.
    const perModel = models.map((m) => view.gpus.filter((g) => g.model.name === m.name).length);
    const most = Math.max(0, ...perModel);
    const used = new Set(decisions.flatMap((d) => (d.kind === 'start-on-gpus' ? d.gpus : [])));
    const started = new Set(decisions.flatMap((d) => (d.kind === 'start-on-gpus' ? [d.job] : [])));
    const spare = [...wholeGpusWith(view, 0), ...freed].filter((g) => !used.has(g.id));
    for (const q of view.queue) {
      if (q.gpus <= most || started.has(q.id) || q.gpus > spare.length) continue;
      const gs = spare.splice(0, q.gpus);
      decisions.push({ kind: 'start-on-gpus', job: q.id, gpus: gs.map((g) => g.id), sharing: 'exclusive' });
    }
    roundStart = view.now;
    roundEnd = view.now + round;
    return decisions;
  };

  return {
    name,
    decide(view, ctx): Decision[] {
      const off = migOffIdle(view);
      if (roundEnd !== null && view.now < roundEnd && view.running.size > 0) return off;
      const decisions = boundary(view, ctx, fleetModels(view));
      return [...decisions.filter((d) => d.kind === 'preempt'), ...off, ...decisions.filter((d) => d.kind !== 'preempt')];
    },
    wakeAt(view): number | null {
      return roundEnd !== null && view.running.size > 0 ? roundEnd : null;
    },
  };
}

/**
 * The round length of `gavel:SECONDS`: a positive number of seconds.
 * @throws MigpoolError BAD_INPUT saying what is wrong and the fix (parsePolicy names the policy)
 */
export function parseGavelRound(arg: string): number {
  const n = /^\d+(\.\d+)?$/.test(arg.trim()) ? Number(arg) : NaN;
  if (!(n > 0)) throw badInput(`gavel takes a round length in seconds (e.g. gavel:${GAVEL_ROUND_SECONDS}), got '${arg}'`);
  return n;
}
