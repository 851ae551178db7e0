/**
 * A dry run of a network's forward pass that counts what PyTorch's autograd keeps for backward.
 *
 * Each operation below records the tensors its backward formula saves, as PyTorch's
 * tools/autograd/derivatives.yaml declares them (e.g. a convolution saves its input, batch norm its
 * input and per-channel mean and inverse std, an in-place ReLU its output, max pooling its input and
 * int64 indices, a residual add nothing). Tensors are identified by their storage: a view shares
 * its base's storage, so a buffer saved by two operations (an in-place ReLU's output, then the next
 * convolution's input) is counted once. Parameters are counted apart (they are weights, not
 * activations). The counts are checked against PyTorch itself by tools/memory-truth.py
 * (test/memory-estimator.test.ts).
 */

/** Element size in bytes of the dtypes a training step keeps: fp32, fp16/bf16, int64 indices, bool. */
export type ElementBytes = 1 | 2 | 4 | 8;

/** A tensor of the dry run: its shape, element size and the storage it lives in. */
export interface Tensor {
  readonly shape: readonly number[];
  readonly bytes: ElementBytes;
  readonly storage: number;
}

/** How the dry run computes: precision of the matrix products and the device's dropout kernel. */
export interface TraceOptions {
  /**
   * Element size of convolution and matrix-product outputs: 4 in fp32; 2 under autocast (fp16 or
   * bf16), where the CUDA autocast op lists run conv/linear/matmul in 16 bits and softmax,
   * layer_norm and the losses in fp32 (PyTorch AMP documentation, "Autocast Op Reference").
   */
  readonly computeBytes: 2 | 4;
  /**
   * Bytes per element of the mask a dropout keeps: 1 on CUDA (native_dropout saves a bool mask);
   * on the CPU PyTorch 1.13 multiplies by a noise tensor of the input's dtype and saves that (4 in fp32).
   */
  readonly dropoutMaskBytes: number;
}

export const numel = (shape: readonly number[]): number => shape.reduce((a, b) => a * b, 1);

/** The dry run: create tensors, apply operations, read `params` and `savedBytes`. */
export class Trace {
  params = 0;
  /** Parameters of convolutions and linear layers (autocast keeps a 16-bit copy of each for backward). */
  matmulParams = 0;
  private next = 1;
  private readonly saved = new Map<number, number>();

  constructor(readonly options: TraceOptions) {}

  /** A fresh tensor in its own storage. */
  tensor(shape: readonly number[], bytes: ElementBytes = 4): Tensor {
    return { shape, bytes, storage: this.next++ };
  }

  /** A view of `t` (reshape of a contiguous tensor, transpose, slice): same storage. */
  view(t: Tensor, shape: readonly number[]): Tensor {
    return { shape, bytes: t.bytes, storage: t.storage };
  }

  /** Autograd keeps `t` for backward (once per storage). */
  save(t: Tensor): void {
    const bytes = numel(t.shape) * t.bytes;
    this.saved.set(t.storage, Math.max(this.saved.get(t.storage) ?? 0, bytes));
  }

  /** A small tensor kept for backward that is no operand (per-channel statistics, masks, indices). */
  saveNew(shape: readonly number[], bytes: number): void {
    this.saved.set(this.next++, numel(shape) * bytes);
  }

  /** Bytes of every tensor kept for backward. */
  get savedBytes(): number {
    let sum = 0;
    for (const b of this.saved.values()) sum += b;
    return sum;
  }

  param(count: number, matmul = false): void {
    this.params += count;
    if (matmul) this.matmulParams += count;
  }

  /** The input of a conv/linear/matmul as autocast hands it over: a 16-bit copy when it was fp32. */
  cast(x: Tensor): Tensor {
    return this.options.computeBytes === 2 && x.bytes === 4 ? this.tensor(x.shape, 2) : x;
  }

  /** conv2d (NCHW): saves its input; `k`, `stride`, `pad` as [h, w]. */
  conv(x: Tensor, out: number, k: readonly [number, number], o: { stride?: number; pad?: readonly [number, number]; groups?: number; bias?: boolean } = {}): Tensor {
    const [n, c, h, w] = x.shape as [number, number, number, number];
    const s = o.stride ?? 1;
    const [ph, pw] = o.pad ?? [0, 0];
    const groups = o.groups ?? 1;
    this.param((out * c * k[0] * k[1]) / groups + (o.bias ? out : 0), true);
    this.save(this.cast(x));
    const oh = Math.floor((h + 2 * ph - k[0]) / s) + 1;
    const ow = Math.floor((w + 2 * pw - k[1]) / s) + 1;
    return this.tensor([n, out, oh, ow], this.options.computeBytes);
  }

  /** batch_norm in training: saves its input and the per-channel mean and inverse std (fp32). */
  batchNorm(x: Tensor): Tensor {
    const c = x.shape[1] ?? 0;
    this.param(2 * c);
    this.save(x);
    this.saveNew([c], 4);
    this.saveNew([c], 4);
    return this.tensor(x.shape, x.bytes);
  }

