import { badInput } from '../errors.js';
import { calibratedModel, MISO_MODELS } from './calibrated.js';
import { MISO_ROWS } from './calibration/miso-data.js';
import { DEEPPOOL_FILES } from './calibration/deeppool-files.js';
import { scaleTime, scaleWork } from './curve.js';
import { misoMemoryGiB } from './memory.js';
import { estimateTrainingMemory, type MemoryQuery } from './memory/estimate.js';
import type { Workload } from './types.js';

/** Training-set sizes, samples per epoch. */
export const DATASET_SIZES = {
  /** CIFAR-10 training set (Krizhevsky 2009). */
  cifar10: 50_000,
  /** ILSVRC-2012 (ImageNet-1k) training set. */
  imagenet: 1_281_167,
  /** Downsampled ImageNet 64x64 (Chrabaszcz et al. 2017): the same 1,281,167 training images. */
  imagenet64: 1_281_167,
  /** SQuAD v1.1 training set: 87,599 questions (Rajpurkar et al. 2016). */
  squad11: 87_599,
  /** IMDB reviews training set (Maas et al. 2011), MISO's BERT data. */
  imdb: 25_000,
  /** UCR FordA training set, MISO's Transformer data. */
  fordA: 3_601,
  /** Stated default where the calibration source does not say which data set a model trains on. */
  unknown: 50_000,
} as const;

const MISO_DATASET: Readonly<Record<string, { size: number; note: string }>> = {
  resnet: { size: DATASET_SIZES.cifar10, note: 'CIFAR-10 training set' },
  mobilenet: { size: DATASET_SIZES.cifar10, note: 'CIFAR-10 training set (assumed: MISO does not say)' },
  bert: { size: DATASET_SIZES.imdb, note: 'IMDB training set' },
  transformer: { size: DATASET_SIZES.fordA, note: 'FordA training set' },
};

function misoDataset(model: string): { size: number; note: string } {
  return MISO_DATASET[model] ?? { size: DATASET_SIZES.unknown, note: `data set not documented: default ${DATASET_SIZES.unknown} samples` };
}

/** Memory of a study or DeepPool workload from the estimator, GiB (rounded up to 0.01), and how it was reckoned. */
function estimated(q: MemoryQuery, what: string): { memoryGiB: number; memorySource: string } {
  const e = estimateTrainingMemory(q);
  return {
    memoryGiB: Math.ceil(e.totalGiB * 100) / 100,
    memorySource: `estimated (src/perf/memory): ${what}, batch ${e.batch}, ${e.precision}, ${e.optimizer}: ${e.totalGiB.toFixed(2)} GiB`,
  };
}

/** DeepPool's networks as the estimator names them (its ViT is a 6-block custom model the estimator does not know). */
const DEEPPOOL_MEMORY: Readonly<Record<string, { model: string; size: number } | undefined>> = {
  vgg16: { model: 'vgg16', size: 224 },
  'wrn101-2': { model: 'wide_resnet101_2', size: 224 },
  'inception-v3': { model: 'inception_v3', size: 299 },
  resnet34: { model: 'resnet34', size: 224 },
};

const MISO_SOURCE = 'MISO per-slice iteration times on an A100-40GB (data/calibration/a100-40gb-iter-time-median.csv)';
const DEEPPOOL_SOURCE = 'DeepPool per-layer A100 profile (data/calibration/';

function misoWorkloads(): Workload[] {
  return MISO_MODELS.flatMap((model) => {
    const cal = calibratedModel(`miso/${model}`);
    const batches = [...new Set(MISO_ROWS.filter((r) => r.model === model).map((r) => r.batch))].sort((a, b) => a - b);
    const data = misoDataset(model);
    return batches.map((batch) => ({
      name: `miso-${model}-b${batch}`,
      aliases: [],
      description: `${cal.description}, batch ${batch}`,
      batchSize: batch,
      datasetSize: data.size,
      curve: cal.curve,
      memoryGiB: misoMemoryGiB(model, batch),
      memorySource: "bound from MISO's runs (TensorFlow/Keras): the smallest A100-40GB instance it ran on at this batch",
      source: `${MISO_SOURCE}; curve fitted over all batches and profiles of '${model}'; memory: smallest instance it ran on; epoch: ${data.note}`,
      calibratedFrom: cal.id,
    }));
  });
}

