import type { ClusterView, Decision, GpuView, JobSpec, Policy, PolicyContext, RunningJobView } from '../types.js';
import { canEverRun, chain, historyOf, idleMigGpus, isSettled, Picker, profileAllows, pruneQueues, wholeGpusWith } from './common.js';
import { explainWaiting, type WaitReason } from './migpool-explain.js';
import { denseLayout, gpuAt, SlicePool, type SliceGrant } from './migpool-slices.js';
import { MinHeap, TIRESIAS_THRESHOLDS } from './tiresias.js';

/**
 * Levels of attained service (GPU-seconds held) a job moves down through: Tiresias' thresholds
 * (tiresias.ts, from the reference simulator). A job on a slice that crosses the first is moved to
 * a whole GPU once one is free.
 */
export const MIGPOOL_THRESHOLDS: readonly number[] = TIRESIAS_THRESHOLDS;

/**
 * ASSUMPTION (design choice, measured): seconds a job runs before it may be preempted again:
 * twenty times the simulator's default preemption cost (60 s, `--preemption-cost`), so a
 * preemption loses at most a twentieth of the run before it. Measured against 600 s (first 20,000
 * Philly jobs on 256 A100, noisy estimates, preemption cost 60 s): average JCT 16.18 h -> 13.16 h
 * (seed 1) and 15.82 h -> 13.14 h (seed 2), p99 slowdown 32.4 -> 10.1 and 43.1 -> 10.3; 300 s
 * gave 15.87 h and 47.9. A short minimum run lets every newcomer preempt a job that has just
 * restarted, so GPUs go to restarts and the jobs at the preemption cap end up holding them.
 */
export const MIN_RUN_SECONDS = 1200;

/**
 * ASSUMPTION (design choice, measured: see MigpoolTuning.minRunGrowth): each preemption a job has
 * had multiplies its minimum run by this (1: off).
 */
export const MIN_RUN_GROWTH = 1;

/**
 * ASSUMPTION (design choice, cited default): seconds a background job waits before it ranks as a
 * foreground one: Slurm's PriorityMaxAge default, 7-0 (slurm.conf(5): the age at which a job's
 * age factor reaches its maximum), so background jobs fill what foreground leaves but do not wait
 * forever under a sustained overload. Measured (Alibaba's trace on 8 A100, seed 1, noisy, cost
 * 60 s): average JCT 1,027 h -> 350 h (background jobs 2,203 h -> 453 h; foreground 228 h ->
 * 280 h), p99 slowdown 348,362 -> 49,009; the deeppool trace (16 A100, seeds 1-3) is unchanged,
 * no background job there waits 3 days (1 day: its big jobs' p99 JCT 6.56 d -> 9.60 d).
 */
export const BACKGROUND_AGE_SECONDS = 7 * 86_400;

/**
 * Why migpool leaves idle slices beside busy ones as they are, for pending reasons. Measured: a
 * rule that re-cut them into a slice for a waiting job (kept busy slices, for background jobs only
 * while no foreground job waited for whole GPUs) took Alibaba's trace on 8 A100 from 350 h to 576
 * h average JCT (seed 1, noisy, cost 60 s), though the demo and the synthetic trace gained a little.
 */
export const RECUT_RULE =
  'it cuts only whole GPUs into slices, and re-partitions a MIG GPU only once all its slices are idle (re-cutting idle slices beside busy ones cost more than it gained in simulation)';

/**
 * ASSUMPTION (design choice, measured): big jobs take turns in the last level. A waiting job that
 * asks for at least BIG_TURN_SHARE of the fleet's GPUs and has waited BIG_TURN_AFTER_SECONDS since
 * it last ran goes ahead of the last level's running jobs of that size first seen after it (first
 * come, first served among big jobs); smaller running jobs stay ahead of it. Running jobs go first
 * within a level, so without this a big job that got to the last level later, while running, keeps
 * the GPUs from one that waits there: on the deeppool trace (16 A100, seed 2, noisy, cost 60 s)
 * 16-GPU jobs waited six days behind 8-GPU jobs that arrived after them.
 *
 * Measured with the simulator (noisy, cost 60 s; means over seeds 1-3, then seeds 4-6):
 * - deeppool (16 A100): average JCT 5.95 h -> 6.37 h, p99 slowdown 187 -> 284, big jobs' p99 JCT
 *   6.25 d -> 5.81 d (exclusive 6.15 d); seeds 4-6: 6.32 h -> 6.20 h, 207 -> 167, 11.06 d -> 6.55 d
 *   (exclusive 7.86 d).
 * - synthetic 1.5x overload (16 A100): 3.24 h -> 3.17 h, 24.3 -> 22.5, 4.02 d -> 3.46 d (exclusive
 *   2.47 d); seeds 4-6: 3.60 h either way, big jobs 4.96 d -> 3.68 d, makespan 9.86 d -> 8.74 d.
 * - Alibaba on 8 A100 (seed 1): 350.7 h, makespan 291.9 d, p99 slowdown 49,009 either way.
 * - Philly's first 20,000 jobs on 256 A100 (seed 1): unchanged (no job asks for 128 GPUs).
 * - Philly's first 2,000 jobs on 32 A100 (seed 1): 78.4 h -> 88.6 h, p99 slowdown 66 -> 115
 *   (Tiresias 106 h and 116).
 * Tried instead: every job that waited 12 h passes later running jobs (Philly 20k/256: 13.2 h ->
 * 36.3 h average JCT); big waiters passing every later running job (Alibaba/8 makespan 292 d -> 352 d:
 * its longest single-GPU pod was preempted for 8-GPU pods); a quarter of the fleet, or 6 h
 * (synthetic makespan 5.5 d -> 6.7 d); 24 h (deeppool big jobs 5.86 d, p99 slowdown 245, average
 * 6.53 h); the last level ordered by attained service (deeppool 7.1 h, big jobs 6.2 d).
 */
export const BIG_TURN_SHARE = 0.5;
export const BIG_TURN_AFTER_SECONDS = 12 * 3600;