  /** relu_/hardtanh_ (ReLU6) in place: saves its result, the input's own storage. */
  reluInPlace(x: Tensor): Tensor {
    this.save(x);
    return x;
  }

  /** hardtanh (nn.ReLU6 out of place, as torchvision's MobileNetV2 builds it): saves its input. */
  relu6(x: Tensor): Tensor {
    this.save(x);
    return this.tensor(x.shape, x.bytes);
  }

  /** max_pool2d_with_indices: saves its input and the int64 index of each output element. */
  maxPool(x: Tensor, k: number, stride: number, pad = 0, ceil = false): Tensor {
    const [n, c, h, w] = x.shape as [number, number, number, number];
    const size = (d: number) => (ceil ? Math.ceil : Math.floor)((d + 2 * pad - k) / stride) + 1;
    this.save(x);
    const out = [n, c, size(h), size(w)];
    this.saveNew(out, 8);
    return this.tensor(out, x.bytes);
  }

  /** avg_pool2d: saves its input. */
  avgPool(x: Tensor, k: number, stride: number, pad = 0): Tensor {
    const [n, c, h, w] = x.shape as [number, number, number, number];
    this.save(x);
    return this.tensor([n, c, Math.floor((h + 2 * pad - k) / stride) + 1, Math.floor((w + 2 * pad - k) / stride) + 1], x.bytes);
  }

  /** adaptive_avg_pool2d (to any size, 1x1 included): saves its input. */
  adaptiveAvgPool(x: Tensor, size: number): Tensor {
    const [n, c] = x.shape as [number, number];
    this.save(x);
    return this.tensor([n, c, size, size], x.bytes);
  }

  /** Linear on the last dimension of a contiguous input: saves the input (a view of it). */
  linear(x: Tensor, out: number, bias = true): Tensor {
    const inF = x.shape.at(-1) ?? 0;
    this.param(inF * out + (bias ? out : 0), true);
    this.save(this.cast(x));
    return this.tensor([...x.shape.slice(0, -1), out], this.options.computeBytes);
  }

  /** dropout in training with p > 0: saves its mask; p = 0 is the identity. */
  dropout(x: Tensor, p: number): Tensor {
    if (p === 0) return x;
    this.saveNew(x.shape, this.options.dropoutMaskBytes);
    return this.tensor(x.shape, x.bytes);
  }

  /** An elementwise add (residual, embeddings): saves nothing; the wider dtype wins. */
  add(a: Tensor, b: Tensor): Tensor {
    return this.tensor(a.shape, Math.max(a.bytes, b.bytes) as ElementBytes);
  }

  /** torch.cat along `dim`: saves nothing. */
  cat(xs: readonly Tensor[], dim: number): Tensor {
    const first = xs[0];
    if (!first) throw new Error('cat of nothing');
    const shape = [...first.shape];
    shape[dim] = xs.reduce((s, t) => s + (t.shape[dim] ?? 0), 0);
    return this.tensor(shape, first.bytes);
  }

  /** layer_norm over the last dimension: saves its input and per-row mean and rstd (fp32); fp32 out under autocast. */
  layerNorm(x: Tensor): Tensor {
    const h = x.shape.at(-1) ?? 0;
    this.param(2 * h);
    this.save(x);
    const rows = x.shape.slice(0, -1);
    this.saveNew(rows, 4);
    this.saveNew(rows, 4);
    return this.tensor(x.shape, 4);
  }

  /** gelu: saves its input. */
  gelu(x: Tensor): Tensor {
    this.save(x);
    return this.tensor(x.shape, x.bytes);
  }

  /** tanh: saves its result. */
  tanh(x: Tensor): Tensor {
    const out = this.tensor(x.shape, x.bytes);
    this.save(out);
    return out;
  }

  /** softmax: saves its result (fp32 under autocast). */
  softmax(x: Tensor): Tensor {
    const out = this.tensor(x.shape, 4);
    this.save(out);
    return out;
  }

  /** A copy (contiguous() of a permuted view, or the reshape a batched matmul makes of one). */
  copy(x: Tensor, shape: readonly number[] = x.shape): Tensor {
    return this.tensor(shape, x.bytes);
  }

  /** bmm of two operands that both need gradients: saves both (as autocast hands them over). */
  bmm(a: Tensor, b: Tensor, out: readonly number[]): Tensor {
    this.save(this.cast(a));
    this.save(this.cast(b));
    return this.tensor(out, this.options.computeBytes);
  }

  /** An embedding lookup: saves the int64 indices. */
  embedding(ids: Tensor, vocab: number, dim: number): Tensor {
    this.param(vocab * dim);
    this.save(ids);
    return this.tensor([...ids.shape, dim], 4);
  }

  /** cross_entropy over the last dimension of `logits` (rows x classes): log_softmax output (fp32) and the int64 targets. */
  crossEntropy(logits: Tensor, target: Tensor): void {
    this.saveNew(logits.shape, 4);
    this.save(target);
  }
}
