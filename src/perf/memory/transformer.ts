/**
 * Transformers through the dry-run Trace, with eager attention (the score matrix is materialised,
 * as PyTorch 1.13's nn.MultiheadAttention and Hugging Face's "eager" attention do). A fused
 * attention kernel (FlashAttention, PyTorch 2's scaled_dot_product_attention on a GPU) keeps no
 * score matrix, so for long sequences these counts are an upper bound.
 */
import type { Tensor, Trace } from './trace.js';

/** Shapes of a transformer encoder/decoder stack. */
export interface TransformerShape {
  readonly layers: number;
  readonly hidden: number;
  readonly heads: number;
  readonly ffn: number;
  readonly dropout: number;
}

/**
 * Eager attention over `x` [b, s, h] from separate q/k/v projections of a contiguous input, the
 * layout of BERT and GPT-2: torch.matmul of permuted heads copies q and k^T (and v) into the
 * batched layout it multiplies; the scores' softmax, its dropout mask and the dropped-out
 * probabilities are kept; the heads are copied back to [b, s, h] for the output projection.
 */
function attentionHeads(t: Trace, q: Tensor, k: Tensor, v: Tensor, shape: TransformerShape, causal: boolean): Tensor {
  const [b, s, h] = q.shape as [number, number, number];
  const heads = shape.heads;
  const scores = t.bmm(t.copy(q), t.copy(k), [b, heads, s, s]);
  const scaled = t.copy(scores);
  if (causal) t.saveNew([s, s], 1); // torch.where keeps its bool condition (the causal mask)
  const probs = t.dropout(t.softmax(scaled), shape.dropout);
  const ctx = t.bmm(probs, t.copy(v), [b, heads, s, h / heads]);
  return t.copy(ctx, [b, s, h]);
}

/** A BERT encoder layer (post-LayerNorm), Hugging Face's BertLayer. */
function bertLayer(t: Trace, x: Tensor, shape: TransformerShape): Tensor {
  const h = shape.hidden;
  const q = t.linear(x, h);
  const k = t.linear(x, h);
  const v = t.linear(x, h);
  const ctx = attentionHeads(t, q, k, v, shape, false);
  const a = t.layerNorm(t.add(t.dropout(t.linear(ctx, h), shape.dropout), x));
  const f = t.linear(t.gelu(t.linear(a, shape.ffn)), h);
  return t.layerNorm(t.add(t.dropout(f, shape.dropout), a));
}

/** BERT (Devlin et al. 2019) with a SQuAD span head: vocabulary 30522, 512 positions, 2 segment types. */
export function bert(t: Trace, ids: Tensor, shape: TransformerShape): void {
  const [b, s] = ids.shape as [number, number];
  const h = shape.hidden;
  const words = t.embedding(ids, 30522, h);
  const pos = t.embedding(t.tensor([1, s], 8), 512, h);
  const seg = t.embedding(t.tensor([b, s], 8), 2, h);
  let x = t.dropout(t.layerNorm(t.add(t.add(words, pos), seg)), shape.dropout);
  for (let i = 0; i < shape.layers; i++) x = bertLayer(t, x, shape);
  t.tanh(t.linear(t.view(x, [b, h]), h)); // the pooler, run by BertModel though the span head ignores it
  const logits = t.linear(x, 2);
  const target = t.tensor([b], 8);
  t.crossEntropy(t.view(logits, [b, s]), target); // start position (log_softmax makes a new tensor)
  t.crossEntropy(t.view(logits, [b, s]), target); // end position
}

/** GPT-2 (Radford et al. 2019): pre-LayerNorm blocks, causal attention, LM head tied to the token embedding. */
export function gpt2(t: Trace, ids: Tensor, shape: TransformerShape, vocab = 50257, positions = 1024): void {
  const [b, s] = ids.shape as [number, number];
  const h = shape.hidden;
  const tok = t.embedding(ids, vocab, h);
  const pos = t.embedding(t.tensor([1, s], 8), positions, h);
  let x = t.dropout(t.add(tok, pos), shape.dropout);
  for (let i = 0; i < shape.layers; i++) {
    const qkv = t.linear(t.layerNorm(x), 3 * h);
    const q = t.view(qkv, [b, s, h]);
    const ctx = attentionHeads(t, q, q, q, shape, true);
    x = t.add(x, t.dropout(t.linear(ctx, h), shape.dropout));
    const f = t.linear(t.gelu(t.linear(t.layerNorm(x), shape.ffn)), h);
    x = t.add(x, t.dropout(f, shape.dropout));
  }
  const final = t.layerNorm(x);
  t.save(t.cast(final)); // the LM head, tied to the token embedding: no parameters of its own
  const logits = t.tensor([b, s, vocab], t.options.computeBytes);
  t.crossEntropy(logits, t.tensor([b * s], 8));
}

/**
 * ViT (Dosovitskiy et al. 2021) as torchvision's VisionTransformer: patch convolution, class token,
 * learned positions, pre-LayerNorm blocks with nn.MultiheadAttention (PyTorch 1.13 in training:
 * the input is transposed to [s, b, h], projected by one packed q/k/v matmul whose input is copied
 * to a contiguous layout, k and v copied out per head, q scaled into a new tensor, scores' softmax
 * kept, the heads copied back for the output projection).
 */
export function vit(t: Trace, image: Tensor, patch: number, shape: TransformerShape): Tensor {
  const n = image.shape[0] ?? 0;
  const h = shape.hidden;
  const grid = t.conv(image, h, [patch, patch], { stride: patch, bias: true });
  const tokens = (grid.shape[2] ?? 0) * (grid.shape[3] ?? 0);
  const s = tokens + 1;
  t.param(h); // class token
  t.param(s * h); // position embedding
  let x = t.cat([t.tensor([n, 1, h]), t.view(grid, [n, tokens, h])], 1);
  x = t.dropout(t.add(x, x), shape.dropout);
  for (let i = 0; i < shape.layers; i++) {
    const y = t.layerNorm(x);
    t.param(3 * h * h + 3 * h + h * h + h, true);
    t.save(t.copy(y)); // linear on the [s, b, h] transposed view: matmul folds a contiguous copy
    t.saveNew([n, s, h], t.options.computeBytes); // k and v, each copied out of the projection
    t.saveNew([n, s, h], t.options.computeBytes);
    t.saveNew([], 8); // a 0-dim double autograd keeps for the scaling of q
    t.saveNew([n, s, h], t.options.computeBytes); // q divided by sqrt(head size): a new tensor
    const probs = t.dropout(t.softmax(t.tensor([n, shape.heads, s, s], t.options.computeBytes)), shape.dropout);
    t.save(probs);
    const ctx = t.copy(t.tensor([n, s, h], t.options.computeBytes));
    t.save(ctx); // out_proj on the heads copied back
    x = t.add(t.dropout(t.tensor([n, s, h], t.options.computeBytes), shape.dropout), x);
    const f = t.linear(t.gelu(t.linear(t.layerNorm(x), shape.ffn)), h);
    x = t.add(x, t.dropout(f, shape.dropout));
  }
  const final = t.layerNorm(x);
  return t.linear(t.view(final, [n, h]), 1000);
}
