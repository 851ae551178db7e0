import { badInput } from '../../errors.js';
import { bert, gpt2, vit, type TransformerShape } from './transformer.js';
import { inceptionV3, mobilenetV2, resnet, vgg16 } from './cnn.js';
import { Trace, type TraceOptions } from './trace.js';

export type Optimizer = 'sgd' | 'adam' | 'adamw';
export type Precision = 'fp32' | 'amp' | 'bf16';

/** A model the estimator knows: how to run its forward pass, and its input. */
interface ModelEntry {
  readonly input: 'image' | 'tokens';
  /** Default image size or sequence length. */
  readonly defaultSize: number;
  readonly description: string;
  readonly run: (t: Trace, batch: number, size: number) => void;
}

const GIB = 1024 ** 3;
const MIB = 1024 ** 2;

function image(t: Trace, batch: number, size: number) {
  return t.tensor([batch, 3, size, size]);
}

function cnn(description: string, defaultSize: number, net: (t: Trace, x: ReturnType<typeof image>) => ReturnType<typeof image>): ModelEntry {
  return {
    input: 'image',
    defaultSize,
    description,
    run: (t, batch, size) => t.crossEntropy(net(t, image(t, batch, size)), t.tensor([batch], 8)),
  };
}

const BERT_BASE: TransformerShape = { layers: 12, hidden: 768, heads: 12, ffn: 3072, dropout: 0.1 };
const BERT_LARGE: TransformerShape = { layers: 24, hidden: 1024, heads: 16, ffn: 4096, dropout: 0.1 };
const GPT2_SMALL: TransformerShape = { layers: 12, hidden: 768, heads: 12, ffn: 3072, dropout: 0.1 };
const VIT_B: TransformerShape = { layers: 12, hidden: 768, heads: 12, ffn: 3072, dropout: 0 };

/** The networks, by the names torchvision (and Hugging Face, for the language models) give them. */
export const MEMORY_MODELS: Readonly<Record<string, ModelEntry>> = {
  resnet18: cnn('ResNet-18 (torchvision)', 224, (t, x) => resnet(t, x, [2, 2, 2, 2], false)),
  resnet26: cnn('ResNet-26 (torchvision ResNet, Bottleneck blocks [2, 2, 2, 2])', 224, (t, x) => resnet(t, x, [2, 2, 2, 2], true)),
  resnet34: cnn('ResNet-34 (torchvision)', 224, (t, x) => resnet(t, x, [3, 4, 6, 3], false)),
  resnet50: cnn('ResNet-50 (torchvision)', 224, (t, x) => resnet(t, x, [3, 4, 6, 3], true)),
  resnet101: cnn('ResNet-101 (torchvision)', 224, (t, x) => resnet(t, x, [3, 4, 23, 3], true)),
  resnet152: cnn('ResNet-152 (torchvision)', 224, (t, x) => resnet(t, x, [3, 8, 36, 3], true)),
  wide_resnet101_2: cnn('Wide-ResNet-101-2 (torchvision)', 224, (t, x) => resnet(t, x, [3, 4, 23, 3], true, 2)),
  vgg16: cnn('VGG-16 (torchvision, no batch norm)', 224, vgg16),
  inception_v3: cnn('Inception-v3 with its auxiliary classifier (torchvision)', 299, inceptionV3),
  mobilenet_v2: cnn('MobileNetV2 (torchvision)', 224, mobilenetV2),
  vit_b_16: {
    input: 'image',
    defaultSize: 224,
    description: 'ViT-B/16 (torchvision)',
    run: (t, batch, size) => t.crossEntropy(vit(t, image(t, batch, size), 16, VIT_B), t.tensor([batch], 8)),
  },
  'bert-base': { input: 'tokens', defaultSize: 384, description: 'BERT-base with a SQuAD span head', run: (t, b, s) => bert(t, t.tensor([b, s], 8), BERT_BASE) },
  'bert-large': { input: 'tokens', defaultSize: 384, description: 'BERT-large with a SQuAD span head', run: (t, b, s) => bert(t, t.tensor([b, s], 8), BERT_LARGE) },
  gpt2: { input: 'tokens', defaultSize: 1024, description: 'GPT-2 small (124M) language modelling', run: (t, b, s) => gpt2(t, t.tensor([b, s], 8), GPT2_SMALL) },
};

/** Optimizer state per parameter, in fp32 values: SGD with momentum keeps one buffer, Adam and AdamW two (exp_avg, exp_avg_sq) (torch.optim). */
const OPTIMIZER_STATES: Readonly<Record<Optimizer, number>> = { sgd: 1, adam: 2, adamw: 2 };

/**
 * CUDA context and PyTorch's kernels, in the instance's memory before any tensor: about 400 MB with
 * CUDA >= 11.7 lazy module loading, the PyTorch default since 1.13 (PyTorch maintainers in
 * pytorch/pytorch#109888; 287 MB for the context alone measured in pytorch/pytorch#86509).
 */
export const CONTEXT_BYTES = 400 * 1000 ** 2;

/**
 * cuBLAS workspace PyTorch allocates per handle and stream: CUBLAS_WORKSPACE_CONFIG's default
 * ":4096:2:16:8" is 2 x 4 MiB + 8 x 16 KiB (PyTorch docs, "Reproducibility" / torch.backends);
 * plus a cuDNN convolution workspace, which PyTorch caps at what is free; 64 MiB is a stated
 * allowance, not a measurement.
 */
export const LIBRARY_WORKSPACE_BYTES = 2 * 4 * MIB + 8 * 16 * 1024 + 64 * MIB;