function deepPoolWorkloads(): Workload[] {
  return DEEPPOOL_FILES.flatMap(({ model, file }) => {
    const cal = calibratedModel(`deeppool/${model}`);
    const net = DEEPPOOL_MEMORY[model];
    return [128, 32].map((batch) => {
      // DeepPool profiled under autocast; SGD with momentum is torchvision's reference recipe for these networks.
      const memory = net
        ? estimated({ model: net.model, batch, inputSize: net.size, optimizer: 'sgd', precision: 'amp' }, `torchvision ${net.model} at ${net.size}x${net.size}`)
        : { memoryGiB: null as number | null, memorySource: "unknown: a custom ViT the estimator does not model (fits 'unknown': placed only where the user allows)" };
      return {
        name: `deeppool-${model}-b${batch}`,
        aliases: [],
        description: `${cal.description}, batch ${batch}`,
        batchSize: batch,
        datasetSize: DATASET_SIZES.imagenet,
        curve: cal.curve,
        ...memory,
        source:
          `${DEEPPOOL_SOURCE}${file}); curve fitted to the sum of per-layer times at each profiled batch on a whole A100 (MIG off). ` +
          `Memory: ${memory.memorySource}. Epoch: ImageNet-1k training set (ImageNet-shaped input).`,
        calibratedFrom: cal.id,
      };
    });
  });
}

/**
 * The study's workloads, as documented PROXIES: no measurement of these models exists here, so each
 * is a calibrated curve evaluated at an equivalent batch (work per sample scaled, `scaleWork`).
 */
