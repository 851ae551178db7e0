/**
 * The burst-parallel planner's nouns. A model is a DAG of layers in a topological order; each
 * layer carries its measured forward+backward time at several per-GPU batch sizes, the bytes of
 * its parameters and the bytes of its output per sample. Pure data: no I/O.
 */

/** One measured point: forward+backward time of a layer at a per-GPU batch size. */
export interface TimePoint {
  readonly batch: number;
  readonly ms: number;
}

/** The operator a layer runs, as its profile names it (DeepPool profiles: `conv2d`, `linear`, `flatten`, ...). */
export interface LayerOp {
  readonly kind: string;
  /** Its configuration as profiled (`in_channels`, `kernel_size`, `out_features`, ...). */
  readonly config: Readonly<Record<string, unknown>>;
}

/** One layer of a model. */
export interface Layer {
  /** Unique within the model. */
  readonly name: string;
  /** Indices of the layers whose outputs it reads (all earlier in the list); empty for the first. */
  readonly inputs: readonly number[];
  /** Forward+backward ms at per-GPU batch sizes, sorted by batch, batches distinct and >= 1. */
  readonly times: readonly TimePoint[];
  /** Bytes of its parameters (their gradients are all-reduced over the GPUs it runs on). */
  readonly paramBytes: number;
  /** Bytes of its output per sample (what a consumer on a different split receives). */
  readonly outputBytesPerSample: number;
  /** The operator, where the profile says (DeepPool profiles do; migpool JSON profiles need not). */
  readonly op?: LayerOp;
  /** Elements of its output per sample, where known (a cost model may price them at its own width). */
  readonly outputElementsPerSample?: number;
}

/** A model the planner can plan. */
export interface ModelGraph {
  readonly name: string;
  /** Layers in a topological order (every input index is smaller than the layer's own). */
  readonly layers: readonly Layer[];
  /** Where the numbers come from, and how the graph was built. */
  readonly source: string;
}

/**
 * The network between the GPUs of a job: one bandwidth and one latency for every pair, an
 * alpha-beta model.
 */
export interface Network {
  /** GB/s (1e9 bytes per second) a GPU sends or receives at. */
  readonly bandwidthGBps: number;
  /** Fixed cost of one transfer or one collective step, microseconds. */
  readonly latencyUs: number;
}

/** Names of the cost models (see cost-models.ts). */
export type CostModelName = 'migpool' | 'deeppool';

/**
 * How a plan is priced: a layer's own ms on some GPUs, and the ms of moving a producer's output to
 * a consumer split differently. Pure.
 */
export interface CostModel {
  readonly name: CostModelName;
  /** Compute at the per-GPU batch and gradient synchronisation of `layer` on `gpus` GPUs sharing `globalBatch`. */
  layerCost(layer: Layer, globalBatch: number, gpus: number, net: Network): { computeMs: number; syncMs: number };
  /** Forward and backward ms of handing `producer`'s output from `from` GPUs to `consumer` on `to` GPUs; 0 when equal. */
  transferMs(producer: Layer, consumer: Layer, globalBatch: number, from: number, to: number, net: Network): number;
}

/** What a plan is asked for. */
export interface PlanRequest {
  readonly gpus: number;
  readonly globalBatch: number;
  /**
   * Most GPU-time a layer may cost (its compute and gradient sync on its GPUs, plus the transfers
   * of its inputs) relative to its compute on one GPU at the global batch. 1: never waste GPU
   * time; very large: fastest plan.
   */
  readonly amplification: number;
  readonly network: Network;
  /** How plans are priced; default `migpool` (see cost-models.ts). */
  readonly costModel?: CostModelName;
  /**
   * The GPU counts a layer may use: `migpool` (default) powers of two up to `gpus` and `gpus`
   * itself; `deeppool` powers of two up to `gpus` only, DeepPool's sample splits.
   */
  readonly splits?: SplitSet;
}

/** Names of the sets of GPU counts a layer may use (see PlanRequest.splits). */
export type SplitSet = 'migpool' | 'deeppool';

/** One layer's choice in a plan. */
export interface LayerChoice {
  readonly name: string;
  /** GPUs that share the global batch for this layer (a power of two, or all the job's GPUs). */
  readonly gpus: number;
  /** Wall-clock ms of the layer in one iteration: compute at its per-GPU batch plus gradient sync. */
  readonly ms: number;
  /** Compute part of `ms`. */
  readonly computeMs: number;
  /** Gradient all-reduce part of `ms`. */
  readonly syncMs: number;
  /** Wall-clock ms of moving its inputs from differently split producers (forward and backward). */
  readonly transferMs: number;
  /** GPUs busy during its input transfers (the larger side of each differently split edge). */
  readonly transferGpus: number;
}

/** A plan and what it predicts. */
export interface Plan {
  readonly layers: readonly LayerChoice[];
  /** One training iteration, ms: layers run one after another, each with its input transfers. */
  readonly iterationMs: number;
  /** GPU-ms per iteration: each layer's ms times its GPUs, each transfer's ms times its GPUs. */
  readonly gpuMs: number;
}
