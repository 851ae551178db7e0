/** Burst parallelism and foreground/background multiplexing (DeepPool's ideas): planner, models, multiplexing, the simulator's scaling model. Pure. */
export type { CostModel, CostModelName, Layer, LayerOp, ModelGraph, Network, Plan, PlanRequest, LayerChoice, TimePoint } from './types.js';
export { ACTIVATION_BYTES, DEFAULT_AMPLIFICATION, DEFAULT_NETWORK, MIGPOOL_COST, PARAM_BYTES, allReduceMs, computeMs, movedSamples, transferMs } from './cost.js';
export { COST_MODELS, resolveCostModel } from './cost-models.js';
export { DEEPPOOL_COST, deeppoolGradient } from './deeppool-cost.js';
export { PLAN_FORMAT_VERSION, runtimeLayers, sampleBlocks, type RuntimeLayer } from './plan-json.js';
export { evaluatePlan, planBurst, planDataParallel, singleGpuMs, splitOptions, MAX_TABLE } from './planner.js';
export { BUILT_IN_MODELS, builtInModel, modelFromDeepPoolProfile, resolveBuiltInModel, type BuiltInModel } from './models.js';
export { parseProfileJson } from './profile-json.js';
export { parseDeepPoolLayers, type ProfiledLayer } from './deeppool-profile.js';
export { inferGraph } from './infer-graph.js';
export { inceptionV3Inputs } from './inception-v3.js';
export {
  DEFAULT_MULTIPLEX,
  DEFAULT_PIECE_MS,
  DEFAULT_SLOWDOWN_BOUND,
  DEFAULT_SWITCH_MS,
  backgroundShareOf,
  multiplex,
  timeline,
  type Multiplexing,
  type MultiplexOptions,
  type RankClass,
  type Segment,
} from './multiplex.js';
export { DEFAULT_SCALING, createScalingModel, type ScalingOptions } from './scaling.js';
