import type { GpuModel } from '../mig/types.js';

/**
 * A training workload the performance model knows: how long one iteration takes at a batch size
 * on a resource. Built-in ones are fitted from the calibration data in data/calibration/; users
 * add their own from measured points (the YAML `migpool bench --out` writes).
 */
export interface Workload {
  /** Canonical name: `resnet26-cifar10`, `bert-base-squad`, `miso-resnet-b128`, ... */
  readonly name: string;
  /** Other names it answers to: `small`, `medium`, `large`. */
  readonly aliases: readonly string[];
  readonly description: string;
  /** Samples per iteration (per job). */
  readonly batchSize: number;
  /** Samples per epoch, for time per epoch. */
  readonly datasetSize: number;
  /** The fitted speed curve (see model.ts). */
  readonly curve: SpeedCurve;
  /**
   * Memory one job needs, in GiB: estimated from first principles (src/perf/memory), a bound read
   * off the calibration, or measured. Null when unknown: then it fits nowhere for sure (fitsOn()
   * answers 'unknown'; the job goes only where its user allows).
   */
  readonly memoryGiB: number | null;
  /** Measured iteration times of one job among N sharing a GPU (time-slicing, MPS): they replace the model's. */
  readonly sharing?: readonly SharingPoint[];
  /** Where `memoryGiB` comes from, for people. */
  readonly memorySource?: string;
  /** Where its numbers come from, and how it was derived. */
  readonly source: string;
  /** The calibrated model (see fitReport()) whose curve this one is or is derived from: `miso/resnet`. */
  readonly calibratedFrom?: string;
}

/** A measured iteration time of one job among `jobs` sharing a whole GPU (`migpool bench` NxTIMESLICE, NxMPS). */
export interface SharingPoint {
  /** GPU model name as the catalogue has it (`A100-40GB`). */
  readonly gpu: string;
  readonly kind: 'timeslice' | 'mps';
  readonly jobs: number;
  readonly iterationMs: number;
}

/**
 * The speed curve: iteration time on a resource of effective capacity `c` (in A100-40GB compute
 * slice units, see resources.ts) is `(L^p + ((batch + B0) * 7 / (c * θ))^p)^(1/p)`: on the full
 * 7-slice A100 (c = 7) at batch B, `T(B) = (latencyMs^p + ((B + fixedSamples) / peakSamplesPerMs)^p)^(1/p)`. A job on
 * a small slice runs like the full GPU on a proportionally larger batch: it saturates at the
 * same per-SM throughput, and below that it is bound by a fixed per-iteration latency.
 */
export interface SpeedCurve {
  /** Per-iteration time floor on the reference GPU (kernel launches, synchronisation), ms. */
  readonly latencyMs: number;
  /** Peak throughput of the full 7-slice A100-40GB, samples per ms. */
  readonly peakSamplesPerMs: number;
  /** Smoothness of the transition from latency-bound to throughput-bound. */
  readonly sharpness: number;
  /**
   * Batch-independent GPU work per iteration, in samples' worth (optimizer step, per-kernel floors):
   * the work term is `(B + fixedSamples) / θ`. Absent or 0 for a curve fitted on one resource only.
   */
  readonly fixedSamples?: number;
  /** Share of the work bound by memory bandwidth rather than SMs (0..1), for other GPUs. */
  readonly memoryBoundShare: number;
}

/** Where a job runs. */
export type Resource =
  | { readonly kind: 'mig'; readonly gpu: GpuModel; readonly profile: string }
  | { readonly kind: 'full'; readonly gpu: GpuModel }
  /** N jobs on one GPU without isolation, taking turns (time-slicing) or side by side (MPS). */
  | { readonly kind: 'timeslice' | 'mps'; readonly gpu: GpuModel; readonly jobs: number };

/** The model's answer for one job on one resource (for `timeslice`/`mps`: each one of its N jobs). */
export interface Prediction {
  /**
   * False only when the job is known not to fit; true also when its memory is unknown (then
   * `memoryFit` is 'unknown' and a caveat says so). Callers that must not place a job of unknown
   * memory read `memoryFit`.
   */
  readonly fits: boolean;
  /** fitsOn(): true, false, or 'unknown' (the job's or the resource's memory is not known). */
  readonly memoryFit: true | false | 'unknown';
  /** Null when it does not fit. */
  readonly iterationMs: number | null;
  readonly samplesPerSecond: number | null;
  readonly epochSeconds: number | null;
  /** Effective capacity of the resource for this workload, A100-40GB compute slices (per job when shared). */
  readonly effectiveCapacity: number;
  /** Estimates the prediction rests on beyond the model itself (unknown SMs, memory, bandwidth). */
  readonly caveats: readonly string[];
}
