import { A100_40GB } from '../mig/catalog/ampere.js';
import { GPU_MODELS } from '../mig/catalog/index.js';
import type { GpuModel } from '../mig/types.js';
import { DEEPPOOL_SUMS } from './calibration/deeppool-data.js';
import { DEEPPOOL_FILES, type DeepPoolModel } from './calibration/deeppool-files.js';
import { MISO_ROWS } from './calibration/miso-data.js';
import { fitCurve, type CurvePoint } from './fit.js';
import { effectiveCapacity, resourceShape } from './resources.js';
import type { SpeedCurve } from './types.js';

/**
 * Share of the work bound by memory bandwidth, for every built-in workload. The A100 data alone
 * cannot pin it down per model (all its instances pair SMs and bandwidth in nearly fixed ratios);
 * 0.5 is a neutral default that carries a workload to another GPU by the geometric mean of its SM
 * and bandwidth ratios. See fitReport() for how the A100 fit changes with it.
 */
export const DEFAULT_MEMORY_BOUND_SHARE = 0.5;

/** A calibration point with the place it was measured. */
export interface LabeledPoint extends CurvePoint {
  /** `1g.5gb` .. `7g.40gb`, or `full` (MIG off). */
  readonly profile: string;
}

/** A model of the calibration data with its points and its fitted curve. */
export interface CalibratedModel {
  /** `miso/resnet`, `deeppool/vgg16`. */
  readonly id: string;
  readonly dataset: 'miso' | 'deeppool';
  readonly model: string;
  readonly description: string;
  readonly points: readonly LabeledPoint[];
  readonly curve: SpeedCurve;
}

/** The A100-40GB as the catalogue has it (with memory slices filled in). */
export const REFERENCE_GPU: GpuModel = GPU_MODELS.find((m) => m.name === A100_40GB.name) ?? A100_40GB;

const MISO_DESCRIPTIONS: Readonly<Record<string, string>> = {
  resnet: 'ResNet-50 on CIFAR-10 (32x32), Keras, Adam',
  mobilenet: 'MobileNet (MISO benchmark), Keras',
  bert: 'BERT-base (bert-base-cased) sequence classification on IMDB, 512 tokens, Keras/HF, Adam',
  transformer: 'Transformer encoder for time series (4 blocks) on FordA, Keras',
  cyclegan: 'CycleGAN (MISO benchmark)',
  deepspeech2: 'DeepSpeech2 (MISO benchmark)',
  embedding: 'Embedding-table recommendation model (MISO benchmark)',
  gnn: 'Graph neural network (MISO benchmark)',
};

/** Points of a MISO model (all batches, all profiles) at memory-bound share `m`. */
export function misoPoints(model: string, m: number): LabeledPoint[] {
  return MISO_ROWS.filter((r) => r.model === model).map((r) => ({
    profile: r.profile,
    batch: r.batch,
    capacity: effectiveCapacity(resourceShape(REFERENCE_GPU, r.profile), m),
    iterationMs: r.medianIterMs,
  }));
}

/** Points of a DeepPool model: the sum of its layer times per batch, on the whole A100 (MIG off). */
export function deepPoolPoints(model: DeepPoolModel, m: number): LabeledPoint[] {
  const capacity = effectiveCapacity(resourceShape(REFERENCE_GPU, null), m);
  return DEEPPOOL_SUMS[model].map((b) => ({ profile: 'full', batch: b.batch, capacity, iterationMs: b.sumAvgMs }));
}

export const MISO_MODELS: readonly string[] = [...new Set(MISO_ROWS.map((r) => r.model))];

function build(m: number): CalibratedModel[] {
  const miso = MISO_MODELS.map((model) => {
    const points = misoPoints(model, m);
    return { id: `miso/${model}`, dataset: 'miso' as const, model, description: MISO_DESCRIPTIONS[model] ?? model, points, curve: fitCurve(points, m) };
  });
  const deeppool = DEEPPOOL_FILES.map(({ model, description }) => {
    const points = deepPoolPoints(model, m);
    return { id: `deeppool/${model}`, dataset: 'deeppool' as const, model, description, points, curve: fitCurve(points, m) };
  });
  return [...miso, ...deeppool];
}

const cache = new Map<number, CalibratedModel[]>();

/** Every calibrated model, fitted at memory-bound share `m` (memoised; the fit is deterministic). */
export function calibratedModels(m = DEFAULT_MEMORY_BOUND_SHARE): readonly CalibratedModel[] {
  let models = cache.get(m);
  if (!models) {
    models = build(m);
    cache.set(m, models);
  }
  return models;
}

/** The calibrated model `id` (`miso/resnet`, `deeppool/wrn101-2`). */
export function calibratedModel(id: string, m = DEFAULT_MEMORY_BOUND_SHARE): CalibratedModel {
  const found = calibratedModels(m).find((c) => c.id === id);
  if (!found) throw new Error(`no calibrated model '${id}'`);
  return found;
}