function studyWorkloads(): Workload[] {
  const resnet = calibratedModel('miso/resnet');
  const wrn = calibratedModel('deeppool/wrn101-2');
  const bert = calibratedModel('miso/bert');
  // 64x64 images through the CIFAR-style ResNet-50 (3x3 stride-1 stem, as downsampled-ImageNet
  // training keeps it) have 4x the pixels of 32x32 ones: 4x the conv work per sample.
  const mediumFactor = (64 / 32) ** 2;
  // ResNet-152 and Wide-ResNet-101-2 forward FLOPs at 224x224: 11.5 and 22.8 GFLOPs (He et al. 2016; torchvision).
  const largeFactor = 11.5 / 22.8;
  // Memory: fp32 with SGD and momentum (torchvision's reference recipe) for the CNNs. A CIFAR-style
  // ResNet (3x3 stride-1 stem, no max pool) on SxS images has the feature maps of torchvision's
  // ImageNet-style ResNet (stride-4 stem) on 4Sx4S from the first stage on; the latter's larger stem
  // makes the estimate an upper bound.
  const smallMem = estimated({ model: 'resnet26', batch: 128, inputSize: 128, optimizer: 'sgd', precision: 'fp32' }, 'ResNet-26 at 32x32 with a CIFAR stem (as torchvision resnet26 at 128x128)');
  const mediumMem = estimated({ model: 'resnet50', batch: 128, inputSize: 256, optimizer: 'sgd', precision: 'fp32' }, 'ResNet-50 at 64x64 with a CIFAR stem (as torchvision resnet50 at 256x256)');
  const largeMem = estimated({ model: 'resnet152', batch: 128, inputSize: 224, optimizer: 'sgd', precision: 'fp32' }, 'torchvision resnet152 at 224x224');
  // Hugging Face's run_qa.py fine-tunes in fp32 with AdamW at 384 tokens unless told otherwise.
  const bertMem = estimated({ model: 'bert-base', batch: 8, inputSize: 384, optimizer: 'adamw', precision: 'fp32' }, 'BERT-base, SQuAD span head, 384 tokens, eager attention');
  return [
    {
      name: 'resnet26-cifar10',
      aliases: ['small'],
      description: 'ResNet-26 on CIFAR-10, batch 128 (proxy)',
      batchSize: 128,
      datasetSize: DATASET_SIZES.cifar10,
      curve: scaleTime(resnet.curve, 0.5),
      ...smallMem,
      source:
        'PROXY: MISO ResNet-50/CIFAR-10 curve at half the time: ResNet-26 has half the bottleneck blocks of ResNet-50, so half the kernels ' +
        '(latency) and half the work per sample; its packing gains are those measured for ResNet-50/CIFAR-10 at batch 128. ' +
        `Memory: ${smallMem.memorySource}.`,
      calibratedFrom: resnet.id,
    },
    {
      name: 'resnet50-imagenet64',
      aliases: ['medium'],
      description: 'ResNet-50 on ImageNet 64x64, batch 128 (proxy)',
      batchSize: 128,
      datasetSize: DATASET_SIZES.imagenet64,
      curve: scaleWork(resnet.curve, mediumFactor),
      ...mediumMem,
      source:
        `PROXY: MISO ResNet-50/CIFAR-10 curve at equivalent batch 128 x (64/32)^2 = ${128 * mediumFactor} (measured: batch 512): the same network ` +
        `on 64x64 images does 4x the conv work per sample (work grows with batch x H x W). Memory: ${mediumMem.memorySource}.`,
      calibratedFrom: resnet.id,
    },
    {
      name: 'resnet152-imagenet',
      aliases: ['large'],
      description: 'ResNet-152 on ImageNet (224x224), batch 128 (proxy)',
      batchSize: 128,
      datasetSize: DATASET_SIZES.imagenet,
      curve: scaleWork(wrn.curve, largeFactor),
      ...largeMem,
      source:
        `PROXY: DeepPool Wide-ResNet-101-2 (224x224) curve at equivalent batch 128 x 11.5/22.8 = ${(128 * largeFactor).toFixed(1)} ` +
        `(ResNet-152/WRN-101-2 FLOPs), extrapolated beyond the profiled batches 1..32. Memory: ${largeMem.memorySource}.`,
      calibratedFrom: wrn.id,
    },
    {
      name: 'bert-base-squad',
      aliases: ['bert'],
      description: 'BERT-base fine-tuning on SQuAD v1.1, batch 8 (proxy)',
      batchSize: 8,
      datasetSize: DATASET_SIZES.squad11,
      curve: bert.curve,
      ...bertMem,
      source:
        "PROXY: MISO's BERT (Keras/HF bert-base-cased, sequence classification on IMDB padded to 512 tokens, Adam) at batch 8 unchanged; " +
        'SQuAD fine-tuning at 384 tokens does about 25% less work per sample, so this errs slow. ' +
        `Memory: ${bertMem.memorySource} (MISO's TensorFlow runs needed 3g.20gb: 3-4x what PyTorch keeps).`,
      calibratedFrom: bert.id,
    },
  ];
}

let builtIns: readonly Workload[] | null = null;

/** Every built-in workload: the study's four, then the MISO and DeepPool models at their batches. */
export function builtInWorkloads(): readonly Workload[] {
  builtIns ??= [...studyWorkloads(), ...misoWorkloads(), ...deepPoolWorkloads()];
  return builtIns;
}

const normalize = (s: string): string => s.trim().toLowerCase().replace(/[/_\s]+/g, '-');

/**
 * The workload named `name` (or one of its aliases), case-insensitive; `miso/resnet-b128` and
 * `miso-resnet-b128` are the same. `extra` workloads (a user's, from YAML) are searched first.
 */
export function resolveWorkload(name: string, extra: readonly Workload[] = []): Workload {
  const wanted = normalize(name);
  const all = [...extra, ...builtInWorkloads()];
  const found = all.find((w) => normalize(w.name) === wanted || w.aliases.some((a) => normalize(a) === wanted));
  if (found) return found;
  const names = all.map((w) => (w.aliases.length > 0 ? `${w.name} (${w.aliases.join(', ')})` : w.name));
  throw badInput(`unknown workload '${name}': use one of ${names.join(', ')}, or a YAML file written by 'migpool bench --out'`);
}