/**
 * ASSUMPTION (design choice, measured): MIG GPUs are cleared for a big job only when one MIG GPU
 * is all it lacks. A waiting foreground job that asks for at least MIG_CLEAR_SHARE of the fleet's
 * GPUs (and at least 2), has waited MigpoolTuning.clearAfterSeconds (CLEAR_AFTER_SECONDS) and
 * lacks whole GPUs after the idle ones and those the pass may take, and whose lack at most
 * MigpoolTuning.clearMaxGpus (CLEAR_MAX_GPUS) MIG GPUs would cover, has those GPUs cleared for
 * it: GPUs whose slice jobs all have more attained service than it (past the first threshold),
 * may be preempted now (past their minimum run, below the cap) and rank as foreground, fewest
 * slice jobs first. Their jobs are checkpointed and requeued, the GPUs go back to whole, and no
 * whole GPU goes to a job behind it meanwhile. The case it is for: a slice job is otherwise
 * preempted only to move to a whole GPU left idle, so a long job packed young keeps its slice, and
 * its GPU from whole use, to its end. On Alibaba's trace on 8 A100 (seed 1) up to 17 foreground
 * pods of hundreds to thousands of hours ran on slices from day 57 to day 170 while 8-GPU pods of
 * one to ten minutes of work that arrived from day 117 waited about 1,000 h for them all to end;
 * from day 261 to day 311 (seed 1) one slice job on one GPU kept 17 such pods waiting with the
 * fleet at 13% use.
 *
 * Measured (simulator library, noisy, cost 60 s; Alibaba/8 means over seeds 1-3, then over seeds
 * 4-6 as data the setting was not chosen on), against no clearing (the default until 2026-11-24):
 * - Alibaba/8 seeds 1-3: average JCT 89.6 h -> 93.4 h (Tiresias 319.7 h), big jobs' p99 JCT
 *   206.2 d -> 138.3 d (exclusive 200.4 d), makespan 336.1 d -> 323.7 d (exclusive 340.7 d), p99
 *   slowdown 21,761 -> 21,477; seeds 4-6: 103.6 h -> 102.5 h, big jobs 126.6 d -> 180.0 d (exclusive
 *   211.6 d; 77.7 / 82.0 / 220.1 d -> 191.1 / 178.6 / 170.3 d), makespan 344.0 d -> 328.4 d
 *   (exclusive 349.8 d), p99 slowdown 25,269 -> 22,158.
 * - synthetic seeds 1-3: average 3.26 h -> 3.25 h, big jobs 3.66 d -> 3.68 d; deeppool unchanged
 *   (its slice jobs are background ones, which clearing leaves alone: clearing those too took its
 *   average from 6.50 h to 7.50 h); Philly 20k/256 seed 1 unchanged (13.07 h).
 * - Clearing as many MIG GPUs as the job lacks (clearMaxGpus Infinity), fifth session: for jobs of
 *   the whole fleet after 12 h (with the compare harness, seeds 1-3) Alibaba/8's average JCT went
 *   to 307.7 h (165 / 469 / 289 h: 0.96x Tiresias'), its p99 slowdown to 53,650, and each run took
 *   8 to 25 times as long, for big jobs 183.1 d and makespan 319.2 d; after 3 days 253 h, 138.2 d,
 *   304.5 d. Each clearing preempted the slice jobs of several GPUs for pods of minutes, and the
 *   preempted jobs reached the cap. Up to 2 MIG GPUs, half the fleet, at once (seeds 1-3):
 *   Alibaba/8 143.6 h (seed 1), big jobs 205.3 d; whole fleet, 1 GPU: seed 1 96.9 h, 161.8 d;
 *   half the fleet after 1 h: seed 1 95.9 h, 162.4 d.
 */
export const MIG_CLEAR_SHARE = 0.5;
/** Most MIG GPUs cleared for one waiting job (see MIG_CLEAR_SHARE). */
export const CLEAR_MAX_GPUS = 1;
/** Seconds a big job waits before a MIG GPU may be cleared for it: none (see MIG_CLEAR_SHARE). */
export const CLEAR_AFTER_SECONDS = 0;

/** Preemptions after which a job is never preempted again (issue 17's limit). */
export const MAX_PREEMPTIONS = 10;

/**
 * ASSUMPTION (design choice, measured on the synthetic overload and the first 2,000 Philly jobs
 * on 32 A100): a waiting job is starving, and goes ahead of every other, once it has waited
 * AGE_FACTOR times as long as it has run so far, and at least AGE_MIN_SECONDS (Tiresias'
 * starvation guard, NSDI'19 section 4.2, promotes on the same ratio). Nothing here reads a job's
 * length. A short guard costs the average dearly (first 2,000 Philly jobs on 32 A100: 24 h gives
 * an average JCT of 528 h against 83 h without, 7 days 155 h; Alibaba on 8 A100: 30 days gives
 * 1,320 h against 1,048 h without), because starving jobs then run to their end; a year makes it
 * a safety net against waiting forever rather than a scheduling rule.
 */
export const AGE_FACTOR = 4;
export const AGE_MIN_SECONDS = 365 * 86_400;

