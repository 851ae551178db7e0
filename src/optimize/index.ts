/**
 * The packing optimizer: choose a layout for every GPU and a slot for every job to maximise total
 * weighted normalised throughput, exactly (HiGHS MIP) when small, by a heuristic when large, and
 * always with an upper bound on what any packing reaches.
 */
import { MigpoolError } from '../errors.js';
import { lagrangianBound } from './bound.js';
import { capacities as capacitiesFor, compile, type Compiled, type Flow, type LayoutCounts } from './compile.js';
import { pairCount, solveAssignment, solveMip, solveRelaxation, type GroupedSolution } from './formulation.js';
import { better, greedyAssign, localSearch, roundCounts, sortedPairs, uniformCounts } from './heuristic.js';
import { realize } from './realize.js';
import type { BoundKind, PackingOptions, PackingProblem, PackingResult } from './types.js';

export { buildProblem, type PackingWorkloadJob } from './problem.js';
export * from './types.js';

/** Defaults of PackingOptions. */
export const PACKING_DEFAULTS = { exactMaxJobs: 64, timeLimitSeconds: 20, maxLpColumns: 2_000_000 } as const;

/** Local-search budget: greedy evaluations times pairs stays near this many steps. */
const SEARCH_WORK = 3e8;

function infeasible(): MigpoolError {
  return new MigpoolError('CHECK_FAILED', 'not every job can be placed: some job fits no slot, or there are more jobs than slots can hold; drop --place-all (placeAll) or add GPUs');
}

interface Candidate {
  counts: LayoutCounts;
  flow: Flow;
  value: number;
  placed: number;
  method: 'mip' | 'heuristic';
}

function heuristic(compiled: Compiled, relaxation: GroupedSolution | null, assign: (counts: LayoutCounts) => Flow | null): Candidate {
  const pairs = sortedPairs(compiled);
  const budget = Math.max(200, Math.floor(SEARCH_WORK / Math.max(1, pairs.length)));
  const starts: LayoutCounts[] = [uniformCounts(compiled, pairs)];
  if (relaxation?.counts) starts.unshift(roundCounts(compiled, relaxation.counts));
  let best: Candidate | null = null;
  const tries = starts.flatMap((start) => [start, localSearch(compiled, pairs, start, budget).counts]);
  for (const counts of tries) {
    const greedy = greedyAssign(compiled, pairs, capacitiesFor(compiled, counts));
    const exact = assign(counts);
    const flow = exact ?? greedy.flow;
    const scored = exact ? score(compiled, exact) : greedy;
    const candidate: Candidate = { counts, flow, value: scored.value, placed: scored.placed, method: 'heuristic' };
    if (!best || better(compiled, candidate, best)) best = candidate;
  }
  if (!best) throw new Error('internal: no heuristic start');
  return best;
}

function score(compiled: Compiled, flow: Flow): { value: number; placed: number } {
  let value = 0;
  let placed = 0;
  flow.forEach((k, i) => {
    value += k * (compiled.value[i] ?? 0);
    placed += k;
  });
  return { value, placed };
}

/**
 * Packs `problem.jobs` onto `problem.gpus`. Problems with at most `exactMaxJobs` distinct jobs are
 * solved as a MIP (optimal unless the time limit stops HiGHS; the heuristic's answer is taken where
 * it is better); larger ones by the heuristic, bounded by the LP relaxation or, past
 * `maxLpColumns`, by a Lagrangian bound. Throws CHECK_FAILED when `placeAll` cannot be met.
 */
export async function optimizePacking(problem: PackingProblem, options: PackingOptions): Promise<PackingResult> {
  const exactMaxJobs = options.exactMaxJobs ?? PACKING_DEFAULTS.exactMaxJobs;
  const timeLimitSeconds = options.timeLimitSeconds ?? PACKING_DEFAULTS.timeLimitSeconds;
  const maxLpColumns = options.maxLpColumns ?? PACKING_DEFAULTS.maxLpColumns;
  const compiled = compile(problem);
  const pairs = pairCount(compiled);
  const highs = options.highs;
  const layoutColumns = compiled.models.reduce((s, g) => s + g.options.length, 0);
  const lpFits = pairs + layoutColumns <= maxLpColumns;

  const relaxation = lpFits ? solveRelaxation(highs, compiled) : null;
  if (relaxation?.outcome.status === 'infeasible') throw infeasible();
  const lpBound = relaxation?.outcome.bound ?? null;
  const assign = (counts: LayoutCounts) => (lpFits ? solveAssignment(highs, compiled, counts) : null);

  let chosen: Candidate | null = null;
  let bound: number | null = null;
  let boundKind: BoundKind = 'lp';
  if (compiled.classes.length <= exactMaxJobs) {
    const mip = solveMip(highs, compiled, timeLimitSeconds);
    if (mip.outcome.status === 'infeasible') throw infeasible();
    if (mip.counts && mip.flow) chosen = { counts: mip.counts, flow: mip.flow, ...score(compiled, mip.flow), method: 'mip' };
    if (mip.outcome.bound !== null) {
      bound = mip.outcome.bound;
      boundKind = 'mip';
    }
    if (mip.outcome.status !== 'optimal') {
      const h = heuristic(compiled, relaxation, assign);
      if (!chosen || better(compiled, h, chosen)) chosen = h;
    }
  } else {
    chosen = heuristic(compiled, relaxation, assign);
  }
  if (!chosen) throw new Error('internal: no packing found');
  if (compiled.placeAll && chosen.placed < problem.jobs.length) {
    throw new MigpoolError('CHECK_FAILED', `found no packing that places every job (placed ${chosen.placed} of ${problem.jobs.length}); drop --place-all (placeAll) or add GPUs`);
  }

  const realized = realize(problem, compiled, chosen.counts, chosen.flow);
  if (lpBound !== null && (bound === null || lpBound < bound - 1e-9 * Math.max(1, bound))) {
    bound = lpBound;
    boundKind = 'lp';
  }
  if (bound === null) {
    bound = lagrangianBound(compiled, realized.objective);
    boundKind = 'lagrangian';
  }
  bound = Math.max(bound, realized.objective);
  const gap = bound > 0 ? Math.max(0, (bound - realized.objective) / bound) : 0;
  return { ...realized, bound, boundKind, lpBound, gap, method: chosen.method, optimal: gap <= 1e-6 };
}
