import { badInput } from '../errors.js';

/**
 * Reader of DeepPool's per-layer GPU profiles (`*LayerGpuProfileA100*.txt`, DeepPool artifact
 * github.com/DeepPoolML/DeepPool @ 7f823f26, MLSys 2022): blocks of rows
 * `kind{json config}[batch][input shape] avg [p50 p90 p99]`, each block one per-GPU batch size and
 * closed by `SUM(avg) total`. Times are forward+backward ms on a whole A100 under autocast.
 */

/** One layer as profiled: the same in every block. */
export interface ProfiledLayer {
  /** `conv2d`, `maxPool2d`, `linear`, `concat`, `ResnetBottleneck`, `TransBlockA`, ... */
  readonly kind: string;
  readonly config: Readonly<Record<string, unknown>>;
  /** Input shape per sample as printed (`[C,H,W]`, `[T,D]`, or a bare feature count). */
  readonly inputShape: readonly number[];
  /** Output shape per sample, derived from the kind, config and input shape (see outputShape). */
  readonly outputShape: readonly number[];
  /** Parameter count, derived from the config (see parameterCount). */
  readonly parameters: number;
  /** Average forward+backward ms per batch size, sorted by batch. */
  readonly times: readonly { readonly batch: number; readonly ms: number }[];
}

const ROW = /^\s*([A-Za-z]\w*)(\{.*\})\[(\d+)\](\[[^\]]*\]|\d+)\s+([0-9.eE+-]+)/;
const SUM = /^\s*SUM\(avg\)\s+([0-9.]+)/;

function num(v: unknown, what: string, where: string): number {
  if (typeof v !== 'number' || !Number.isFinite(v)) throw badInput(`${where}: ${what} must be a number, got ${JSON.stringify(v)}`);
  return v;
}

function pair(v: unknown, what: string, where: string): [number, number] {
  if (Array.isArray(v) && v.length === 2) return [num(v[0], what, where), num(v[1], what, where)];
  const n = num(v, what, where);
  return [n, n];
}

function dims(shape: readonly number[], n: number, kind: string, where: string): void {
  if (shape.length !== n) throw badInput(`${where}: ${kind} needs a ${n}-dimensional input, got [${shape.join(',')}]`);
}

/** Output size of a sliding window: floor((in + 2 pad - kernel) / stride) + 1 (dilation 1, no ceil mode). */
function window(size: number, kernel: number, stride: number, pad: number): number {
  return Math.floor((size + 2 * pad - kernel) / stride) + 1;
}

/**
 * A layer's output shape per sample, from its kind, config and input shape, as PyTorch computes it
 * for the modules DeepPool profiles. `concat` rows print the concatenated shape, which is also
 * the output. `ResnetBottleneck` is torchvision's bottleneck block (expansion 4, stride on the 3x3
 * convolution); `prep` is ViT's patch embedding plus a class token, `prepOut` takes the class token.
 *
 * @throws MigpoolError `BAD_INPUT` for a kind it does not know or a config it cannot read
 */
export function outputShape(kind: string, config: Readonly<Record<string, unknown>>, input: readonly number[], where: string): number[] {
  switch (kind) {
    case 'conv2d':
    case 'maxPool2d':
    case 'avgPool2d': {
      dims(input, 3, kind, where);
      const [c, h, w] = input as [number, number, number];
      const [kh, kw] = pair(config['kernel_size'], 'kernel_size', where);
      const [sh, sw] = pair(config['stride'] ?? config['kernel_size'], 'stride', where);
      const [ph, pw] = pair(config['padding'] ?? 0, 'padding', where);
      const out = kind === 'conv2d' ? num(config['out_channels'], 'out_channels', where) : c;
      return [out, window(h, kh, sh, ph), window(w, kw, sw, pw)];
    }
    case 'adAvgPool2d':
      dims(input, 3, kind, where);
      return [input[0] as number, num(config['output_height'], 'output_height', where), num(config['output_width'], 'output_width', where)];
    case 'flatten':
      return [input.reduce((a, b) => a * b, 1)];
    case 'linear':
      return [num(config['out_features'], 'out_features', where)];
    case 'concat':
    case 'ReLU2d':
    case 'TransBlockA':
    case 'TransBlockB':
      return [...input];
    case 'ResnetBottleneck': {
      dims(input, 3, kind, where);
      const planes = num(config['planes'], 'planes', where);
      const stride = num(config['stride'] ?? 1, 'stride', where);
      return [planes * 4, window(input[1] as number, 3, stride, 1), window(input[2] as number, 3, stride, 1)];
    }
    case 'prep': {
      const img = num(config['img_dim'], 'img_dim', where);
      const patch = num(config['patch_dim'], 'patch_dim', where);
      return [(img / patch) ** 2 + 1, num(config['dim'], 'dim', where)];
    }
    case 'prepOut':
      dims(input, 2, kind, where);
      return [input[1] as number];
    default:
      throw badInput(`${where}: unknown layer kind '${kind}' (known: conv2d, maxPool2d, avgPool2d, adAvgPool2d, flatten, linear, concat, ReLU2d, ResnetBottleneck, TransBlockA, TransBlockB, prep, prepOut); describe the model as a JSON profile instead`);
  }
}

