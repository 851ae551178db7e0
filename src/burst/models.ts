import { badInput } from '../errors.js';
import { ACTIVATION_BYTES, PARAM_BYTES } from './cost.js';
import { parseDeepPoolLayers, type ProfiledLayer } from './deeppool-profile.js';
import { inceptionV3Inputs } from './inception-v3.js';
import { inferGraph } from './infer-graph.js';
import type { Layer, ModelGraph } from './types.js';

/**
 * The built-in models: DeepPool's A100 per-layer profiles, shipped in data/deeppool/ (the text
 * is read by the caller; this module stays pure). How each one's edges are known:
 * - vgg16, resnet34, wrn101-2, vit: a chain, the only edge set the profile's shapes allow (see
 *   infer-graph.ts). The residual connections of WRN sit inside its profiled bottleneck blocks
 *   and those of ViT inside its transformer blocks; the ResNet-34 profile lists the 33 layers of
 *   the main path only (no shortcut convolutions, no additions), so it plans as that chain.
 * - inception-v3: forks and joins, from the architecture's module layout checked against every
 *   profiled shape (see inception-v3.ts).
 */
export const BUILT_IN_MODELS = [
  { name: 'vgg16', aliases: ['vgg'], file: 'vggLayerGpuProfileA100.txt', structure: 'infer', description: 'VGG-16, 224x224 input, 22 layers (chain)' },
  { name: 'wrn101-2', aliases: ['wrn', 'wide-resnet-101-2'], file: 'wrnLayerGpuProfileA100V2.txt', structure: 'infer', description: 'Wide-ResNet-101-2, 224x224 input, 39 layers of which 33 bottleneck blocks (chain), profiled at batch 1..32' },
  { name: 'inception-v3', aliases: ['inception'], file: 'inceptionLayerGpuProfileA100.txt', structure: 'inception-v3', description: 'Inception-v3, 299x299 input, 125 layers with branches' },
  { name: 'resnet34', aliases: ['resnet'], file: 'resnetLayerGpuProfileA100.txt', structure: 'infer', description: 'ResNet-34 main path, 224x224 input, 37 layers (chain; shortcuts not profiled)' },
  { name: 'vit', aliases: [], file: 'vitLayerGpuProfileA100.txt', structure: 'infer', description: 'ViT, 6 blocks of dim 512, 256x256 input, 15 layers (chain)' },
] as const;

export type BuiltInModel = (typeof BUILT_IN_MODELS)[number];

/** The built-in model a name or alias stands for (case-insensitive). */
export function resolveBuiltInModel(name: string): BuiltInModel {
  const key = name.trim().toLowerCase();
  const m = BUILT_IN_MODELS.find((b) => b.name === key || (b.aliases as readonly string[]).includes(key));
  if (!m) throw badInput(`unknown model '${name}': built-in models are ${BUILT_IN_MODELS.map((b) => [b.name, ...b.aliases].join('|')).join(', ')}; or give --profile FILE`);
  return m;
}

function product(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

/**
 * A model from the text of a DeepPool per-layer profile. `structure`: `inception-v3` for the
 * Inception template, `infer` to reconstruct edges from shapes (falling back to the execution
 * order as a chain when the shapes do not determine them; `source` says which).
 */
export function modelFromDeepPoolProfile(text: string, file: string, name: string, structure: 'infer' | 'inception-v3' = 'infer'): ModelGraph {
  const profiled = parseDeepPoolLayers(text, file);
  let inputs: readonly (readonly number[])[];
  let how: string;
  if (structure === 'inception-v3') {
    const r = inceptionV3Inputs(profiled);
    if (!r.ok) throw badInput(`${file}: does not fit Inception-v3's structure: ${r.reason}`);
    inputs = r.inputs;
    how = 'edges from the Inception-v3 module layout, checked against the profiled shapes';
  } else {
    const r = inferGraph(profiled);
    if (r.ok) {
      inputs = r.inputs;
      const chain = r.inputs.every((ins, v) => (v === 0 ? ins.length === 0 : ins.length === 1 && ins[0] === v - 1));
      how = chain ? 'a chain: the only edge set its shapes allow' : 'edges reconstructed from the profiled shapes (unique)';
    } else {
      inputs = profiled.map((_, v) => (v === 0 ? [] : [v - 1]));
      how = `a chain in execution order (edges not reconstructed: ${r.reason})`;
    }
  }
  const layers: Layer[] = profiled.map((p: ProfiledLayer, v) => ({
    name: `${p.kind}#${v + 1}`,
    inputs: inputs[v] ?? [],
    times: p.times,
    paramBytes: p.parameters * PARAM_BYTES,
    outputBytesPerSample: product(p.outputShape) * ACTIVATION_BYTES,
    outputElementsPerSample: product(p.outputShape),
    op: { kind: p.kind, config: p.config },
  }));
  return { name, layers, source: `${file}: ${profiled.length} layers, ${how}` };
}

/** A built-in model from its profile's text (read by the caller from data/deeppool/). */
export function builtInModel(model: BuiltInModel, text: string): ModelGraph {
  return modelFromDeepPoolProfile(text, model.file, model.name, model.structure);
}
