import { describe, expect, it } from 'vitest';
import { loadBuiltIn, profileText } from '../../test/burst-fixtures.js';
import { MigpoolError } from '../errors.js';
import { outputShape, parseDeepPoolLayers } from './deeppool-profile.js';
import { inceptionV3Inputs } from './inception-v3.js';
import { inferGraph, type ShapedLayer } from './infer-graph.js';
import { BUILT_IN_MODELS, resolveBuiltInModel } from './models.js';
import { parseProfileJson } from './profile-json.js';

function badInputMessage(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(MigpoolError);
    expect((e as MigpoolError).code).toBe('BAD_INPUT');
    return (e as Error).message;
  }
  throw new Error('did not throw');
}

describe('DeepPool profiles', () => {
  it('reads every block of every built-in profile, with its batch sizes', () => {
    for (const m of BUILT_IN_MODELS) {
      const layers = parseDeepPoolLayers(profileText(m.file), m.file);
      const batches = m.name === 'wrn101-2' ? [1, 2, 3, 4, 5, 6, 8, 12, 16, 32] : [1, 2, 4, 8, 16, 32, 64, 128];
      for (const l of layers) expect(l.times.map((t) => t.batch)).toEqual(batches);
    }
  });

  it('VGG-16: the first conv at batch 128 takes 13.509 ms (the file\'s first row); 138,357,544 parameters, as torchvision counts', () => {
    const layers = parseDeepPoolLayers(profileText('vggLayerGpuProfileA100.txt'), 'vgg');
    expect(layers).toHaveLength(22);
    expect(layers[0]!.times.at(-1)).toEqual({ batch: 128, ms: 13.509 });
    expect(layers.reduce((s, l) => s + l.parameters, 0)).toBe(138_357_544);
    expect(layers[17]!.outputShape).toEqual([512, 7, 7]);
    expect(layers[18]!.outputShape).toEqual([25088]);
  });

  it('Wide-ResNet-101-2: 126,886,632 parameters, torchvision\'s 126,886,696 but for the stem batch norm counted as a bias (64 fewer)', () => {
    const layers = parseDeepPoolLayers(profileText('wrnLayerGpuProfileA100V2.txt'), 'wrn');
    expect(layers.reduce((s, l) => s + l.parameters, 0)).toBe(126_886_632);
  });

  it('computes output shapes of asymmetric kernels and strided bottlenecks', () => {
    expect(outputShape('conv2d', { in_channels: 128, kernel_size: [1, 7], out_channels: 192, padding: [0, 3], stride: 1 }, [128, 17, 17], 'x')).toEqual([192, 17, 17]);
    expect(outputShape('maxPool2d', { kernel_size: 3, padding: 0, stride: 2 }, [64, 147, 147], 'x')).toEqual([64, 73, 73]);
    expect(outputShape('ResnetBottleneck', { planes: 128, stride: 2 }, [256, 56, 56], 'x')).toEqual([512, 28, 28]);
    expect(outputShape('prep', { dim: 512, img_dim: 256, patch_dim: 16 }, [3, 256, 256], 'x')).toEqual([257, 512]);
  });

  it('refuses malformed profiles with file:line', () => {
    expect(badInputMessage(() => parseDeepPoolLayers('conv2d{"in_channels":3}[1][3,8,8]   1.0\n', 'p.txt'))).toContain('no SUM(avg)');
    expect(badInputMessage(() => parseDeepPoolLayers('nonsense\n', 'p.txt'))).toContain('p.txt:1');
    const row = (b: number, ms: number) => `linear{"in_features":4,"out_features":2}[${b}]4   ${ms}`;
    expect(badInputMessage(() => parseDeepPoolLayers(`${row(1, 1)}\nSUM(avg)  5\n`, 'p.txt'))).toContain('add up to 1.000');
    expect(badInputMessage(() => parseDeepPoolLayers(`${row(1, 1)}\n${row(2, 1)}\nSUM(avg)  2\n`, 'p.txt'))).toContain('p.txt:2: batch 2 inside a block of batch 1');
    expect(badInputMessage(() => parseDeepPoolLayers(`${row(1, 1)}\nSUM(avg)  1\nlinear{"in_features":4,"out_features":3}[2]4   1\nSUM(avg)  1\n`, 'p.txt'))).toContain('layer 1 of the block of batch 2');
    expect(badInputMessage(() => parseDeepPoolLayers('what{}[1]4   1\nSUM(avg)  1\n', 'p.txt'))).toContain('unknown layer kind');
  });
});

