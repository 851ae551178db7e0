import { computeMs, movedSamples, wireMs } from './cost.js';
import type { CostModel, Layer, Network } from './types.js';

/**
 * DeepPool's accounting, re-implemented from a reading of its planner (`CostSim` in
 * parallelizationPlanner.py, github.com/DeepPoolML/DeepPool @ 7f823f26: calcSyncTime,
 * calcConv2dSyncTime, calcLinearSyncTime, calcInputXfer and the calc*ActivationTime functions) so
 * that migpool's planner can be compared with DeepPool's under the same assumptions. It is not
 * migpool's model: it under-counts convolution gradients (see DEEPPOOL_COST). Pure.
 */

/** DeepPool prices every activation and parameter at 4 bytes (`bytesPerParam = 4`), autocast or not. */
export const DEEPPOOL_ELEMENT_BYTES = 4;

/**
 * DeepPool multiplies the transfer into these kinds by 1000 (`reluMultiple` in calcInputXfer), so
 * they in effect run on their producer's split.
 */
export const DEEPPOOL_FOLLOWERS: ReadonlySet<string> = new Set(['ReLU2d', 'ReLU1d', 'flatten', 'BatchNorm2d']);

/** The factor of DEEPPOOL_FOLLOWERS (calcInputXfer's `reluMultiple`). */
export const DEEPPOOL_FOLLOWER_FACTOR = 1000;

function num(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) ? v : 0;
}

/**
 * Gradient bytes DeepPool synchronises for a layer, and whether it does so on one GPU too:
 * - conv2d: 4 x (kw x kh x out_channels + kw x kh), where an integer kernel_size k counts as
 *   kw = k, kh = 1 (its code reads the second dimension only from a tuple), and in_channels is
 *   not counted: a 3x3 512->512 convolution counts 1,539 values for its 2,359,808 parameters.
 *   Charged at every split, one GPU included.
 * - linear: 4 x (in x out + out), only when split over more than one GPU.
 * - every other kind (pooling, concat, and also ResnetBottleneck, TransBlockA/B whose parameters
 *   migpool counts): nothing.
 * A layer without an operator (a migpool JSON profile) counts its paramBytes, when split.
 */
export function deeppoolGradient(layer: Layer): { bytes: number; evenOnOneGpu: boolean } {
  const op = layer.op;
  if (!op) return { bytes: layer.paramBytes, evenOnOneGpu: false };
  const c = op.config;
  if (op.kind === 'conv2d') {
    const k = c['kernel_size'];
    const [kw, kh] = Array.isArray(k) ? [num(k[0]), num(k[1])] : [num(k), 1];
    return { bytes: DEEPPOOL_ELEMENT_BYTES * (kw * kh * num(c['out_channels']) + kw * kh), evenOnOneGpu: true };
  }
  if (op.kind === 'linear') {
    const out = num(c['out_features']);
    return { bytes: DEEPPOOL_ELEMENT_BYTES * (num(c['in_features']) * out + out), evenOnOneGpu: false };
  }
  return { bytes: 0, evenOnOneGpu: false };
}

/**
 * DeepPool's cost model:
 * - compute: the profiled forward+backward time at the per-GPU batch (as migpool's);
 * - gradient sync: deeppoolGradient's bytes / bandwidth, no latency, whatever the GPU count (no
 *   2 (p-1)/p ring factor);
 * - activations: max(bytes the busiest GPU sends, receives) / bandwidth + latency, doubled for
 *   the backward pass, with 4-byte elements (the same busiest-GPU share as migpool's), x1000 into
 *   a DEEPPOOL_FOLLOWERS layer.
 * Left out: DeepPool's graphs also hold ReLU layers that its profiles do not list, each charged
 * 1 us (its benchGpuTime returns 1 for a layer missing from the profile): 15 of them in VGG16.
 */
export const DEEPPOOL_COST: CostModel = {
  name: 'deeppool',
  layerCost(layer: Layer, globalBatch: number, gpus: number, net: Network) {
    const g = deeppoolGradient(layer);
    const syncMs = gpus > 1 || g.evenOnOneGpu ? wireMs(g.bytes, net) : 0;
    return { computeMs: computeMs(layer.times, Math.ceil(globalBatch / gpus)), syncMs };
  },
  transferMs(producer: Layer, consumer: Layer, globalBatch: number, from: number, to: number, net: Network) {
    if (from === to) return 0;
    const perSample = producer.outputElementsPerSample !== undefined ? producer.outputElementsPerSample * DEEPPOOL_ELEMENT_BYTES : producer.outputBytesPerSample;
    const oneWay = wireMs(movedSamples(globalBatch, from, to) * perSample, net) + net.latencyUs / 1000;
    return 2 * oneWay * (consumer.op && DEEPPOOL_FOLLOWERS.has(consumer.op.kind) ? DEEPPOOL_FOLLOWER_FACTOR : 1);
  },
};