/**
 * A layer's parameter count from its config:
 * - conv2d: in x out x kh x kw + out (a bias, or the per-channel affine of the batch norm that
 *   follows it in the networks profiled here: same order of size);
 * - linear: in x out (+ out with bias);
 * - ResnetBottleneck (torchvision Bottleneck, width = planes x base_width / 64 x groups): 1x1, 3x3
 *   (grouped) and 1x1 convolutions without bias, three batch norms (2 x channels each), and the
 *   downsample convolution plus batch norm when `downsampleParams` is given;
 * - TransBlockA (pre-norm multi-head self-attention): layer norm 2 x dim, QKV projection
 *   dim x 3 x heads x dim_head without bias, output projection heads x dim_head x dim + dim;
 * - TransBlockB (pre-norm MLP): layer norm 2 x dim, dim x hidden + hidden, hidden x dim + dim;
 * - prep (ViT patch embedding): patch_dim^2 x in_channels x dim + dim, class token dim, position
 *   embedding (patches + 1) x dim;
 * - pooling, flatten, concat, ReLU2d, prepOut: none.
 * The structures of the blocks are the standard ones their configs name (torchvision's
 * Bottleneck; a ViT encoder block): assumptions about DeepPool's model code, not read from it.
 */
export function parameterCount(kind: string, config: Readonly<Record<string, unknown>>, input: readonly number[], where: string): number {
  switch (kind) {
    case 'conv2d': {
      const [kh, kw] = pair(config['kernel_size'], 'kernel_size', where);
      const cin = num(config['in_channels'], 'in_channels', where);
      const cout = num(config['out_channels'], 'out_channels', where);
      return cin * cout * kh * kw + cout;
    }
    case 'linear': {
      const fin = num(config['in_features'], 'in_features', where);
      const fout = num(config['out_features'], 'out_features', where);
      return fin * fout + (config['bias'] === false ? 0 : fout);
    }
    case 'ResnetBottleneck': {
      const inplanes = num(config['inplanes'], 'inplanes', where);
      const planes = num(config['planes'], 'planes', where);
      const groups = num(config['groups'] ?? 1, 'groups', where);
      const width = Math.floor(planes * (num(config['base_width'] ?? 64, 'base_width', where) / 64)) * groups;
      const out = planes * 4;
      let p = inplanes * width + 2 * width + (width * width * 9) / groups + 2 * width + width * out + 2 * out;
      const down = config['downsampleParams'];
      if (down !== undefined) {
        if (!Array.isArray(down) || !Array.isArray(down[0])) throw badInput(`${where}: downsampleParams must be [[in,out,stride],channels], got ${JSON.stringify(down)}`);
        const [din, dout] = [num(down[0][0], 'downsampleParams', where), num(down[0][1], 'downsampleParams', where)];
        p += din * dout + 2 * dout;
      }
      return p;
    }
    case 'TransBlockA': {
      const dim = num(config['dim'], 'dim', where);
      const inner = num(config['heads'], 'heads', where) * num(config['dim_head'], 'dim_head', where);
      return 2 * dim + dim * 3 * inner + inner * dim + dim;
    }
    case 'TransBlockB': {
      const dim = num(config['dim'], 'dim', where);
      const hidden = num(config['dim_linear_block'], 'dim_linear_block', where);
      return 2 * dim + dim * hidden + hidden + hidden * dim + dim;
    }
    case 'prep': {
      const dim = num(config['dim'], 'dim', where);
      const patch = num(config['patch_dim'], 'patch_dim', where);
      const cin = num(config['in_channels'], 'in_channels', where);
      const patches = (num(config['img_dim'], 'img_dim', where) / patch) ** 2;
      return patch * patch * cin * dim + dim + dim + (patches + 1) * dim;
    }
    default:
      void input;
      return 0;
  }
}