/**
 * Share added for PyTorch's caching allocator: it rounds each block up (to 512 B, and large
 * blocks to 2 MiB segments) and cannot always reuse a freed block for a larger one. 10% is a
 * stated allowance (the CUDA caching allocator notes in PyTorch's "CUDA semantics" describe the
 * rounding; the share is ours).
 */
export const ALLOCATOR_OVERHEAD = 0.1;

/** What to estimate. */
export interface MemoryQuery {
  readonly model: string;
  readonly batch: number;
  /** Image side in pixels (image models) or sequence length in tokens (language models); the model's default when absent. */
  readonly inputSize?: number;
  readonly optimizer?: Optimizer;
  readonly precision?: Precision;
}

/** Training memory of one job, bytes, by part. */
export interface MemoryEstimate {
  readonly model: string;
  readonly batch: number;
  readonly inputSize: number;
  readonly optimizer: Optimizer;
  readonly precision: Precision;
  readonly params: number;
  readonly weightsBytes: number;
  readonly gradientBytes: number;
  readonly optimizerBytes: number;
  /** Tensors autograd keeps for backward (with autocast's 16-bit weight copies under amp/bf16). */
  readonly activationBytes: number;
  readonly contextBytes: number;
  readonly workspaceBytes: number;
  /** Everything, with the allocator's overhead on the tensors, GiB. */
  readonly totalGiB: number;
  /** How each part was reckoned. */
  readonly notes: readonly string[];
}

/** Parameters and bytes saved for backward of one forward pass: what tools/memory-truth.py measures. */
export function traceModel(model: string, batch: number, inputSize: number, options: TraceOptions): { params: number; savedBytes: number; matmulParams: number } {
  const entry = modelEntry(model);
  const t = new Trace(options);
  entry.run(t, batch, inputSize);
  return { params: t.params, savedBytes: t.savedBytes, matmulParams: t.matmulParams };
}

function modelEntry(model: string): ModelEntry {
  const entry = MEMORY_MODELS[model.toLowerCase()];
  if (!entry) throw badInput(`unknown model '${model}': use one of ${Object.keys(MEMORY_MODELS).join(', ')}`);
  return entry;
}

/**
 * Training memory of one job from first principles: weights, gradients and optimizer state per
 * parameter (fp32 master copies in every precision: autocast keeps fp32 parameters), the tensors
 * autograd keeps for backward at this batch and input size, the CUDA context and library
 * workspaces, and the caching allocator's overhead. Conservative: gradients are counted alongside
 * all activations (as with zero_grad(set_to_none=False)).
 */
export function estimateTrainingMemory(q: MemoryQuery): MemoryEstimate {
  const entry = modelEntry(q.model);
  if (!Number.isInteger(q.batch) || q.batch < 1) throw badInput(`--batch must be a positive whole number, got ${q.batch}`);
  const inputSize = q.inputSize ?? entry.defaultSize;
  if (!Number.isInteger(inputSize) || inputSize < 1) throw badInput(`the ${entry.input === 'image' ? 'image size' : 'sequence length'} must be a positive whole number, got ${inputSize}`);
  if (entry.input === 'tokens' && q.model !== 'gpt2' && inputSize > 512) throw badInput(`${q.model} takes at most 512 tokens, got --seq-len ${inputSize}`);
  if (q.model === 'gpt2' && inputSize > 1024) throw badInput(`gpt2 takes at most 1024 tokens, got --seq-len ${inputSize}`);
  const optimizer = q.optimizer ?? 'adamw';
  const precision = q.precision ?? 'fp32';
  const half = precision !== 'fp32';
  const notes: string[] = [];
  let traced: ReturnType<typeof traceModel>;
  try {
    traced = traceModel(q.model, q.batch, inputSize, { computeBytes: half ? 2 : 4, dropoutMaskBytes: 1 });
  } catch (e) {
    throw badInput(`${q.model} cannot take input size ${inputSize}: ${(e as Error).message}`);
  }
  const params = traced.params;
  const weightsBytes = params * 4;
  const gradientBytes = params * 4;
  const optimizerBytes = params * 4 * OPTIMIZER_STATES[optimizer];
  let activationBytes = traced.savedBytes;
  if (half) {
    activationBytes += traced.matmulParams * 2;
    notes.push('autocast: 16-bit conv/linear outputs and a 16-bit copy of their weights kept for backward; fp32 weights, gradients and optimizer state');
  }
  const workspaceBytes = LIBRARY_WORKSPACE_BYTES;
  const tensors = weightsBytes + gradientBytes + optimizerBytes + activationBytes;
  const total = tensors * (1 + ALLOCATOR_OVERHEAD) + CONTEXT_BYTES + workspaceBytes;
  notes.push(`${optimizer}: ${OPTIMIZER_STATES[optimizer]} fp32 state value(s) per parameter`);
  if (entry.input === 'tokens' || q.model === 'vit_b_16') notes.push('eager attention (score matrices kept); a fused attention kernel keeps less');
  return {
    model: q.model,
    batch: q.batch,
    inputSize,
    optimizer,
    precision,
    params,
    weightsBytes,
    gradientBytes,
    optimizerBytes,
    activationBytes,
    contextBytes: CONTEXT_BYTES,
    workspaceBytes,
    totalGiB: total / GIB,
    notes,
  };
}

/** The input kind and default size of a model (image side or sequence length). */
export function memoryModelInput(model: string): { input: 'image' | 'tokens'; defaultSize: number; description: string } {
  const e = modelEntry(model);
  return { input: e.input, defaultSize: e.defaultSize, description: e.description };
}
