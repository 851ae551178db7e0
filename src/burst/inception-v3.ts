import type { ShapedLayer } from './infer-graph.js';

/**
 * The branch structure of Inception-v3 (Szegedy et al., "Rethinking the Inception Architecture for
 * Computer Vision", CVPR 2016, figures 5-7 and table 1; the module layout torchvision uses:
 * a stem chain, three InceptionA, one InceptionB, four InceptionC, one InceptionD, two InceptionE,
 * then pooling and the classifier; no auxiliary classifier).
 *
 * Shapes alone cannot recover it from DeepPool's profile: in the last InceptionC every branch
 * layer reads and writes 192x17x17, so the branches can be paired up in several ways that all fit
 * (infer-graph.ts finds more than one). The profile lists each module breadth-first from the
 * module's input (the first layer of every branch, in branch order, then the second layers, and
 * so on, each concat when its inputs are done), so the module templates below give each row's
 * inputs; `inceptionV3Inputs` then checks every edge against the profiled shapes (a producer's
 * output shape is its consumer's input shape; a concat's inputs have its spatial size and add up
 * to its channels) and refuses the structure if one does not fit.
 */

/** A module template: per row, the rows it reads (-1: the module's input). */
type Template = readonly (readonly number[])[];

const A: Template = [[-1], [-1], [-1], [-1], [1], [2], [3], [5], [0, 4, 7, 6]];
const B: Template = [[-1], [-1], [-1], [1], [3], [0, 4, 2]];
const C: Template = [[-1], [-1], [-1], [-1], [1], [2], [3], [4], [5], [8], [9], [0, 7, 10, 6]];
const D: Template = [[-1], [-1], [-1], [0], [1], [4], [5], [3, 6, 2]];
const E: Template = [[-1], [-1], [-1], [-1], [1], [1], [2], [3], [4, 5], [6], [6], [9, 10], [0, 8, 11, 7]];

/** Rows of the stem (a chain), the modules in order, and the head (a chain). */
const STEM_ROWS = 7;
const MODULES: readonly Template[] = [A, A, A, B, C, C, C, C, D, E, E];
const HEAD_ROWS = 3;

function same(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/**
 * Inputs of each row of DeepPool's Inception-v3 profile, or a reason why the rows do not fit the
 * architecture (wrong row count, an edge whose shapes disagree, a concat whose channels do not add up).
 */
export function inceptionV3Inputs(layers: readonly ShapedLayer[]): { ok: true; inputs: number[][] } | { ok: false; reason: string } {
  const total = STEM_ROWS + MODULES.reduce((s, m) => s + m.length, 0) + HEAD_ROWS;
  if (layers.length !== total) return { ok: false, reason: `Inception-v3 has ${total} profiled rows, this profile ${layers.length}` };
  const inputs: number[][] = [];
  for (let i = 0; i < STEM_ROWS; i++) inputs.push(i === 0 ? [] : [i - 1]);
  let base = STEM_ROWS;
  for (const m of MODULES) {
    const moduleInput = base - 1;
    m.forEach((reads) => inputs.push(reads.map((r) => (r < 0 ? moduleInput : base + r))));
    base += m.length;
  }
  for (let i = 0; i < HEAD_ROWS; i++) inputs.push([base + i - 1]);
  for (const [v, reads] of inputs.entries()) {
    const layer = layers[v] as ShapedLayer;
    if (layer.kind === 'concat') {
      const shape = layer.outputShape;
      let channels = 0;
      for (const u of reads) {
        const out = (layers[u] as ShapedLayer).outputShape;
        if (!same(out.slice(1), shape.slice(1))) return { ok: false, reason: `row ${v + 1} (concat ${shape.join('x')}) reads row ${u + 1} of shape ${out.join('x')}` };
        channels += out[0] as number;
      }
      if (channels !== shape[0]) return { ok: false, reason: `row ${v + 1} (concat) has ${shape[0]} channels, its inputs ${channels}` };
      continue;
    }
    for (const u of reads) {
      const out = (layers[u] as ShapedLayer).outputShape;
      if (!same(out, layer.inputShape)) return { ok: false, reason: `row ${v + 1} (${layer.kind}) reads ${layer.inputShape.join('x')} but row ${u + 1} writes ${out.join('x')}` };
    }
  }
  return { ok: true, inputs };
}