function parseShape(text: string, where: string): number[] {
  const body = text.startsWith('[') ? text.slice(1, -1) : text;
  const out = body.split(',').map((s) => Number(s.trim()));
  if (out.length === 0 || out.some((n) => !Number.isInteger(n) || n < 1)) throw badInput(`${where}: bad input shape '${text}'`);
  return out;
}

/**
 * Parses a DeepPool per-layer profile. Every block must list the same layers (kind, config, input
 * shape) in the same order, each block one batch size, and its rows must add up to its
 * `SUM(avg)` (to 0.1%, the file's own rounding). Times are the `avg` column.
 *
 * @throws MigpoolError `BAD_INPUT` naming `file:line` for anything else
 */
export function parseDeepPoolLayers(text: string, file: string): ProfiledLayer[] {
  interface Row {
    kind: string;
    configText: string;
    config: Record<string, unknown>;
    shapeText: string;
    shape: number[];
    ms: number;
  }
  const blocks: { batch: number; rows: Row[]; line: number }[] = [];
  let rows: Row[] = [];
  let batch: number | null = null;
  let firstLine = 0;
  const lines = text.split(/\r?\n/);
  lines.forEach((line, i) => {
    const where = `${file}:${i + 1}`;
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#')) return;
    const sum = SUM.exec(line);
    if (sum) {
      if (batch === null || rows.length === 0) throw badInput(`${where}: SUM(avg) closes an empty block`);
      const total = rows.reduce((s, r) => s + r.ms, 0);
      const stated = Number(sum[1]);
      if (Math.abs(total - stated) > Math.max(0.002 * rows.length, 0.001 * stated)) {
        throw badInput(`${where}: the block's rows add up to ${total.toFixed(3)} ms but SUM(avg) says ${stated}; fix the rows or the sum`);
      }
      blocks.push({ batch, rows, line: firstLine });
      rows = [];
      batch = null;
      return;
    }
    const m = ROW.exec(line);
    if (!m) throw badInput(`${where}: expected 'kind{config}[batch][shape] avg ...' or 'SUM(avg) total', got '${trimmed.slice(0, 80)}'`);
    const [, kind, configText, batchText, shapeText, msText] = m as unknown as [string, string, string, string, string, string];
    let config: Record<string, unknown>;
    try {
      config = JSON.parse(configText) as Record<string, unknown>;
    } catch {
      throw badInput(`${where}: the layer config ${configText.slice(0, 60)} is not JSON`);
    }
    const b = Number(batchText);
    if (!(b >= 1)) throw badInput(`${where}: batch must be at least 1, got ${batchText}`);
    if (batch === null) {
      batch = b;
      firstLine = i + 1;
    } else if (b !== batch) throw badInput(`${where}: batch ${b} inside a block of batch ${batch}; close each block with SUM(avg)`);
    const ms = Number(msText);
    if (!Number.isFinite(ms) || ms < 0) throw badInput(`${where}: avg must be a non-negative number of ms, got '${msText}'`);
    rows.push({ kind, configText, config, shapeText, shape: parseShape(shapeText, where), ms });
  });
  if (rows.length > 0) throw badInput(`${file}: the last block has no SUM(avg) line`);
  const first = blocks[0];
  if (!first) throw badInput(`${file}: no profile blocks found`);
  const seen = new Set<number>();
  for (const b of blocks) {
    if (seen.has(b.batch)) throw badInput(`${file}:${b.line}: batch ${b.batch} is profiled twice`);
    seen.add(b.batch);
    if (b.rows.length !== first.rows.length) throw badInput(`${file}:${b.line}: block of batch ${b.batch} has ${b.rows.length} layers, the first block ${first.rows.length}`);
    b.rows.forEach((r, k) => {
      const f = first.rows[k] as Row;
      if (r.kind !== f.kind || r.configText !== f.configText || r.shapeText !== f.shapeText) {
        throw badInput(`${file}:${b.line}: layer ${k + 1} of the block of batch ${b.batch} is ${r.kind}${r.configText}[${r.shapeText}], the first block has ${f.kind}${f.configText}[${f.shapeText}]`);
      }
    });
  }
  return first.rows.map((r, k) => {
    const where = `${file}:${first.line + k} (${r.kind})`;
    return {
      kind: r.kind,
      config: r.config,
      inputShape: r.shape,
      outputShape: outputShape(r.kind, r.config, r.shape, where),
      parameters: parameterCount(r.kind, r.config, r.shape, where),
      times: blocks.map((b) => ({ batch: b.batch, ms: (b.rows[k] as Row).ms })).sort((x, y) => x.batch - y.batch),
    };
  });
}
