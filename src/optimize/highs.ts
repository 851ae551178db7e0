/**
 * A small bridge to HiGHS (the `highs` package: the HiGHS LP/MIP solver compiled to WebAssembly).
 * This module stays pure: the loaded runtime is passed in (src/exec/highs.ts loads it).
 */
import type { Highs } from 'highs';

/** A linear program to maximise, built column by column. */
export class LinearProgram {
  readonly cost: number[] = [];
  readonly lower: number[] = [];
  readonly upper: number[] = [];
  readonly integer: boolean[] = [];
  readonly rowLower: number[] = [];
  readonly rowUpper: number[] = [];
  private readonly entries: { row: number; value: number }[][] = [];

  addRow(lower: number, upper: number): number {
    this.rowLower.push(lower);
    this.rowUpper.push(upper);
    return this.rowLower.length - 1;
  }

  addColumn(cost: number, lower: number, upper: number, integer: boolean, entries: { row: number; value: number }[]): number {
    this.cost.push(cost);
    this.lower.push(lower);
    this.upper.push(upper);
    this.integer.push(integer);
    this.entries.push(entries.filter((e) => e.value !== 0));
    return this.cost.length - 1;
  }

  get columns(): number {
    return this.cost.length;
  }

  /** CSC matrix in the shape HiGHS takes. */
  matrix(): { starts: Int32Array; indices: Int32Array; values: Float64Array } {
    const nnz = this.entries.reduce((s, e) => s + e.length, 0);
    const starts = new Int32Array(this.entries.length + 1);
    const indices = new Int32Array(nnz);
    const values = new Float64Array(nnz);
    let k = 0;
    this.entries.forEach((col, j) => {
      starts[j] = k;
      for (const e of [...col].sort((a, b) => a.row - b.row)) {
        indices[k] = e.row;
        values[k] = e.value;
        k++;
      }
    });
    starts[this.entries.length] = k;
    return { starts, indices, values };
  }
}

export interface SolveOutcome {
  /** `optimal`; `limit` when stopped by the time limit (a solution may still exist); `infeasible`; `failed`. */
  readonly status: 'optimal' | 'limit' | 'infeasible' | 'failed';
  /** Column values of the best solution found, or null. */
  readonly values: Float64Array | null;
  readonly objective: number | null;
  /** Proven upper bound (maximisation): the objective of an LP, HiGHS's dual bound of a MIP. */
  readonly bound: number | null;
}

/**
 * Maximises `lp` with HiGHS; as a MIP when `mip` (integer columns kept), else as its LP relaxation.
 */
export function solveProgram(highs: Highs, lp: LinearProgram, options: { mip: boolean; timeLimitSeconds?: number }): SolveOutcome {
  const { constants } = highs;
  const matrix = lp.matrix();
  return highs.withModel(
    {
      numCols: lp.columns,
      numRows: lp.rowLower.length,
      sense: constants.objectiveSense.maximize,
      colCost: lp.cost,
      colLower: lp.lower,
      colUpper: lp.upper,
      rowLower: lp.rowLower,
      rowUpper: lp.rowUpper,
      matrix: { format: 'csc', numRows: lp.rowLower.length, numCols: lp.columns, ...matrix },
      ...(options.mip ? { integrality: lp.integer.map((i) => (i ? constants.variableType.integer : constants.variableType.continuous)) } : {}),
    },
    (model): SolveOutcome => {
      model.options.set({ output_flag: false, mip_rel_gap: 1e-7, mip_abs_gap: 1e-9 });
      if (options.timeLimitSeconds !== undefined) model.options.set('time_limit', options.timeLimitSeconds);
      const { modelStatus } = model.run();
      const s = constants.modelStatus;
      if (modelStatus === s.infeasible) return { status: 'infeasible', values: null, objective: null, bound: null };
      const hasSolution = Number(model.info.get('primal_solution_status')) === constants.solutionStatus.feasible;
      const values = hasSolution ? model.getSolution().colValue : null;
      const objective = hasSolution ? model.getObjectiveValue() : null;
      const status = modelStatus === s.optimal ? 'optimal' : modelStatus === s.timeLimit || modelStatus === s.interrupted ? 'limit' : 'failed';
      let bound: number | null = null;
      if (options.mip) {
        const b = Number(model.info.get('mip_dual_bound'));
        bound = Number.isFinite(b) ? b : null;
      } else if (status === 'optimal') bound = objective;
      return { status: status === 'failed' && hasSolution ? 'limit' : status, values, objective, bound };
    },
  );
}
