import { badInput } from '../errors.js';
import { computeMs } from './cost.js';
import { resolveCostModel } from './cost-models.js';
import type { LayerChoice, ModelGraph, Plan, PlanRequest, SplitSet } from './types.js';

/**
 * The burst-parallel planner (the idea of DeepPool, Park et al., MLSys 2022; this is migpool's
 * own formulation). For each layer it picks how many GPUs share the global batch, a power of two
 * (or all the job's GPUs), minimising the iteration time
 *
 *   sum over layers of (compute at its per-GPU batch + all-reduce of its gradients)
 *   + sum over edges u -> v split differently of the activation transfer (forward and backward)
 *
 * (layers run one after another, each on the first g of the job's GPUs), subject to the
 * amplification limit A: for each layer, its GPU-time (its ms times its GPUs, plus each incoming
 * transfer's ms times the GPUs on the larger side) may be at most A times its compute on one GPU
 * at the global batch. For a layer with several inputs the limit's slack is shared equally among
 * its incoming edges (a sufficient condition that keeps the problem pairwise). Running every layer
 * on one GPU is always allowed, so a plan always exists; with A = 1 no plan costs more GPU-time
 * than one GPU would.
 *
 * The costs come from a cost model (cost-models.ts): migpool's by default, or DeepPool's own
 * accounting (`costModel: 'deeppool'`) to compare with DeepPool's planner under its assumptions.
 * DeepPool's planner searches the same space for a chain (per layer, a power-of-two split of the
 * samples, dynamic programming over the layers); on a chain this planner, given DeepPool's
 * accounting, finds DeepPool's plan (VGG16, see bench/burst.ts). Unlike DeepPool, it runs the
 * branches of a fork one after another on the same GPUs (DeepPool may run them side by side on
 * different GPUs).
 *
 * The problem (unary costs per layer, pairwise costs per edge) is solved exactly by variable
 * elimination in min-degree order: a chain or a series-parallel graph (branches that fork and
 * join, as in Inception or residual blocks) never builds a table over more than three layers,
 * O(layers x options^3) with options = log2(GPUs) + 1. Denser graphs may need larger tables, up
 * to MAX_TABLE entries, beyond which the model is refused.
 */

/** Largest table variable elimination may build (entries) before refusing the graph. */
export const MAX_TABLE = 4_000_000;

/**
 * The GPU counts a layer may use: 1, 2, 4, ... up to `gpus`, and (`migpool`, the default) `gpus`
 * itself; never more than the batch. `deeppool` leaves `gpus` out when it is not a power of two:
 * DeepPool's planner splits the samples 2^k ways for k up to floor(log2 gpus) only
 * (listConfigOptions, parallelizationPlanner.py @ 7f823f26), so on 6 GPUs it uses at most 4.
 */
export function splitOptions(gpus: number, globalBatch: number, splits: SplitSet = 'migpool'): number[] {
  const cap = Math.min(gpus, globalBatch);
  const out: number[] = [];
  for (let g = 1; g <= cap; g *= 2) out.push(g);
  if (splits === 'migpool' && gpus <= globalBatch && out[out.length - 1] !== gpus) out.push(gpus);
  return out;
}

/** Checks a plan request; one-line BAD_INPUT errors naming the field. */
export function checkRequest(model: ModelGraph, req: PlanRequest): void {
  if (!Number.isInteger(req.gpus) || req.gpus < 1) throw badInput(`gpus must be a whole number of at least 1, got ${req.gpus}`);
  if (!Number.isInteger(req.globalBatch) || req.globalBatch < 1) throw badInput(`the global batch must be a whole number of at least 1, got ${req.globalBatch}`);
  if (req.globalBatch < req.gpus) throw badInput(`the global batch ${req.globalBatch} is smaller than the ${req.gpus} GPUs: data parallelism needs a sample per GPU; raise the batch or lower the GPUs`);
  if (!(req.amplification >= 1)) throw badInput(`the amplification limit must be at least 1 (1: no extra GPU-time), got ${req.amplification}`);
  if (!(req.network.bandwidthGBps > 0) || !Number.isFinite(req.network.bandwidthGBps)) throw badInput(`the bandwidth must be a positive number of GB/s, got ${req.network.bandwidthGBps}`);
  if (!(req.network.latencyUs >= 0) || !Number.isFinite(req.network.latencyUs)) throw badInput(`the latency must be a non-negative number of microseconds, got ${req.network.latencyUs}`);
  if (model.layers.length === 0) throw badInput(`model '${model.name}' has no layers`);
  resolveCostModel(req.costModel);
  if (req.splits !== undefined && req.splits !== 'migpool' && req.splits !== 'deeppool') throw badInput(`unknown split set '${String(req.splits)}': known are migpool, deeppool`);
}

/** Distinct inputs of each layer. */
function edgesOf(model: ModelGraph): number[][] {
  return model.layers.map((l) => [...new Set(l.inputs)]);
}

