import type { CostModel, Layer, Network, TimePoint } from './types.js';

/**
 * The planner's cost model. Pure functions of a layer's profile and the network.
 */

/**
 * Default network: 266 GB/s and 40 us, the figures of DeepPool's cost model for its A100 setting
 * (an 8-GPU NVLink node; see ../shared/data/README.md, "DeepPool's planner"). Jobs on more GPUs
 * span nodes, whose network is slower: pass --bandwidth/--latency for them.
 */
export const DEFAULT_NETWORK: Network = { bandwidthGBps: 266, latencyUs: 40 };

/** Default amplification limit: DeepPool's (see ../shared/data/README.md). */
export const DEFAULT_AMPLIFICATION = 2;

/**
 * Bytes per parameter gradient: fp32. Under autocast the parameters and their gradients stay fp32
 * (mixed precision keeps fp32 master weights); only activations are cast.
 */
export const PARAM_BYTES = 4;

/**
 * Bytes per activation element: fp16, because the profiles were taken under autocast
 * (../shared/data/README.md), which runs convolutions and linear layers in half precision.
 */
export const ACTIVATION_BYTES = 2;

/**
 * Forward+backward ms of a layer at a per-GPU batch: linear interpolation between the profiled
 * batch sizes; below the smallest, the smallest's time (a GPU is not faster on fewer samples than
 * it is latency-bound on); above the largest, the largest's time plus the slope of the last two
 * points per extra sample (the GPU is saturated there, so time grows linearly). One point only:
 * proportional above it.
 */
export function computeMs(times: readonly TimePoint[], batch: number): number {
  const n = times.length;
  const first = times[0];
  if (!first) return 0;
  if (batch <= first.batch) return first.ms;
  const last = times[n - 1] as TimePoint;
  if (batch >= last.batch) {
    if (n === 1) return (last.ms * batch) / last.batch;
    const prev = times[n - 2] as TimePoint;
    const slope = Math.max(0, (last.ms - prev.ms) / (last.batch - prev.batch));
    return last.ms + slope * (batch - last.batch);
  }
  let lo = 0;
  let hi = n - 1;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if ((times[mid] as TimePoint).batch <= batch) lo = mid;
    else hi = mid;
  }
  const a = times[lo] as TimePoint;
  const b = times[hi] as TimePoint;
  return a.ms + ((b.ms - a.ms) * (batch - a.batch)) / (b.batch - a.batch);
}

/** ms to move `bytes` at the network's bandwidth (no latency). */
export function wireMs(bytes: number, net: Network): number {
  return bytes / (net.bandwidthGBps * 1e6);
}

/**
 * ms to all-reduce `bytes` of gradients over `gpus` GPUs: each GPU sends and receives 2 (p-1)/p
 * of the bytes (the bandwidth term of a ring or reduce-scatter + all-gather all-reduce; Thakur,
 * Rabenseifner and Gropp, "Optimization of Collective Communication Operations in MPICH", IJHPCA
 * 2005). No latency term: as in DeepPool's cost model (gradient sync = bytes / bandwidth, see
 * ../shared/data/README.md), gradients are assumed bucketed into few large all-reduces (PyTorch
 * DistributedDataParallel's default bucket is 25 MB), so per-layer latency is amortised. Not
 * overlapped with compute, for data-parallel and burst plans alike.
 */
export function allReduceMs(bytes: number, gpus: number, net: Network): number {
  if (gpus <= 1 || bytes <= 0) return 0;
  return (2 * (gpus - 1) * wireMs(bytes, net)) / gpus;
}

/**
 * ms to hand a layer's output from a split over `from` GPUs to one over `to` GPUs, forward
 * (activations) and backward (their gradients, the same size): each way, the busiest GPU (one of
 * the smaller side) moves the part of its ceil(batch / min) samples that goes to or comes from
 * other GPUs, (1 - min/max) of them, plus one latency. Zero when the splits are equal.
 */
export function transferMs(bytesPerSample: number, globalBatch: number, from: number, to: number, net: Network): number {
  if (from === to) return 0;
  return 2 * (wireMs(movedSamples(globalBatch, from, to) * bytesPerSample, net) + net.latencyUs / 1000);
}

/**
 * Samples the busiest GPU sends or receives when a batch split over `from` GPUs is re-split over
 * `to` (each GPU keeps the samples both splits give it): ceil(batch / min) x (1 - min / max), a
 * GPU of the smaller side. 0 when equal.
 */
export function movedSamples(globalBatch: number, from: number, to: number): number {
  if (from === to) return 0;
  const lo = Math.min(from, to);
  const hi = Math.max(from, to);
  return Math.ceil(globalBatch / lo) * (1 - lo / hi);
}

/** A layer's ms on `gpus` GPUs sharing `globalBatch`: compute at ceil(globalBatch / gpus) plus gradient sync. */
export function layerCost(layer: Layer, globalBatch: number, gpus: number, net: Network): { computeMs: number; syncMs: number } {
  return { computeMs: computeMs(layer.times, Math.ceil(globalBatch / gpus)), syncMs: allReduceMs(layer.paramBytes, gpus, net) };
}

/**
 * migpool's cost model (the default): compute from the profile at the per-GPU batch; gradients of
 * every parameter (fp32) ring-all-reduced over the layer's GPUs; activations at their profiled
 * width (fp16 under autocast) moved between differently split layers, forward and backward.
 */
export const MIGPOOL_COST: CostModel = {
  name: 'migpool',
  layerCost,
  transferMs: (producer, _consumer, globalBatch, from, to, net) => transferMs(producer.outputBytesPerSample, globalBatch, from, to, net),
};