/** The policy's knobs (tests and experiments change them; the registry uses DEFAULT_TUNING). */
export interface MigpoolTuning {
  readonly thresholds: readonly number[];
  readonly minRunSeconds: number;
  readonly maxPreemptions: number;
  readonly ageFactor: number;
  readonly ageMinSeconds: number;
  /** Whether a starving job, once started, runs to its end. */
  readonly agedRunsToEnd: boolean;
  /**
   * Highest level (1: young, under the first threshold) whose single-GPU jobs go on slices when
   * jobs wait. All levels by default: on the synthetic overload, packing only young jobs gave an
   * average JCT of 7.6 h against 6.0 h for all (seed 1, with the guard then at 8 h).
   */
  readonly packLevel: number;
  /** Fewest GPUs a job asks for for the starvation guard to apply to it. */
  readonly ageGpus: number;
  /**
   * A job runs at least this many times its earlier runs' length (wall seconds) before it may be
   * preempted again (0: MIN_RUN_SECONDS only). Off by default: 1 took Philly 2,000/32's average
   * JCT from 83 h to 90 h and its p99 slowdown from 69 to 833.
   */
  readonly minRunFactor: number;
  /**
   * Jobs of at least this many GPUs are never preempted once started (Infinity: none). Off by
   * default: on the synthetic overload 4 brought the big jobs' p99 JCT from 3.8 d to 1.6 d
   * (exclusive: 2.5 d), but on the first 2,000 Philly jobs on 32 A100 it took the average JCT
   * from 83 h to 339 h (Philly's big jobs run for weeks and then hold their GPUs).
   */
  readonly pinGpus: number;
  /** Whether GPUs drain for a starving job that lacks them (no whole start behind it). */
  readonly drain: boolean;
  /**
   * A job's minimum run is minRunSeconds times this to the power of its preemptions so far (1:
   * always minRunSeconds), so a job preempted often is preempted less often and reaches the
   * preemption cap (after which it holds its GPUs to its end) later or never. Off by default
   * (MIN_RUN_GROWTH): with a 600 s minimum run, 2 took the first 20,000 Philly jobs on 256 A100
   * (seed 1) from 16.18 h to 14.90 h average JCT but its p99 slowdown from 32.4 to 87.2 (1.5:
   * 15.54 h, 49.1; synthetic overload 16 A100: 3.16 h -> 3.18 h, p99 slowdown 32.0 -> 48.6);
   * a longer minimum run for all did better on both.
   */
  readonly minRunGrowth: number;
  /** Seconds a background job waits before it ranks as a foreground one (Infinity: never). */
  readonly backgroundAgeSeconds: number;
  /**
   * Whether jobs ranked as background keep the minimum run on whole GPUs (on slices they never
   * had it). Off by default: background is fill, checkpointed and requeued as soon as foreground
   * wants its GPUs. Measured (deeppool trace on 16 A100, seeds 1-3, noisy, cost 60 s): with the
   * minimum run, average JCT 5.64 h, p99 slowdown 221, big jobs' p99 JCT 6.56 d (exclusive 6.15
   * d); without, 5.95 h, 187 and 6.25 d (Tiresias 7.92 h and 434). Alibaba on 8 A100 (seed 1):
   * 350 h either way. Synthetic and Philly have no background jobs.
   */
  readonly backgroundMinRun: boolean;
  /** Share of the fleet's GPUs from which jobs take turns in the last level (Infinity: off). */
  readonly bigTurnShare: number;
  /** Seconds a big job waits in the last level before its turn comes. */
  readonly bigTurnAfterSeconds: number;
  /**
   * Whether a job at the preemption cap may be packed onto a slice. Off by default: it could never
   * be moved to a whole GPU again (a move is a preemption), so a long one runs to its end at a
   * slice's speed. Measured (noisy, cost 60 s, with big jobs' turns): the synthetic overload's
   * makespan 6.62 d -> 5.55 d (seed 3: a 64-hour single-GPU job ended at day 9.3 on a slice
   * instead of 6.1; exclusive 6.11 d), seeds 4-6 8.74 d -> 7.02 d (exclusive 7.96 d), its
   * average JCT 3.12 h -> 3.26 h; deeppool 5.72 h -> 6.90 h average, big jobs' p99 JCT 5.37 d ->
   * 5.11 d (seeds 4-6: 7.55 h -> 6.61 h, 6.83 d -> 5.13 d); Alibaba on 8 A100 (seed 1) unchanged;
   * Philly 20k/256 (seed 1) 13.16 h -> 13.06 h, makespan 89.45 d -> 90.71 d, p99 slowdown 10.1 -> 15.6.
   */
  readonly packCapped: boolean;
  /**
   * Whether a job at the preemption cap waits to start while the pass leaves a job of a lower level
   * (less attained service) waiting for whole GPUs. On by default: once started it holds its GPUs
   * to its end (it may not be preempted again), so starting it then gives a long job the GPUs that
   * young jobs queue for. Found on Alibaba's trace on 8 A100 (seed 2): from day 121 to day 185 five
   * of the eight GPUs were held by single-GPU pods at the cap while up to 4,069 jobs queued.
   * Measured (noisy, cost 60 s): Alibaba/8 seeds 1-3 average JCT 350.8 h / 669.0 h / ~350 h ->
   * 76.3 h / 83.7 h / 108.6 h (Tiresias 323 h / 313 h / 323 h), p99 slowdown 70,768 -> 21,761
   * (mean), makespan 299.4 d -> 336.1 d (exclusive 340.7 d), big jobs' p99 JCT 152.5 d -> 206.2 d
   * (exclusive 200.4 d: its 8-GPU pods wait for the whole fleet and end with the makespan);
   * deeppool seeds 1-3 6.90 h -> 6.50 h, p99 slowdown 285 -> 244, big jobs 5.11 d -> 5.36 d
   * (seeds 4-6: 6.61 h -> 5.70 h, 280 -> 148, 5.13 d -> 5.21 d); synthetic 3.26 h -> 3.26 h;
   * Philly 20k/256 seeds 1-3 13.06 / 13.05 / 13.36 h -> 13.07 / 13.14 / 13.51 h, p99 slowdown
   * lower. Tried instead: waiting whenever jobs want more GPUs than are left (Philly 20k/256 seed 1:
   * 18.45 h, makespan 101.1 d); letting capped jobs hold up to half (a quarter) of the fleet before
   * they wait: Alibaba/8 332 h (185 h, makespan 444 d). Waiting only for a job that could start on
   * the GPUs that jobs never preempted leave (found with MIG_CLEAR_SHARE on: a slice job at the cap
   * held one GPU of 8 for 80 days, 8-GPU pods waited for all eight and capped jobs for the pods, so
   * 7 GPUs idled): deeppool seeds 4-6 5.70 h -> 6.67 h, seed 8 8.94 h -> 13.67 h (p99 slowdown 256
   * -> 581): waiting drains pinned GPUs for a big job, and starting capped jobs then pins more;
   * Alibaba/8, synthetic and Philly unchanged. Kept as is, since the idling needs clearing on.
   */
  readonly cappedWaitsForYounger: boolean;
  /**
   * Share of the fleet's GPUs a waiting job asks for (and at least 2) from which MIG GPUs are
   * cleared for it once it has waited clearAfterSeconds (MIG_CLEAR_SHARE; Infinity: never).
   */
  readonly clearSlicesShare: number;
  /** Seconds such a job waits before MIG GPUs are cleared for it (CLEAR_AFTER_SECONDS). */
  readonly clearAfterSeconds: number;
  /** Most MIG GPUs cleared for one job: a job that lacks more waits as if there were no clearing (CLEAR_MAX_GPUS). */
  readonly clearMaxGpus: number;
}

export const DEFAULT_TUNING: MigpoolTuning = {
  thresholds: MIGPOOL_THRESHOLDS,
  minRunSeconds: MIN_RUN_SECONDS,
  maxPreemptions: MAX_PREEMPTIONS,
  ageFactor: AGE_FACTOR,
  ageMinSeconds: AGE_MIN_SECONDS,
  agedRunsToEnd: true,
  packLevel: 9,
  ageGpus: 1,
  drain: false,
  minRunFactor: 0,
  pinGpus: Infinity,
  minRunGrowth: MIN_RUN_GROWTH,
  backgroundAgeSeconds: BACKGROUND_AGE_SECONDS,
  backgroundMinRun: false,
  bigTurnShare: BIG_TURN_SHARE,
  bigTurnAfterSeconds: BIG_TURN_AFTER_SECONDS,
  packCapped: false,
  cappedWaitsForYounger: true,
  clearSlicesShare: MIG_CLEAR_SHARE,
  clearAfterSeconds: CLEAR_AFTER_SECONDS,
  clearMaxGpus: CLEAR_MAX_GPUS,
};

