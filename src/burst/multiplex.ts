import { badInput } from '../errors.js';
import type { Plan } from './types.js';

/**
 * Foreground/background multiplexing (DeepPool's second idea): a foreground job running a burst
 * plan leaves GPUs idle while its narrow layers run; background jobs fill that idle time at low
 * priority, and a gate keeps the foreground within a slowdown bound.
 *
 * The model, per training iteration of the foreground:
 * - Timeline: layers run one after another; a layer first receives its inputs (its transfer ms,
 *   on the GPUs of the larger side of its differently split edges), then computes and syncs (its
 *   ms, on its GPUs). A layer on g GPUs uses the job's GPUs of rank 0..g-1. A GPU idles in the
 *   segments that do not use it; consecutive idle segments form a gap (the iteration repeats, so
 *   a gap at the end joins one at the start).
 * - Background: in a gap of length d it runs for d - switchMs (nothing when d <= switchMs), at
 *   its own speed on a whole GPU. A GPU the plan never uses runs it all the time.
 * - Foreground: where GPUs come back to it after a gap that ran background work, it waits for the
 *   background piece in flight: pieceMs at worst, counted once per such boundary (the layer starts
 *   when its last GPU is free). The gate admits background work in a gap only while the sum of
 *   these waits keeps the iteration within `slowdownBound` of its solo time: it keeps the gaps
 *   that bring the most background work per wait (the last one for a fraction of iterations).
 */
export interface MultiplexOptions {
  /** Most the foreground's iteration may stretch, as a factor; default DEFAULT_SLOWDOWN_BOUND. */
  readonly slowdownBound: number;
  /** ms of one background piece; default DEFAULT_PIECE_MS. */
  readonly pieceMs: number;
  /** ms of each used gap lost to the background; default DEFAULT_SWITCH_MS. */
  readonly switchMs: number;
}

/** DeepPool holds the foreground within 1.1x of its solo step time (../shared/data/README.md). */
export const DEFAULT_SLOWDOWN_BOUND = 1.1;

/** DeepPool runs background work in pieces of about 0.5 ms (../shared/data/README.md). */
export const DEFAULT_PIECE_MS = 0.5;

/**
 * ASSUMPTION, not measured: ms a background job loses at the start of each idle gap it uses
 * (switching streams, launching its next kernels, refilling caches). No figure in our data.
 */
export const DEFAULT_SWITCH_MS = 0.1;

export const DEFAULT_MULTIPLEX: MultiplexOptions = { slowdownBound: DEFAULT_SLOWDOWN_BOUND, pieceMs: DEFAULT_PIECE_MS, switchMs: DEFAULT_SWITCH_MS };

/** One stretch of the foreground's iteration: `gpus` GPUs (ranks 0..gpus-1) busy for `ms`. */
export interface Segment {
  readonly startMs: number;
  readonly ms: number;
  readonly gpus: number;
  /** The layer it belongs to, and whether it is the layer's input transfer or its compute. */
  readonly layer: string;
  readonly what: 'transfer' | 'compute';
}

/** The foreground's timeline of one iteration under a plan. */
export function timeline(plan: Plan): Segment[] {
  const out: Segment[] = [];
  let t = 0;
  for (const l of plan.layers) {
    if (l.transferMs > 0) {
      out.push({ startMs: t, ms: l.transferMs, gpus: l.transferGpus, layer: l.name, what: 'transfer' });
      t += l.transferMs;
    }
    if (l.ms > 0) {
      out.push({ startMs: t, ms: l.ms, gpus: l.gpus, layer: l.name, what: 'compute' });
      t += l.ms;
    }
  }
  return out;
}

/** Ranks `from`..`to - 1` of a job's GPUs, which behave alike under a plan. */
export interface RankClass {
  readonly from: number;
  readonly to: number;
  /** Share of one iteration the foreground keeps each of these GPUs busy (solo). */
  readonly busyShare: number;
  /** Background speed on each of these GPUs while multiplexed (share of a whole GPU's speed). */
  readonly backgroundShare: number;
}

/** What multiplexing gives a plan on `gpus` GPUs. */
export interface Multiplexing {
  readonly soloMs: number;
  /** The foreground's iteration ms with background jobs beside it. */
  readonly sharedMs: number;
  /** sharedMs / soloMs, at most the bound. */
  readonly slowdown: number;
  readonly classes: readonly RankClass[];
  /** Sum over the job's GPUs of their background share: whole GPUs' worth of background speed. */
  readonly backgroundGpus: number;
  /** Share of the job's GPU-time the foreground leaves idle (solo). */
  readonly idleShare: number;
}

