import type { ModelGraph, Plan, PlanRequest } from './types.js';

/** Version of the per-layer plan format; raised when a field changes meaning or goes away. */
export const PLAN_FORMAT_VERSION = 1;

/** One layer of a plan as a runtime receives it (see README, "How a plan reaches a runtime"). */
export interface RuntimeLayer {
  /** Position in the model's topological order (0-based); `inputs` refer to it. */
  readonly index: number;
  readonly name: string;
  /** The operator as profiled (`conv2d`, `linear`, ...), or null when the profile does not say. */
  readonly kind: string | null;
  /** Indices of the layers whose outputs it reads. */
  readonly inputs: readonly number[];
  /** GPUs the layer runs on. */
  readonly gpus: number;
  /** The job's GPUs (ranks 0 .. job GPUs - 1) it runs on: always the first `gpus` of them. */
  readonly ranks: readonly number[];
  /** Per rank, in `ranks` order, the samples of the global batch it processes: [start, end). */
  readonly samples: readonly (readonly [number, number])[];
  /** Its predicted wall-clock ms in one iteration, its input transfers included. */
  readonly ms: number;
  readonly computeMs: number;
  /** Gradient all-reduce among its ranks (0 on one GPU). */
  readonly syncMs: number;
  /** Moving its inputs from producers split differently, forward and backward. */
  readonly transferMs: number;
  /** Bytes of gradients the runtime all-reduces among its ranks after the backward pass (0 on one GPU). */
  readonly gradientBytes: number;
}

/**
 * The samples each of `gpus` ranks processes when `globalBatch` samples are split into contiguous,
 * balanced blocks: rank r gets [floor(r B / g), floor((r + 1) B / g)), at most ceil(B / g) of them
 * (the per-GPU batch the cost model prices). With B a multiple of g, every block has B / g.
 */
export function sampleBlocks(globalBatch: number, gpus: number): [number, number][] {
  const out: [number, number][] = [];
  for (let r = 0; r < gpus; r++) out.push([Math.floor((r * globalBatch) / gpus), Math.floor(((r + 1) * globalBatch) / gpus)]);
  return out;
}

/**
 * A plan as the layers a runtime executes: per layer, which of the job's GPUs run it and on which
 * samples, what it reads, and what it costs. Layers run in `index` order, each on its ranks; a
 * rank that holds samples of a producer's output that a consumer's rank needs sends them
 * (forward; the gradients go back the same way in the backward pass); each layer's gradients are
 * all-reduced among its ranks.
 */
export function runtimeLayers(model: ModelGraph, plan: Plan, req: PlanRequest): RuntimeLayer[] {
  return plan.layers.map((c, index) => {
    const layer = model.layers[index];
    return {
      index,
      name: c.name,
      kind: layer?.op?.kind ?? null,
      inputs: [...new Set(layer?.inputs ?? [])],
      gpus: c.gpus,
      ranks: Array.from({ length: c.gpus }, (_, r) => r),
      samples: sampleBlocks(req.globalBatch, c.gpus),
      ms: c.ms + c.transferMs,
      computeMs: c.computeMs,
      syncMs: c.syncMs,
      transferMs: c.transferMs,
      gradientBytes: c.gpus > 1 ? (layer?.paramBytes ?? 0) : 0,
    };
  });
}