/** What the policy remembers of a job it has seen. */
interface JobState {
  /** 0: starving (ahead of all); 1 + k: attained service past k thresholds. */
  level: number;
  /** Order of first sight. */
  readonly seen: number;
  /** The current wake-up entry's run (stale entries are skipped). */
  run: number;
  /** When it last began to wait (arrival, or preemption). */
  waitingSince: number;
  /** Why it waits after the last pass (explain), kept in plain fields (no allocation per pass). */
  why: WaitReason['kind'];
  /** GPUs it waits for ('whole', 'clearing'), the GPU a slice is cut on ('slice-pending', -1: not known), or 1 when GPUs are held for a big job that waited its turn ('held'). */
  whyN: number;
  /** Whole GPUs left for it ('whole'). */
  whyFree: number;
  /** The job GPUs are held for ('held'), or the GPUs being cleared for it, comma-separated ('clearing'). */
  whyBy: string | null;
  /** A background job that waited backgroundAgeSeconds: it ranks as a foreground one from then on. */
  aged: boolean;
}

/** A job's wait reason as explain reads it. */
function reasonOf(st: JobState, job: JobSpec): WaitReason {
  switch (st.why) {
    case 'whole':
      return { kind: 'whole', gpus: st.whyN, free: st.whyFree };
    case 'held':
      return { kind: 'held', by: st.whyBy ?? '', big: st.whyN === 1 };
    case 'clearing':
      return { kind: 'clearing', gpus: st.whyN, free: st.whyFree, on: (st.whyBy ?? '').split(',').filter((x) => x !== '').map(Number) };
    case 'slice-pending':
      return st.whyN >= 0 ? { kind: 'slice-pending', gpu: st.whyN } : { kind: 'slice-pending' };
    case 'profile':
      return { kind: 'profile', profile: job.profile ?? '' };
    default:
      return { kind: st.why };
  }
}

/** Notes why a job waits. */
function waits(st: JobState, why: WaitReason['kind'], n = -1, free = 0, by: string | null = null): void {
  st.why = why;
  st.whyN = n;
  st.whyFree = free;
  st.whyBy = by;
}

/**
 * `migpool`: least attained service across whole GPUs and MIG slices, packing young small jobs
 * onto slices when jobs wait, with a reservation for starving jobs and a bounded number of
 * preemptions. It reads what production knows (attained GPU-seconds and preemptions from the
 * view's history, the performance model's speeds); never a job's length or an estimate of it.
 *
 * - Order: levels by attained service as Tiresias (MIGPOOL_THRESHOLDS), running jobs first within
 *   a level, then waiting ones in the order they joined; foreground jobs before background ones
 *   (background jobs fill what foreground leaves, and are preempted for it), except that a
 *   background job that has waited BACKGROUND_AGE_SECONDS (7 days) since it arrived ranks as a
 *   foreground one from then on.
 * - One pass in that order over the whole GPUs idle or held by preemptible jobs: a job keeps or
 *   gets its GPUs if enough are left, else it waits; a running job that loses them is preempted.
 * - Big jobs' turns: in the last level, a job of at least half the fleet's GPUs that has waited
 *   12 hours goes ahead of the level's big running jobs first seen after it (BIG_TURN_SHARE).
 * - Packing: when the jobs the pass has not reached want more whole GPUs than are left, a
 *   single-GPU job (of any level; MigpoolTuning.packLevel) below the preemption cap (a job at the
 *   cap could never move to a whole GPU again) takes an idle MIG slice that suits it; failing that, one
 *   whose workload packs well (migpool-slices.ts `packs`: seven 1g.5gb slices of an A100 do 3.2x
 *   a whole GPU's work for `small`) has a whole GPU of the pass cut into as many pack slices as
 *   fit, and waits for one. MIG GPUs left wholly idle go back to whole GPUs.
 * - Promotion: a job on a slice that has crossed the first threshold moves to a whole GPU left
 *   idle by the pass (preempted and started again: it pays the restart).
 * - A job at the preemption cap does not start while a job of a lower level waits for whole GPUs
 *   (MigpoolTuning.cappedWaitsForYounger): once started it holds its GPUs to its end.
 * - Clearing (MIG_CLEAR_SHARE): a foreground job of half the fleet or more that lacks only one
 *   whole GPU has a MIG GPU whose slice jobs all have more attained service cleared for it: their
 *   jobs are preempted and the GPU goes back to whole, and no whole GPU goes to a job behind it
 *   meanwhile.
 * - Preemption limits: a job is not preempted within MIN_RUN_SECONDS of its start (a job ranked
 *   as background is: it is fill, MigpoolTuning.backgroundMinRun), nor after
 *   MAX_PREEMPTIONS preemptions, nor on a slice (other than to promote it), nor when it is not
 *   preemptible.
 * - Starvation guard: a job that waited AGE_FACTOR times its run so far (and at least
 *   AGE_MIN_SECONDS) goes ahead of all, first come first served, and once started runs to its
 *   end, so big jobs are not passed over forever by small ones. Optionally (MigpoolTuning.drain,
 *   off by default: it idles GPUs) no job behind a starving one that lacks GPUs starts on a whole
 *   GPU, so the GPUs drain for it.
 */