export function checkMultiplexOptions(o: MultiplexOptions): void {
  if (!(o.slowdownBound >= 1) || !Number.isFinite(o.slowdownBound)) throw badInput(`the slowdown bound must be a number of at least 1 (1: no slowdown), got ${o.slowdownBound}`);
  if (!(o.pieceMs >= 0) || !Number.isFinite(o.pieceMs)) throw badInput(`the background piece must be a non-negative number of ms, got ${o.pieceMs}`);
  if (!(o.switchMs >= 0) || !Number.isFinite(o.switchMs)) throw badInput(`the switching cost must be a non-negative number of ms, got ${o.switchMs}`);
}

/** Multiplexing of a plan whose job holds `gpus` GPUs (see the file comment). */
export function multiplex(plan: Plan, gpus: number, options: MultiplexOptions = DEFAULT_MULTIPLEX): Multiplexing {
  checkMultiplexOptions(options);
  const segs = timeline(plan);
  const solo = segs.reduce((s, x) => s + x.ms, 0);
  const cuts = [...new Set([0, ...segs.map((s) => Math.min(gpus, s.gpus)), gpus])].sort((a, b) => a - b);
  const ranges: { from: number; to: number }[] = [];
  for (let k = 0; k + 1 < cuts.length; k++) ranges.push({ from: cuts[k] as number, to: cuts[k + 1] as number });

  // Gaps per rank class: length and the boundary (index of the segment that ends it).
  interface Gap {
    cls: number;
    useful: number;
    boundary: number;
  }
  const gaps: Gap[] = [];
  const busy: number[] = [];
  const alwaysIdle: boolean[] = [];
  ranges.forEach((r, cls) => {
    const isBusy = segs.map((s) => r.from < s.gpus);
    busy.push(segs.reduce((s, x, k) => s + (isBusy[k] ? x.ms : 0), 0));
    const first = isBusy.indexOf(true);
    alwaysIdle.push(first < 0);
    if (first < 0) return;
    // Walk once around the cycle starting at a busy segment.
    let len = 0;
    for (let step = 1; step <= segs.length; step++) {
      const k = (first + step) % segs.length;
      if (isBusy[k]) {
        if (len > 0) gaps.push({ cls, useful: Math.max(0, len - options.switchMs), boundary: k });
        len = 0;
      } else len += (segs[k] as Segment).ms;
    }
  });

  // Boundaries by background work per wait; the gate keeps the best within the budget.
  const value = new Map<number, number>();
  for (const g of gaps) {
    if (g.useful <= 0) continue;
    const r = ranges[g.cls] as { from: number; to: number };
    value.set(g.boundary, (value.get(g.boundary) ?? 0) + g.useful * (r.to - r.from));
  }
  const kept = new Map<number, number>();
  let budget = (options.slowdownBound - 1) * solo;
  let waits = 0;
  for (const [b] of [...value].sort((x, y) => y[1] - x[1] || x[0] - y[0])) {
    if (options.pieceMs === 0) {
      kept.set(b, 1);
      continue;
    }
    if (budget <= 0) break;
    const f = Math.min(1, budget / options.pieceMs);
    kept.set(b, f);
    budget -= f * options.pieceMs;
    waits += f * options.pieceMs;
  }
  const shared = solo + waits;
  const useful = ranges.map(() => 0);
  for (const g of gaps) useful[g.cls] = (useful[g.cls] as number) + g.useful * (kept.get(g.boundary) ?? 0);
  const classes: RankClass[] = ranges.map((r, cls) => ({
    from: r.from,
    to: r.to,
    busyShare: solo > 0 ? (busy[cls] as number) / solo : 0,
    backgroundShare: alwaysIdle[cls] ? 1 : shared > 0 ? (useful[cls] as number) / shared : 0,
  }));
  const backgroundGpus = classes.reduce((s, c) => s + c.backgroundShare * (c.to - c.from), 0);
  const idle = classes.reduce((s, c) => s + (1 - c.busyShare) * (c.to - c.from), 0);
  return { soloMs: solo, sharedMs: shared, slowdown: solo > 0 ? shared / solo : 1, classes, backgroundGpus, idleShare: gpus > 0 ? idle / gpus : 0 };
}

/** The background share of rank `rank` (0-based) of the job's GPUs. */
export function backgroundShareOf(m: Multiplexing, rank: number): number {
  for (const c of m.classes) if (rank >= c.from && rank < c.to) return c.backgroundShare;
  return 0;
}