/**
 * The plan that runs layer i on `choice[i]` GPUs, with its predicted iteration time and GPU-time.
 * Each layer's GPU-time counts its ms on its GPUs and its input transfers on the larger side.
 */
export function evaluatePlan(model: ModelGraph, req: PlanRequest, choice: readonly number[]): Plan {
  const edges = edgesOf(model);
  const cost = resolveCostModel(req.costModel);
  let iterationMs = 0;
  let gpuMs = 0;
  const layers: LayerChoice[] = model.layers.map((layer, v) => {
    const g = choice[v] as number;
    const { computeMs: c, syncMs: s } = cost.layerCost(layer, req.globalBatch, g, req.network);
    let tMs = 0;
    let tGpus = 0;
    for (const u of edges[v] as number[]) {
      const gu = choice[u] as number;
      const t = cost.transferMs(model.layers[u] as (typeof model.layers)[number], layer, req.globalBatch, gu, g, req.network);
      if (t > 0) {
        tMs += t;
        tGpus = Math.max(tGpus, gu, g);
        gpuMs += t * Math.max(gu, g);
      }
    }
    iterationMs += c + s + tMs;
    gpuMs += (c + s) * g;
    return { name: layer.name, gpus: g, ms: c + s, computeMs: c, syncMs: s, transferMs: tMs, transferGpus: tGpus };
  });
  return { layers, iterationMs, gpuMs };
}

/** The data-parallel baseline: every layer on all the job's GPUs. */
export function planDataParallel(model: ModelGraph, req: PlanRequest): Plan {
  checkRequest(model, req);
  return evaluatePlan(
    model,
    req,
    model.layers.map(() => req.gpus),
  );
}

/** ms of the whole model on one GPU at the global batch (the `work` unit of the simulator). */
export function singleGpuMs(model: ModelGraph, globalBatch: number): number {
  return model.layers.reduce((s, l) => s + computeMs(l.times, globalBatch), 0);
}

interface Factor {
  /** Layer indices, in table order (row-major, last fastest). */
  readonly vars: readonly number[];
  readonly table: Float64Array;
}

/** Relative tolerance of the amplification check (profile times carry three decimals). */
const TOLERANCE = 1e-9;

/**
 * The fastest plan within the amplification limit (see the file comment). Ties go to fewer GPUs.
 *
 * @throws MigpoolError `BAD_INPUT` for a bad request, or a graph too interconnected to solve
 */
