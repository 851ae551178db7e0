/**
 * Reconstructs the edges of a profiled model. DeepPool's profiles list layers in an execution
 * order and carry no edges. For the profiled models that order is a first-in-first-out
 * topological order (Kahn's algorithm with a queue: a layer is listed after every layer it reads,
 * and layers become ready in the order their last input was listed), which is what makes
 * reconstruction possible:
 * - a non-concat layer reads exactly one earlier layer whose output shape equals its input shape;
 * - a `concat` reads two or more earlier, not yet read layers with its spatial size whose channels
 *   add up to its own, and nothing else reads them (concat inputs are branch outputs);
 * - the position of a layer's last input never decreases along the list (FIFO readiness);
 * - every layer but the last is read by some later layer.
 * A depth-first search tries inputs in order (layers nobody reads yet first, then the earliest) and
 * counts the edge sets that satisfy all of the above. The graph is used only when exactly one does:
 * then the profile and the rules determine it. Otherwise the caller falls back to the execution
 * order as a chain. Chains (VGG, ResNet, WRN, ViT as profiled) come out unique; Inception-v3 does
 * not (branches of equal shapes can be paired up in several ways), see inception-v3.ts. Pure.
 */

/** What inference needs of a layer. */
export interface ShapedLayer {
  readonly kind: string;
  readonly inputShape: readonly number[];
  readonly outputShape: readonly number[];
}

/** The outcome: the inputs of each layer, or why there are none. */
export type InferredGraph =
  | { readonly ok: true; readonly inputs: readonly (readonly number[])[] }
  | { readonly ok: false; readonly reason: string };

/** Search steps before giving up (the profiled models need a few thousand). */
const STEP_LIMIT = 2_000_000;

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** Subsets of `items` (at least two) whose weights add up to `target`, smallest last element first. */
function subsetsSumming(items: readonly { index: number; weight: number }[], target: number): number[][] {
  const out: number[][] = [];
  const n = items.length;
  if (n > 20) return out;
  for (let mask = 1; mask < 1 << n; mask++) {
    let sum = 0;
    let count = 0;
    for (let k = 0; k < n; k++) {
      if (mask & (1 << k)) {
        sum += (items[k] as { weight: number }).weight;
        count++;
      }
    }
    if (count >= 2 && sum === target) out.push(items.filter((_, k) => mask & (1 << k)).map((x) => x.index));
  }
  return out.sort((a, b) => (a[a.length - 1] as number) - (b[b.length - 1] as number) || b.length - a.length);
}

/**
 * The unique edge set of a profiled model under the rules above, or the reason there is none (no
 * consistent edge set, several, or the search budget ran out).
 */
export function inferGraph(layers: readonly ShapedLayer[]): InferredGraph {
  const n = layers.length;
  if (n === 0) return { ok: false, reason: 'no layers' };
  const inputs: number[][] = layers.map(() => []);
  const readers = new Int32Array(n);
  const readByConcat = new Uint8Array(n);
  let found: number[][] | null = null;
  let solutions = 0;
  let steps = 0;
  // concatsFrom[v]: concats at v or later. With none left, every later layer reads one input and
  // adds itself unread, so the count of unread layers can never fall again: it must stay at one.
  const concatsFrom = new Int32Array(n + 1);
  for (let v = n - 1; v >= 0; v--) concatsFrom[v] = (concatsFrom[v + 1] as number) + ((layers[v] as ShapedLayer).kind === 'concat' ? 1 : 0);
  let unread = 1;

  const visit = (v: number, cursor: number): void => {
    if (solutions > 1 || steps > STEP_LIMIT) return;
    steps++;
    if (v === n) {
      if (unread !== 1) return;
      solutions++;
      if (solutions === 1) found = inputs.map((a) => [...a]);
      return;
    }
    if (concatsFrom[v] === 0 && unread > 1) return;
    const layer = layers[v] as ShapedLayer;
    if (layer.kind === 'concat') {
      const shape = layer.outputShape;
      if (shape.length < 2) return;
      const spatial = shape.slice(1);
      const candidates: { index: number; weight: number }[] = [];
      for (let u = 0; u < v; u++) {
        const out = (layers[u] as ShapedLayer).outputShape;
        if (readers[u] === 0 && out.length === shape.length && sameShape(out.slice(1), spatial)) candidates.push({ index: u, weight: out[0] as number });
      }
      for (const set of subsetsSumming(candidates, shape[0] as number)) {
        const last = set[set.length - 1] as number;
        if (last < cursor) continue;
        for (const u of set) {
          readers[u] = (readers[u] as number) + 1;
          readByConcat[u] = 1;
        }
        inputs[v] = set;
        unread += 1 - set.length;
        visit(v + 1, last);
        unread -= 1 - set.length;
        for (const u of set) {
          readers[u] = (readers[u] as number) - 1;
          readByConcat[u] = 0;
        }
        inputs[v] = [];
        if (solutions > 1) return;
      }
      return;
    }
    const fresh: number[] = [];
    const read: number[] = [];
    for (let u = cursor; u < v; u++) {
      if (readByConcat[u] === 1 || !sameShape((layers[u] as ShapedLayer).outputShape, layer.inputShape)) continue;
      (readers[u] === 0 ? fresh : read).push(u);
    }
    for (const u of [...fresh, ...read]) {
      const d = readers[u] === 0 ? 0 : 1;
      readers[u] = (readers[u] as number) + 1;
      inputs[v] = [u];
      unread += d;
      visit(v + 1, u);
      unread -= d;
      readers[u] = (readers[u] as number) - 1;
      inputs[v] = [];
      if (solutions > 1) return;
    }
  };

  visit(1, 0);
  if (steps > STEP_LIMIT) return { ok: false, reason: `the search for edges gave up after ${STEP_LIMIT} steps` };
  if (solutions === 0 || found === null) return { ok: false, reason: 'no edge set fits the layer shapes in this order' };
  if (solutions > 1) return { ok: false, reason: 'several edge sets fit the layer shapes in this order' };
  return { ok: true, inputs: found };
}
