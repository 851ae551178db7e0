/**
 * The packing MIP over grouped GPUs and jobs (see compile.ts), maximising total weighted throughput:
 *
 *   n[m,l] in {0..N_m}   GPUs of model m that take layout option l (a maximal MIG layout, or MIG off)
 *   x[c,t] in {0..K_c}   jobs of class c (K_c of them) placed on slots of type t
 *   max  sum v[c,t] x[c,t]
 *   s.t. sum_l n[m,l] = N_m                                  each GPU takes one layout
 *        sum_c x[c,t] <= sum_l count(l,t) n[m(t),l]          no more jobs on a slot type than slots
 *        sum_t x[c,t] <= K_c   (= K_c when every job must be placed)
 *
 * Any sub-layout of a maximal one is covered: its slots are a subset and idle slots cost nothing.
 * For fixed n the x-part is a transportation problem, whose LP has integral vertices: the
 * fixed-layout assignment below is solved as an LP.
 */
import type { Highs } from 'highs';
import { capacities, type Compiled, type Flow, type LayoutCounts } from './compile.js';
import { LinearProgram, solveProgram, type SolveOutcome } from './highs.js';

interface Built {
  readonly lp: LinearProgram;
  /** Column of n[m,l]. */
  readonly nCol: readonly (readonly number[])[];
  /** Column of x[c,t] (index c*T+t), -1 where the class does not run on the type. */
  readonly xCol: Int32Array;
}

/** Number of x columns: pairs of a class and a slot type it runs on. */
export function pairCount(compiled: Compiled): number {
  let n = 0;
  for (const f of compiled.fits) n += f;
  return n;
}

function addAssignment(compiled: Compiled, lp: LinearProgram, typeRow: readonly number[], integer: boolean): Int32Array {
  const T = compiled.slotTypes.length;
  const xCol = new Int32Array(compiled.classes.length * T).fill(-1);
  compiled.classes.forEach((cls, c) => {
    const k = cls.jobs.length;
    const row = lp.addRow(compiled.placeAll ? k : 0, k);
    for (let t = 0; t < T; t++) {
      const i = c * T + t;
      if (!compiled.fits[i]) continue;
      xCol[i] = lp.addColumn(compiled.value[i] ?? 0, 0, k, integer, [
        { row, value: 1 },
        { row: typeRow[t] ?? 0, value: 1 },
      ]);
    }
  });
  // Classes without x columns get empty rows: with placeAll such a row makes the program infeasible.
  return xCol;
}

function build(compiled: Compiled, integer: boolean): Built {
  const lp = new LinearProgram();
  const modelRow = compiled.models.map((g) => lp.addRow(g.gpus.length, g.gpus.length));
  const typeRow = compiled.slotTypes.map(() => lp.addRow(-Infinity, 0));
  const nCol = compiled.models.map((group, m) =>
    group.options.map((o) =>
      lp.addColumn(0, 0, group.gpus.length, integer, [
        { row: modelRow[m] ?? 0, value: 1 },
        ...o.counts.map((k, i) => ({ row: typeRow[group.slotTypes[i] ?? 0] ?? 0, value: -k })),
      ]),
    ),
  );
  const xCol = addAssignment(compiled, lp, typeRow, integer);
  return { lp, nCol, xCol };
}

/** A solution of the MIP or its relaxation, in grouped form. */
export interface GroupedSolution {
  readonly outcome: SolveOutcome;
  /** n[m][l]: fractional for the LP. Null when no solution was found. */
  readonly counts: number[][] | null;
  readonly flow: Flow | null;
}

function extract(compiled: Compiled, built: Built, outcome: SolveOutcome, round: boolean): GroupedSolution {
  const values = outcome.values;
  if (!values) return { outcome, counts: null, flow: null };
  const get = (col: number) => {
    const v = values[col] ?? 0;
    return round ? Math.round(v) : Math.max(0, v);
  };
  const counts = built.nCol.map((cols) => cols.map(get));
  const flow = new Float64Array(built.xCol.length);
  built.xCol.forEach((col, i) => (flow[i] = col < 0 ? 0 : get(col)));
  return { outcome, counts, flow };
}

/** Solves the packing MIP (integral counts and assignments). */
export function solveMip(highs: Highs, compiled: Compiled, timeLimitSeconds: number): GroupedSolution {
  const built = build(compiled, true);
  return extract(compiled, built, solveProgram(highs, built.lp, { mip: true, timeLimitSeconds }), true);
}

/** Solves the LP relaxation of the packing MIP: its optimum bounds every packing from above. */
export function solveRelaxation(highs: Highs, compiled: Compiled): GroupedSolution {
  const built = build(compiled, false);
  return extract(compiled, built, solveProgram(highs, built.lp, { mip: false }), false);
}

/**
 * The best assignment of jobs to the slots that fixed layouts offer: a transportation LP, whose
 * basic optimal solutions are integral. Null when HiGHS returns none, or a fractional one.
 */
export function solveAssignment(highs: Highs, compiled: Compiled, counts: LayoutCounts): Flow | null {
  const lp = new LinearProgram();
  const typeRow = capacities(compiled, counts).map((cap) => lp.addRow(-Infinity, cap));
  const xCol = addAssignment(compiled, lp, typeRow, false);
  const outcome = solveProgram(highs, lp, { mip: false });
  const values = outcome.values;
  if (outcome.status !== 'optimal' || !values) return null;
  const flow = new Float64Array(xCol.length);
  for (let i = 0; i < xCol.length; i++) {
    const col = xCol[i] ?? -1;
    if (col < 0) continue;
    const v = values[col] ?? 0;
    if (Math.abs(v - Math.round(v)) > 1e-6) return null;
    flow[i] = Math.round(v);
  }
  return flow;
}