export function planBurst(model: ModelGraph, req: PlanRequest): Plan {
  checkRequest(model, req);
  const layers = model.layers;
  const n = layers.length;
  const all = splitOptions(req.gpus, req.globalBatch, req.splits);
  const edges = edgesOf(model);
  const limit = req.amplification;
  const cost = resolveCostModel(req.costModel);

  // Options of each layer: split counts whose own GPU-time fits the limit; slack per input edge.
  const options: number[][] = [];
  const slack: number[][] = [];
  const unary: Float64Array[] = [];
  for (let v = 0; v < n; v++) {
    const layer = layers[v] as (typeof layers)[number];
    const budget = limit * computeMs(layer.times, req.globalBatch);
    const opts: number[] = [];
    const sl: number[] = [];
    const costs: number[] = [];
    for (const g of all) {
      const { computeMs: c, syncMs: s } = cost.layerCost(layer, req.globalBatch, g, req.network);
      const left = budget - (c + s) * g;
      if (g > 1 && left < -TOLERANCE * budget) continue;
      opts.push(g);
      costs.push(c + s);
      sl.push(Math.max(0, left) / Math.max(1, (edges[v] as number[]).length));
    }
    options.push(opts);
    slack.push(sl);
    unary.push(Float64Array.from(costs));
  }

  // Factors: one unary per layer, one pairwise per edge (u, v), transfer ms or Infinity.
  const factorsOf: Set<Factor>[] = layers.map(() => new Set());
  const adjacent: Set<number>[] = layers.map(() => new Set());
  const add = (f: Factor): void => {
    for (const x of f.vars) factorsOf[x]?.add(f);
    for (const x of f.vars) for (const y of f.vars) if (x !== y) adjacent[x]?.add(y);
  };
  for (let v = 0; v < n; v++) add({ vars: [v], table: unary[v] as Float64Array });
  for (let v = 0; v < n; v++) {
    const ov = options[v] as number[];
    for (const u of edges[v] as number[]) {
      const ou = options[u] as number[];
      const producer = layers[u] as (typeof layers)[number];
      const consumer = layers[v] as (typeof layers)[number];
      const table = new Float64Array(ou.length * ov.length);
      for (let i = 0; i < ou.length; i++) {
        for (let j = 0; j < ov.length; j++) {
          const gu = ou[i] as number;
          const gv = ov[j] as number;
          const t = cost.transferMs(producer, consumer, req.globalBatch, gu, gv, req.network);
          const s = (slack[v] as number[])[j] as number;
          table[i * ov.length + j] = t * Math.max(gu, gv) <= s * (1 + TOLERANCE) + 1e-12 ? t : Number.POSITIVE_INFINITY;
        }
      }
      add({ vars: [u, v], table });
    }
  }

  // Variable elimination, min-degree order (ties: smaller table, then lower index).
  const eliminated = new Uint8Array(n);
  const records: { x: number; vars: number[]; arg: Int32Array }[] = [];
  const scalars: number[] = [];
  for (let step = 0; step < n; step++) {
    let x = -1;
    let best = Number.POSITIVE_INFINITY;
    let bestSize = Number.POSITIVE_INFINITY;
    for (let v = 0; v < n; v++) {
      if (eliminated[v]) continue;
      const deg = (adjacent[v] as Set<number>).size;
      if (deg > best) continue;
      let size = 1;
      for (const y of adjacent[v] as Set<number>) size *= (options[y] as number[]).length;
      if (deg < best || size < bestSize) {
        x = v;
        best = deg;
        bestSize = size;
      }
    }
    const fs = [...(factorsOf[x] as Set<Factor>)];
    const vars = [...(adjacent[x] as Set<number>)].sort((a, b) => a - b);
    const dims = vars.map((y) => (options[y] as number[]).length);
    const size = dims.reduce((a, b) => a * b, 1);
    if (size > MAX_TABLE) throw badInput(`model '${model.name}' is too interconnected to plan exactly (a table of ${size} entries at layer '${(layers[x] as (typeof layers)[number]).name}'); describe it with fewer cross edges`);
    const dx = (options[x] as number[]).length;
    // For each factor: its stride per position of `vars`, and its stride for x.
    const plans = fs.map((f) => {
      const strides = new Array<number>(f.vars.length);
      let s = 1;
      for (let k = f.vars.length - 1; k >= 0; k--) {
        strides[k] = s;
        s *= (options[f.vars[k] as number] as number[]).length;
      }
      const byVar = vars.map((y) => {
        const k = f.vars.indexOf(y);
        return k < 0 ? 0 : (strides[k] as number);
      });
      const kx = f.vars.indexOf(x);
      return { table: f.table, byVar, xStride: kx < 0 ? 0 : (strides[kx] as number) };
    });
    const table = new Float64Array(size);
    const arg = new Int32Array(size);
    const digit = new Array<number>(vars.length).fill(0);
    const offsets = new Array<number>(plans.length).fill(0);
    for (let a = 0; a < size; a++) {
      let min = Number.POSITIVE_INFINITY;
      let argmin = 0;
      for (let k = 0; k < dx; k++) {
        let sum = 0;
        for (let p = 0; p < plans.length; p++) {
          const pl = plans[p] as (typeof plans)[number];
          sum += pl.table[(offsets[p] as number) + k * pl.xStride] as number;
        }
        if (sum < min) {
          min = sum;
          argmin = k;
        }
      }
      table[a] = min;
      arg[a] = argmin;
      // Advance the odometer over `vars` (last fastest) and the factors' offsets with it.
      for (let d = vars.length - 1; d >= 0; d--) {
        const next = (digit[d] as number) + 1;
        if (next < (dims[d] as number)) {
          digit[d] = next;
          for (let p = 0; p < plans.length; p++) offsets[p] = (offsets[p] as number) + ((plans[p] as (typeof plans)[number]).byVar[d] as number);
          break;
        }
        digit[d] = 0;
        for (let p = 0; p < plans.length; p++) offsets[p] = (offsets[p] as number) - (next - 1) * ((plans[p] as (typeof plans)[number]).byVar[d] as number);
      }
    }
    eliminated[x] = 1;
    for (const f of fs) for (const y of f.vars) factorsOf[y]?.delete(f);
    for (const y of vars) {
      const adj = adjacent[y] as Set<number>;
      adj.delete(x);
      for (const z of vars) if (z !== y) adj.add(z);
    }
    (adjacent[x] as Set<number>).clear();
    records.push({ x, vars, arg });
    if (vars.length === 0) scalars.push(table[0] as number);
    else add({ vars, table });
  }
  const optimum = scalars.reduce((s, t) => s + t, 0);
  if (!Number.isFinite(optimum)) throw badInput(`model '${model.name}': no plan fits the amplification limit ${limit} (a bug: one GPU per layer always fits)`);

  // Back-substitution in reverse elimination order.
  const pick = new Int32Array(n);
  for (let r = records.length - 1; r >= 0; r--) {
    const { x, vars, arg } = records[r] as (typeof records)[number];
    let index = 0;
    for (const y of vars) index = index * (options[y] as number[]).length + (pick[y] as number);
    pick[x] = arg[index] as number;
  }
  return evaluatePlan(
    model,
    req,
    Array.from(pick, (k, v) => (options[v] as number[])[k] as number),
  );
}