export function migpoolPolicy(tuning: Partial<MigpoolTuning> = {}): Policy {
  const t: MigpoolTuning = { ...DEFAULT_TUNING, ...tuning };
  const limits = [...t.thresholds];
  /** queues[0]: starving; queues[1 + k]: past k thresholds. */
  const queues: string[][] = [[], ...limits.map(() => []), []];
  const states = new Map<string, JobState>();
  let seen = 0;
  let runs = 0;
  /** Jobs this policy started on slices (checked against the view before use). */
  const onSlices = new Set<string>();
  /** Wake-ups: threshold crossings of running jobs and the end of their minimum runs. */
  const wakes = new MinHeap<{ at: number; id: string; run: number; cross: boolean }>((a, b) => a.at - b.at || a.run - b.run);
  const runnable = new WeakMap<JobSpec, boolean>();
  let lastBlocker: string | null = null;
  /** MIG GPUs being cleared into whole GPUs, and the job each is cleared for (MIG_CLEAR_SHARE). */
  const clearing = new Map<number, string>();
  /** When the next waiting job starts to starve (a wake-up). */
  let nextAging = Infinity;
  /** The pool's own preemption rules for this pass (PolicyContext.preemptionRules; none in the simulator). */
  let ruleRun = 0;
  let ruleCap = Infinity;
  /** Preemptions after which a job is never preempted again: the policy's cap, or the pool's if lower. */
  const capOf = (): number => Math.min(t.maxPreemptions, ruleCap);

  const levelFor = (attained: number): number => {
    let q = 0;
    while (q < limits.length && attained >= (limits[q] as number) - 1e-6) q++;
    return q + 1;
  };
  const join = (st: JobState, id: string, level: number): void => {
    st.level = level;
    (queues[level] as string[]).push(id);
  };
  const stateOf = (view: ClusterView, id: string, since: number): JobState => {
    let st = states.get(id);
    if (!st) {
      st = { level: 0, seen: seen++, run: -1, waitingSince: since, why: 'next', whyN: -1, whyFree: 0, whyBy: null, aged: false };
      states.set(id, st);
      join(st, id, levelFor(historyOf(view, id).attainedGpuSeconds));
    }
    return st;
  };
  /** A job's minimum run before the factor on its earlier runs: grows with its preemptions. */
  const baseRunOf = (view: ClusterView, id: string): number =>
    t.minRunGrowth === 1 ? t.minRunSeconds : t.minRunSeconds * t.minRunGrowth ** historyOf(view, id).preemptions;
  /** Notes a job started now at `rate` GPU-seconds per second: its next crossing and the end of its minimum run. */
  const watch = (view: ClusterView, id: string, rate: number): void => {
    const st = states.get(id) as JobState;
    const run = runs++;
    st.run = run;
    const lv = st.level - 1;
    if (st.level > 0 && lv < limits.length) {
      wakes.push({ at: view.now + ((limits[lv] as number) - historyOf(view, id).attainedGpuSeconds) / rate, id, run, cross: true });
    }
    wakes.push({ at: view.now + baseRunOf(view, id), id, run, cross: false });
  };
  const live = (view: ClusterView, e: { id: string; run: number }): boolean => states.get(e.id)?.run === e.run && view.running.has(e.id);
  /** Moves running jobs that crossed a threshold down a level, in order of first sight. */
  const demote = (view: ClusterView): void => {
    const down: string[] = [];
    for (let e = wakes.peek(); e && e.at <= view.now + 1e-9; e = wakes.peek()) {
      wakes.pop();
      if (e.cross && live(view, e)) down.push(e.id);
    }
    if (down.length === 0) return;
    down.sort((a, b) => (states.get(a) as JobState).seen - (states.get(b) as JobState).seen);
    for (const id of down) {
      const st = states.get(id) as JobState;
      if (st.level === 0) continue;
      const level = levelFor(historyOf(view, id).attainedGpuSeconds);
      if (level > st.level) {
        const q = queues[st.level] as string[];
        q.splice(q.indexOf(id), 1);
        join(st, id, level);
      }
      const r = view.running.get(id);
      if (r) {
        const lv = st.level - 1;
        if (lv < limits.length) {
          const rate = r.placement.kind === 'gpus' ? r.placement.gpus.length : 1;
          wakes.push({ at: view.now + ((limits[lv] as number) - historyOf(view, id).attainedGpuSeconds) / rate, id, run: st.run, cross: true });
        }
      }
    }
  };
  const canRun = (view: ClusterView, ctx: PolicyContext, job: JobSpec): boolean => {
    let ok = runnable.get(job);
    if (ok === undefined) runnable.set(job, (ok = canEverRun(view, ctx, job)));
    return ok;
  };
  /**
   * Whether a running job may be preempted now by the pass. While a starving job waits
   * (`starving`), minimum runs do not hold: otherwise jobs starting more often than the minimum
   * run keep a big starving job from ever finding its GPUs free. Jobs ranked as background have
   * none (MigpoolTuning.backgroundMinRun).
   */
  const preemptibleNow = (view: ClusterView, id: string, spec: JobSpec, started: number, level: number, starving = false): boolean =>
    spec.preemptible !== false &&
    spec.gpus < t.pinGpus &&
    (level !== 0 || !t.agedRunsToEnd) &&
    (starving || (!t.backgroundMinRun && rankOf(id, spec) === 'background') || view.now - started >= minRunOf(view, id, spec, started)) &&
    view.now - started >= ruleRun &&
    historyOf(view, id).preemptions < capOf();
  /** Seconds a running job runs before it may be preempted: MIN_RUN_SECONDS, or more for one that ran long before. */
  const minRunOf = (view: ClusterView, id: string, spec: JobSpec, started: number): number => {
    if (t.minRunFactor === 0) return baseRunOf(view, id);
    const ran = view.now - started;
    const before = Math.max(0, historyOf(view, id).attainedGpuSeconds / spec.gpus - ran);
    return Math.max(baseRunOf(view, id), t.minRunFactor * before);
  };

  /** The priority a job ranks at: a background job that waited long ranks as a foreground one. */
  const rankOf = (id: string, spec: JobSpec): JobSpec['priority'] => (spec.priority === 'background' && states.get(id)?.aged === true ? 'foreground' : spec.priority);

  /**
   * Foreground single-GPU jobs still waiting take background jobs' slices that hold them (see the
   * pass): preempt the background job, start the foreground one on its instance.
   */
  const yieldSlices = (view: ClusterView, ctx: PolicyContext, queued: ReadonlyMap<string, JobSpec>, started: Set<string>, preempts: readonly Decision[], decisions: Decision[]): void => {
    const taken = new Set<string>();
    for (const p of preempts) taken.add((p as { job: string }).job);
    for (const d of decisions) if (d.kind === 'preempt') taken.add(d.job);
    for (const job of queued.values()) {
      if (rankOf(job.id, job) !== 'foreground' || job.gpus !== 1 || started.has(job.id) || !canRun(view, ctx, job)) continue;
      // A job at the preemption cap takes such a slice too, though it could never leave it for a
      // whole GPU (unlike packing, MigpoolTuning.packCapped): these are mostly background jobs
      // ranked as foreground after a week. Measured (deeppool, 16 A100, noisy, cost 60 s) with
      // them kept off: seeds 1-3 average JCT 6.50 h -> 6.47 h, big jobs' p99 JCT 5.35 d -> 5.42 d;
      // seeds 4-6 5.70 h -> 6.67 h (seed 4 8.06 h -> 10.98 h); seed 8 8.94 h -> 13.67 h, p99
      // slowdown 256 -> 581; seeds 7 and 9-12 within 0.3 h.
      let found: { gpu: number; start: number; victim: string } | null = null;
      for (const g of view.gpus) {
        if (!isSettled(g, view.now)) continue;
        for (const i of g.instances) {
          if (i.job === null || taken.has(i.job)) continue;
          const r = view.running.get(i.job);
          if (!r || rankOf(i.job, r.spec) !== 'background' || r.spec.preemptible === false || view.now - r.started < ruleRun || historyOf(view, i.job).preemptions >= capOf()) continue;
          if (!profileAllows(job, i.profile.name, g.model) || !ctx.fits(job, { kind: 'instance', model: g.model, profile: i.profile.name })) continue;
          found = { gpu: g.id, start: i.start, victim: i.job };
          break;
        }
        if (found) break;
      }
      if (!found) continue;
      taken.add(found.victim);
      decisions.push({ kind: 'preempt', job: found.victim }, { kind: 'start-on-instance', job: job.id, gpu: found.gpu, start: found.start });
      const vs = states.get(found.victim);
      if (vs) {
        vs.waitingSince = view.now;
        vs.run = -1;
      }
      onSlices.delete(found.victim);
      onSlices.add(job.id);
      started.add(job.id);
      watch(view, job.id, 1);
    }
  };

  /**
   * Moves jobs on slices that crossed the first threshold (and may be preempted now) to whole GPUs
   * of `picker`, at most `free`, first seen first; appends the decisions.
   */
  const promote = (view: ClusterView, ctx: PolicyContext, picker: Picker<GpuView>, free: number, decisions: Decision[]): void => {
    if (free < 1 || onSlices.size === 0) return;
    const old: string[] = [];
    for (const id of onSlices) {
      const r = view.running.get(id);
      if (!r || r.placement.kind !== 'instance') {
        onSlices.delete(id);
        continue;
      }
      const st = states.get(id) as JobState;
      if (st.level >= 2 && r.spec.exactProfile !== true && preemptibleNow(view, id, r.spec, r.started, st.level)) old.push(id);
    }
    old.sort((a, b) => (states.get(a) as JobState).seen - (states.get(b) as JobState).seen);
    for (const id of old) {
      if (free < 1) break;
      const r = view.running.get(id) as RunningJobView;
      const g = picker.take((x) => isSettled(x, view.now) && ctx.fits(r.spec, { kind: 'whole', model: x.model }));
      if (!g) break;
      free -= 1;
      decisions.push({ kind: 'preempt', job: id }, { kind: 'start-on-gpus', job: id, gpus: [g.id], sharing: 'exclusive' });
      onSlices.delete(id);
      watch(view, id, 1);
    }
  };

  /** Fewest GPUs of a job that takes turns in the last level (BIG_TURN_SHARE of the fleet). */
  const bigGpusOf = (view: ClusterView): number => (t.bigTurnShare === Infinity ? Infinity : Math.max(1, Math.ceil(t.bigTurnShare * view.gpus.length)));
  /** Fewest GPUs of a job MIG GPUs are cleared for (MIG_CLEAR_SHARE of the fleet). */
  const clearGpusOf = (view: ClusterView): number => (t.clearSlicesShare === Infinity ? Infinity : Math.max(2, Math.ceil(t.clearSlicesShare * view.gpus.length)));
  /** When a waiting job's turn comes in the last level (Infinity: it takes no turns: not big, or not in the last level). */
  const turnAtOf = (st: JobState, job: JobSpec, bigGpus: number): number => (job.gpus >= bigGpus && st.level === queues.length - 1 ? st.waitingSince + t.bigTurnAfterSeconds : Infinity);
  /**
   * Big jobs take turns in the last level (BIG_TURN_SHARE): its running jobs smaller than `bigGpus`
   * first, in their order; then its big running jobs and the big jobs that waited their turn,
   * first seen first; then the other waiting jobs, in their order.
   */
  const takeTurns = (view: ClusterView, queued: ReadonlyMap<string, JobSpec>, q: string[], bigGpus: number): void => {
    const small: string[] = [];
    const big: string[] = [];
    const rest: string[] = [];
    for (const id of q) {
      const r = view.running.get(id);
      if (r) (r.spec.gpus < bigGpus ? small : big).push(id);
      else {
        const j = queued.get(id);
        if (j && turnAtOf(states.get(id) as JobState, j, bigGpus) <= view.now) big.push(id);
        else rest.push(id);
      }
    }
    big.sort((a, b) => (states.get(a) as JobState).seen - (states.get(b) as JobState).seen);
    let w = 0;
    for (const id of small) q[w++] = id;
    for (const id of big) q[w++] = id;
    for (const id of rest) q[w++] = id;
  };

  return {
    name: 'migpool',
    recutRule: RECUT_RULE,
    decide(view: ClusterView, ctx: PolicyContext): Decision[] {
      ruleRun = ctx.preemptionRules?.minRunSeconds ?? 0;
      ruleCap = ctx.preemptionRules?.maxPreemptions ?? Infinity;
      demote(view);
      if (view.queue.length === 0) {
        // Nothing waits (most passes on a fleet with room): idle MIG GPUs go back to whole GPUs,
        // slice jobs past the first threshold move to idle whole GPUs; the levels are tidied next time.
        lastBlocker = null;
        nextAging = Infinity;
        const out: Decision[] = [];
        for (const g of idleMigGpus(view)) out.push({ kind: 'repartition', gpu: g.id, layout: null });
        if (onSlices.size > 0) {
          const idle = wholeGpusWith(view, 0);
          promote(view, ctx, new Picker<GpuView>(idle), idle.size, out);
        }
        return out;
      }
      const queued = new Map<string, JobSpec>();
      for (const j of view.queue) queued.set(j.id, j);

      // Forget finished jobs; note newcomers and running jobs never seen.
      pruneQueues(queues, queued, view, (id) => {
        states.delete(id);
        onSlices.delete(id);
      });
      let background = false;
      nextAging = Infinity;
      // Whole GPUs wanted by the queued jobs that can run (the pass subtracts what it reaches).
      let demand = 0;
      const last = queues.length - 1;
      const bigGpus = bigGpusOf(view);
      let bigTurn = false;
      const clearGpus = clearGpusOf(view);
      let anyMig: boolean | undefined;
      /** Whether a job big enough for clearing waits while MIG GPUs exist (else the pass skips looking for GPUs to clear). */
      let bigWaits = false;
      for (const j of view.queue) {
        const st = stateOf(view, j.id, Math.min(view.now, j.arrival));
        // A big job: MIG GPUs may be cleared for it once it has waited clearAfterSeconds (a wake-up then).
        if (j.gpus >= clearGpus && (anyMig ??= view.gpus.some((g) => g.migEnabled))) {
          bigWaits = true;
          const clearAt = st.waitingSince + t.clearAfterSeconds;
          if (j.priority === 'foreground' && clearAt > view.now && clearAt < nextAging) nextAging = clearAt;
        }
        // A big job waiting in the last level: its turn comes after bigTurnAfterSeconds (a wake-up then).
        const turnAt = turnAtOf(st, j, bigGpus);
        if (turnAt <= view.now) bigTurn = true;
        else if (turnAt < nextAging) nextAging = turnAt;
        if (j.priority === 'background') {
          background = true;
          // A background job that waited long ranks as a foreground one (a wake-up when it will).
          if (!st.aged && t.backgroundAgeSeconds !== Infinity) {
            const agesAt = Math.min(view.now, j.arrival) + t.backgroundAgeSeconds;
            if (agesAt <= view.now) st.aged = true;
            else if (agesAt < nextAging) nextAging = agesAt;
          }
        }
        if (canRun(view, ctx, j)) demand += j.gpus;
        // Starvation guard: a job waiting long against its run so far goes ahead of all (its
        // history is read only once it has waited the guard's minimum).
        if (st.level > 0 && j.gpus >= t.ageGpus) {
          const least = st.waitingSince + t.ageMinSeconds;
          const agesAt = least > view.now ? least : st.waitingSince + Math.max(t.ageMinSeconds, (t.ageFactor * historyOf(view, j.id).attainedGpuSeconds) / j.gpus);
          if (agesAt <= view.now) {
            const q = queues[st.level] as string[];
            q.splice(q.indexOf(j.id), 1);
            join(st, j.id, 0);
          } else if (agesAt < nextAging) nextAging = agesAt;
        }
      }
      if (states.size < queued.size + view.running.size) {
        for (const [id, r] of view.running) {
          if (states.has(id)) continue;
          stateOf(view, id, view.now);
          if (r.placement.kind === 'instance') onSlices.add(id);
          watch(view, id, r.placement.kind === 'gpus' ? r.placement.gpus.length : 1);
        }
      }
      if (!background) for (const r of view.running.values()) if (r.spec.priority === 'background') background = true;

      if (bigTurn) takeTurns(view, queued, queues[last] as string[], bigGpus);
      let starving = false;
      for (const id of queues[0] as string[]) if (queued.has(id)) starving = true;
      // Whole GPUs to hand out: idle ones and those of running jobs that may be preempted now.
      const idle = wholeGpusWith(view, 0);
      let free = idle.size;
      const keeps = new Set<string>();
      for (const [id, r] of view.running) {
        const st = states.get(id) as JobState;
        if (r.placement.kind !== 'gpus' || !preemptibleNow(view, id, r.spec, r.started, st.level, starving)) keeps.add(id);
        else free += r.placement.gpus.length;
      }
      // Whole GPUs still wanted by the jobs the pass has not reached: when they exceed what is
      // left, jobs wait, and young jobs go on slices.
      demand += free - idle.size;

      // MIG GPUs that may be cleared for a big job (MIG_CLEAR_SHARE), looked for only while one waits: every
      // slice job on them past the first threshold, preemptible now, foreground; lowest such level.
      for (const [g, by] of clearing) if (!queued.has(by) || gpuAt(view, g)?.migEnabled !== true) clearing.delete(g);
      const clearable: { gpu: number; level: number; jobs: string[] }[] = [];
      if (clearGpus !== Infinity && bigWaits) {
        for (const g of view.gpus) {
          if (!g.migEnabled || clearing.has(g.id) || !isSettled(g, view.now)) continue;
          let level = Infinity;
          const jobs: string[] = [];
          for (const i of g.instances) {
            if (i.job === null) continue;
            const r = view.running.get(i.job);
            const st = states.get(i.job);
            if (!r || !st || st.level < 2 || r.spec.exactProfile === true || rankOf(i.job, r.spec) !== 'foreground' || !preemptibleNow(view, i.job, r.spec, r.started, st.level)) {
              level = -1;
              break;
            }
            jobs.push(i.job);
            if (st.level < level) level = st.level;
          }
          if (level > 0 && jobs.length > 0) clearable.push({ gpu: g.id, level, jobs });
        }
        if (clearable.length > 1) clearable.sort((a, b) => a.jobs.length - b.jobs.length || a.gpu - b.gpu);
      }
      /** GPUs this pass clears. */
      const cleared: number[] = [];

      const slices = new SlicePool(view, ctx);
      for (const g of clearing.keys()) slices.closed.add(g);
      const preempts: Decision[] = [];
      const freed: number[] = [];
      const wholeStarts: JobSpec[] = [];
      const sliceStarts: { job: JobSpec; at: SliceGrant }[] = [];
      const cuts: { job: JobSpec; model: GpuView['model']; profile: string }[] = [];
      let blocker: string | null = null;
      /** Whether `blocker` is a big job MIG GPUs are cleared for (else a starving one). */
      let blockerBig = false;
      /** Lowest level of a job the pass left waiting for whole GPUs. */
      let waitLevel = Infinity;
      const pass = (want: 'foreground' | 'background' | null): void => {
        for (const q of queues) {
          for (const id of q) {
            const r = view.running.get(id);
            if (r) {
              if (want !== null && rankOf(id, r.spec) !== want) continue;
              if (keeps.has(id)) continue;
              const n = (r.placement as { gpus: readonly number[] }).gpus.length;
              demand -= n;
              if (n <= free) {
                free -= n;
                keeps.add(id);
              } else {
                preempts.push({ kind: 'preempt', job: id });
                (r.placement as { gpus: readonly number[] }).gpus.forEach((g) => freed.push(g));
              }
              continue;
            }
            const job = queued.get(id) as JobSpec;
            if (want !== null && rankOf(id, job) !== want) continue;
            const st = states.get(id) as JobState;
            const contended = demand > free;
            if (!canRun(view, ctx, job)) {
              waits(st, 'never');
              continue;
            }
            demand -= job.gpus;
            // A job at the cap would hold its GPUs to its end: not while younger jobs wait for GPUs.
            if (t.cappedWaitsForYounger && waitLevel < st.level && job.exactProfile !== true && historyOf(view, id).preemptions >= capOf()) {
              waits(st, 'capped');
              continue;
            }
            // Slices: an exact profile always; a young single-GPU job when jobs wait.
            const young = st.level >= 1 && st.level <= t.packLevel;
            if (job.exactProfile === true || (job.gpus === 1 && contended && young && slices.any && (t.packCapped || historyOf(view, id).preemptions < capOf()))) {
              const at = slices.take(job);
              if (at) {
                sliceStarts.push({ job, at });
                continue;
              }
              if (slices.takePending(job)) {
                waits(st, 'slice-pending');
                continue;
              }
              const cut = blocker === null && free >= 1 ? slices.cutFor(job) : null;
              if (cut) {
                free -= 1;
                slices.addPending(cut.model, cut.profile, denseLayout(cut.model, cut.profile).length - 1);
                cuts.push({ job, ...cut });
                waits(st, 'slice-pending');
                continue;
              }
              if (job.exactProfile === true) {
                waits(st, 'profile');
                continue;
              }
            }
            if (blocker !== null) {
              waits(st, 'held', blockerBig ? 1 : -1, 0, blocker);
              continue;
            }
            if (job.gpus <= free) {
              free -= job.gpus;
              wholeStarts.push(job);
              continue;
            }
            waits(st, 'whole', job.gpus, free);
            if (st.level < waitLevel) waitLevel = st.level;
            // A big job that lacks at most clearMaxGpus GPUs: MIG GPUs are cleared for it (MIG_CLEAR_SHARE).
            if (job.gpus >= clearGpus && rankOf(id, job) === 'foreground' && view.now - st.waitingSince >= t.clearAfterSeconds) {
              let mine = 0;
              for (const by of clearing.values()) if (by === id) mine++;
              let can = 0;
              for (const c of clearable) if (c.level > st.level && !slices.wanted.has(c.gpu)) can++;
              if (free + mine + can >= job.gpus && (mine > 0 || can > 0) && job.gpus - free - mine <= t.clearMaxGpus) {
                for (let k = 0; k < clearable.length && free + mine < job.gpus; ) {
                  const c = clearable[k] as (typeof clearable)[number];
                  if (c.level <= st.level || slices.wanted.has(c.gpu)) {
                    k++;
                    continue;
                  }
                  clearable.splice(k, 1);
                  for (const j of c.jobs) {
                    preempts.push({ kind: 'preempt', job: j });
                    onSlices.delete(j);
                  }
                  clearing.set(c.gpu, id);
                  slices.closed.add(c.gpu);
                  cleared.push(c.gpu);
                  mine++;
                }
                const on: number[] = [];
                for (const [g, by] of clearing) if (by === id) on.push(g);
                waits(st, 'clearing', job.gpus, free, on.join(','));
                blocker = id;
                blockerBig = true;
              }
            }
            // A starving job that does not fit: GPUs drain for it (no whole start behind it).
            if (st.level === 0 && t.drain) blocker = id;
          }
        }
      };
      if (background) {
        pass('foreground');
        pass('background');
      } else pass(null);
      lastBlocker = blocker;

      const decisions: Decision[] = [...preempts];
      for (const p of preempts) {
        const st = states.get((p as { job: string }).job) as JobState;
        st.waitingSince = view.now;
        st.run = -1;
      }
      const picker = new Picker<GpuView>(chain(idle, freed.map((id) => gpuAt(view, id))));
      for (const job of wholeStarts) {
        const gs = picker.takeMany(job.gpus, (g) => ctx.fits(job, { kind: 'whole', model: g.model }));
        if (!gs) {
          waits(states.get(job.id) as JobState, 'whole', job.gpus, 0);
          continue;
        }
        decisions.push({ kind: 'start-on-gpus', job: job.id, gpus: gs.map((g) => g.id), sharing: 'exclusive' });
        watch(view, job.id, job.gpus);
      }
      for (const { job, model, profile } of cuts) {
        const g = picker.take((x) => x.model.name === model.name && isSettled(x, view.now));
        if (!g) continue;
        decisions.push({ kind: 'repartition', gpu: g.id, layout: denseLayout(model, profile) });
        slices.wanted.add(g.id);
        waits(states.get(job.id) as JobState, 'slice-pending', g.id);
      }
      for (const { job, at } of sliceStarts) {
        decisions.push({ kind: 'start-on-instance', job: job.id, gpu: at.gpu, start: at.start });
        onSlices.add(job.id);
        watch(view, job.id, 1);
      }
      // GPUs cleared for a big job: their slice jobs were preempted above.
      for (const g of cleared) {
        decisions.push({ kind: 'repartition', gpu: g, layout: null });
        slices.wanted.add(g);
      }
      // MIG GPUs nobody wants now go back to whole GPUs.
      for (const g of idleMigGpus(view)) if (!slices.wanted.has(g.id)) decisions.push({ kind: 'repartition', gpu: g.id, layout: null });

      // Promotion: slice jobs past the first threshold move to whole GPUs the pass left idle.
      if (blocker === null) promote(view, ctx, picker, free, decisions);

      // Background jobs fill what foreground leaves: a single-GPU foreground job the pass left
      // waiting takes the slice of a background job that may be preempted (checkpointed and
      // requeued at once, no minimum run: background is fill; the preemption cap still holds).
      const started = new Set<string>();
      for (const d of decisions) if (d.kind === 'start-on-gpus' || d.kind === 'start-on-instance') started.add(d.job);
      if (background) yieldSlices(view, ctx, queued, started, preempts, decisions);

      // Running jobs first in each level, waiting ones after, each keeping their order.
      for (const q of queues) {
        let waiting = 0;
        for (const id of q) if (!(view.running.has(id) && keeps.has(id)) && !started.has(id)) waiting++;
        if (waiting === 0 || waiting === q.length) continue;
        const run: string[] = [];
        const wait: string[] = [];
        for (const id of q) ((view.running.has(id) && keeps.has(id)) || started.has(id) ? run : wait).push(id);
        let w = 0;
        for (const id of run) q[w++] = id;
        for (const id of wait) q[w++] = id;
      }
      return decisions;
    },
    wakeAt(view: ClusterView): number | null {
      let at = nextAging;
      for (let e = wakes.peek(); e; e = wakes.peek()) {
        if (live(view, e)) {
          at = Math.min(at, e.at);
          break;
        }
        wakes.pop();
      }
      return at > view.now && at < Infinity ? at : null;
    },
    explain(view: ClusterView, ctx: PolicyContext): ReadonlyMap<string, string> {
      const byId = new Map(view.queue.map((j) => [j.id, j]));
      const bigGpus = bigGpusOf(view);
      return explainWaiting(view, ctx, (id) => {
        const st = states.get(id);
        return st ? reasonOf(st, byId.get(id) as JobSpec) : null;
      }, lastBlocker, { aged: (id) => states.get(id)?.aged === true, ageSeconds: t.backgroundAgeSeconds }, {
        of: (id) => {
          const st = states.get(id);
          const j = byId.get(id);
          const turnAt = st && j ? turnAtOf(st, j, bigGpus) : Infinity;
          return turnAt === Infinity ? null : turnAt <= view.now ? 'now' : 'waiting';
        },
        gpus: bigGpus,
        afterSeconds: t.bigTurnAfterSeconds,
        clearGpus: clearGpusOf(view),
        clearAfterSeconds: t.clearAfterSeconds,
        clearMaxGpus: t.clearMaxGpus,
      });
    },
  };
}