describe('edges of the built-in models', () => {
  it('VGG-16, WRN, ResNet-34 and ViT are chains, the only edge sets their shapes allow', () => {
    for (const name of ['vgg16', 'wrn', 'resnet', 'vit']) {
      const m = loadBuiltIn(name);
      expect(m.source).toContain('a chain: the only edge set its shapes allow');
      m.layers.forEach((l, v) => expect(l.inputs).toEqual(v === 0 ? [] : [v - 1]));
    }
  });

  it('Inception-v3: shapes alone allow several edge sets; the module layout fits every profiled shape', () => {
    const layers = parseDeepPoolLayers(profileText('inceptionLayerGpuProfileA100.txt'), 'inception');
    const inferred = inferGraph(layers);
    expect(inferred.ok).toBe(false);
    const r = inceptionV3Inputs(layers);
    expect(r.ok).toBe(true);
    const m = loadBuiltIn('inception');
    expect(m.layers).toHaveLength(125);
    expect(m.layers.filter((l) => l.inputs.length > 1)).toHaveLength(15);
    // The first InceptionA: its input (the stem's max pool, row 7) feeds four branches.
    expect(m.layers.filter((l) => l.inputs.includes(6)).map((l) => l.name)).toEqual(['conv2d#8', 'conv2d#9', 'conv2d#10', 'avgPool2d#11']);
    expect(m.layers[15]!.inputs).toEqual([7, 11, 14, 13]);
  });

  it('refuses an Inception profile whose shapes do not fit the layout', () => {
    const layers = parseDeepPoolLayers(profileText('inceptionLayerGpuProfileA100.txt'), 'inception');
    const broken = layers.map((l, v) => (v === 12 ? { ...l, inputShape: [63, 35, 35] } : l));
    const r = inceptionV3Inputs(broken);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toContain('row 13');
  });
});

describe('inferGraph on hand-made shapes', () => {
  const L = (kind: string, inputShape: number[], outputShape: number[]): ShapedLayer => ({ kind, inputShape, outputShape });

  it('finds a fork and a join when the shapes tell the branches apart', () => {
    const layers = [L('conv2d', [3, 8, 8], [16, 8, 8]), L('conv2d', [16, 8, 8], [8, 8, 8]), L('conv2d', [16, 8, 8], [4, 8, 8]), L('conv2d', [4, 8, 8], [6, 8, 8]), L('concat', [14, 8, 8], [14, 8, 8]), L('flatten', [14, 8, 8], [896])];
    const r = inferGraph(layers);
    expect(r).toEqual({ ok: true, inputs: [[], [0], [0], [2], [1, 3], [4]] });
  });

  it('refuses when equal shapes leave the pairing open', () => {
    const layers = [L('conv2d', [3, 8, 8], [4, 8, 8]), L('conv2d', [4, 8, 8], [4, 8, 8]), L('conv2d', [4, 8, 8], [4, 8, 8]), L('conv2d', [4, 8, 8], [4, 8, 8]), L('concat', [8, 8, 8], [8, 8, 8])];
    const r = inferGraph(layers);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toContain('several');
  });

  it('refuses shapes no edge set fits', () => {
    const r = inferGraph([L('conv2d', [3, 8, 8], [4, 8, 8]), L('conv2d', [5, 8, 8], [4, 8, 8])]);
    expect(r.ok).toBe(false);
  });
});

describe('model names and JSON profiles', () => {
  it('resolves names and aliases; lists them for an unknown one', () => {
    expect(resolveBuiltInModel('WRN').name).toBe('wrn101-2');
    expect(resolveBuiltInModel('inception').name).toBe('inception-v3');
    expect(badInputMessage(() => resolveBuiltInModel('gpt'))).toContain('vgg16|vgg');
  });

  it('reads explicit edges by name; a missing "inputs" means the layer before', () => {
    const m = parseProfileJson(
      JSON.stringify({
        name: 'tiny',
        layers: [
          { name: 'stem', paramBytes: 4, outputBytesPerSample: 8, times: [{ batch: 1, ms: 1 }] },
          { name: 'left', inputs: ['stem'], paramBytes: 0, outputBytesPerSample: 8, times: [{ batch: 2, ms: 2 }, { batch: 1, ms: 1 }] },
          { name: 'right', inputs: ['stem'], paramBytes: 0, outputBytesPerSample: 8, times: [{ batch: 1, ms: 1 }] },
          { name: 'join', inputs: ['left', 'right'], paramBytes: 0, outputBytesPerSample: 8, times: [{ batch: 1, ms: 1 }] },
          { name: 'head', paramBytes: 0, outputBytesPerSample: 0, times: [{ batch: 1, ms: 1 }] },
        ],
      }),
      'tiny.json',
    );
    expect(m.name).toBe('tiny');
    expect(m.layers.map((l) => l.inputs)).toEqual([[], [0], [0], [1, 2], [3]]);
    expect(m.layers[1]!.times.map((t) => t.batch)).toEqual([1, 2]);
  });

  it('refuses a bad JSON profile naming the layer and field', () => {
    const one = (layer: object) => JSON.stringify({ layers: [layer] });
    expect(badInputMessage(() => parseProfileJson('{', 'm.json'))).toContain('m.json: not JSON');
    expect(badInputMessage(() => parseProfileJson('{"layers": []}', 'm.json'))).toContain('non-empty array');
    expect(badInputMessage(() => parseProfileJson(one({ name: 'a', inputs: ['b'], paramBytes: 0, outputBytesPerSample: 0, times: [{ batch: 1, ms: 1 }] }), 'm.json'))).toContain("input \"b\" is not a layer listed before it");
    expect(badInputMessage(() => parseProfileJson(one({ name: 'a', paramBytes: -1, outputBytesPerSample: 0, times: [{ batch: 1, ms: 1 }] }), 'm.json'))).toContain('"paramBytes" must be a non-negative number');
    expect(badInputMessage(() => parseProfileJson(one({ name: 'a', paramBytes: 0, outputBytesPerSample: 0, times: [{ batch: 0, ms: 1 }] }), 'm.json'))).toContain('layers[0] (a)');
  });
});
