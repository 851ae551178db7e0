/**
 * The fast packer for problems too large for the MIP. Deterministic, no randomness:
 * 1. start layouts: the LP relaxation's layout counts rounded per model (largest remainder), and,
 *    separately, for each model the one layout that serves the jobs best on all its GPUs;
 * 2. local search on each start: move s GPUs of a model from one layout to another (s from all of
 *    them down to 1 by halving), keep a move when the greedy assignment of jobs gets better;
 * 3. the caller then assigns jobs to the best layouts exactly (a transportation LP).
 * The greedy assignment takes (job class, slot type) pairs by value, best first.
 */
import { capacities, type Compiled, type Flow, type LayoutCounts } from './compile.js';

/** An assignment and what it is worth: jobs placed first where every job must be placed. */
export interface Scored {
  readonly flow: Flow;
  readonly value: number;
  readonly placed: number;
}

/** True when `a` is better than `b` (more jobs placed first when every job must be placed). */
export function better(compiled: Compiled, a: { value: number; placed: number }, b: { value: number; placed: number }): boolean {
  if (compiled.placeAll && a.placed !== b.placed) return a.placed > b.placed;
  return a.value > b.value + 1e-9 * Math.max(1, Math.abs(b.value));
}

/** Pairs (class, slot type) a class runs on, best value first; ties by index. */
export function sortedPairs(compiled: Compiled): Int32Array {
  const pairs: number[] = [];
  compiled.fits.forEach((f, i) => f && pairs.push(i));
  pairs.sort((a, b) => (compiled.value[b] ?? 0) - (compiled.value[a] ?? 0) || a - b);
  return Int32Array.from(pairs);
}

/** Greedy assignment onto the given slot capacities. */
export function greedyAssign(compiled: Compiled, pairs: Int32Array, cap: readonly number[]): Scored {
  const T = compiled.slotTypes.length;
  const left = Float64Array.from(cap);
  const rest = Float64Array.from(compiled.classes, (c) => c.jobs.length);
  const flow = new Float64Array(compiled.value.length);
  let value = 0;
  let placed = 0;
  for (const i of pairs) {
    const c = Math.floor(i / T);
    const t = i - c * T;
    const k = Math.min(rest[c] ?? 0, left[t] ?? 0);
    if (k <= 0) continue;
    flow[i] = k;
    rest[c] = (rest[c] ?? 0) - k;
    left[t] = (left[t] ?? 0) - k;
    value += k * (compiled.value[i] ?? 0);
    placed += k;
  }
  return { flow, value, placed };
}

/** Rounds fractional layout counts per model, keeping each model's total (largest remainder). */
export function roundCounts(compiled: Compiled, fractional: readonly (readonly number[])[]): number[][] {
  return compiled.models.map((group, m) => {
    const f = fractional[m] ?? [];
    const counts = group.options.map((_, l) => Math.floor((f[l] ?? 0) + 1e-9));
    let missing = group.gpus.length - counts.reduce((a, b) => a + b, 0);
    const order = group.options.map((_, l) => l).sort((a, b) => (f[b] ?? 0) - (counts[b] ?? 0) - ((f[a] ?? 0) - (counts[a] ?? 0)) || a - b);
    for (let k = 0; missing > 0; k = (k + 1) % order.length, missing--) {
      const l = order[k] ?? 0;
      counts[l] = (counts[l] ?? 0) + 1;
    }
    return counts;
  });
}

/** For each model in turn, the single layout that does best on all its GPUs (others as chosen so far). */
export function uniformCounts(compiled: Compiled, pairs: Int32Array): number[][] {
  const counts = compiled.models.map((g) => g.options.map(() => 0));
  compiled.models.forEach((group, m) => {
    let best: { l: number; score: Scored } | null = null;
    group.options.forEach((_, l) => {
      const row = counts[m];
      if (!row) return;
      row.fill(0);
      row[l] = group.gpus.length;
      const score = greedyAssign(compiled, pairs, capacities(compiled, counts));
      if (!best || better(compiled, score, best.score)) best = { l, score };
    });
    const row = counts[m];
    if (row) {
      row.fill(0);
      row[(best as { l: number } | null)?.l ?? 0] = group.gpus.length;
    }
  });
  return counts;
}

/** Improves layout counts by moving GPUs between layouts; stops after `maxEvaluations` evaluations. */
export function localSearch(compiled: Compiled, pairs: Int32Array, start: LayoutCounts, maxEvaluations: number): { counts: number[][]; score: Scored } {
  const counts = start.map((row) => [...row]);
  let score = greedyAssign(compiled, pairs, capacities(compiled, counts));
  let evaluations = 0;
  let improved = true;
  while (improved && evaluations < maxEvaluations) {
    improved = false;
    for (const [m, group] of compiled.models.entries()) {
      const row = counts[m];
      if (!row) continue;
      for (let a = 0; a < group.options.length; a++) {
        for (let b = 0; b < group.options.length && (row[a] ?? 0) > 0; b++) {
          if (a === b) continue;
          for (let s = row[a] ?? 0; s >= 1 && evaluations < maxEvaluations; s = s === 1 ? 0 : Math.ceil(s / 2)) {
            row[a] = (row[a] ?? 0) - s;
            row[b] = (row[b] ?? 0) + s;
            evaluations++;
            const next = greedyAssign(compiled, pairs, capacities(compiled, counts));
            if (better(compiled, next, score)) {
              score = next;
              improved = true;
              break;
            }
            row[a] = (row[a] ?? 0) + s;
            row[b] = (row[b] ?? 0) - s;
          }
        }
      }
    }
  }
  return { counts, score };
}
