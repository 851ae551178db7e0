import { badInput } from '../errors.js';
import type { Layer, ModelGraph, TimePoint } from './types.js';

/**
 * migpool's JSON model profile (`migpool burst-plan --profile FILE`), for models with explicit
 * edges:
 *
 * ```json
 * {
 *   "name": "tiny-inception",
 *   "layers": [
 *     { "name": "stem", "paramBytes": 4096, "outputBytesPerSample": 65536,
 *       "times": [{ "batch": 1, "ms": 0.20 }, { "batch": 32, "ms": 2.1 }] },
 *     { "name": "left",  "inputs": ["stem"], "paramBytes": 0, "outputBytesPerSample": 32768, "times": [...] },
 *     { "name": "right", "inputs": ["stem"], "paramBytes": 0, "outputBytesPerSample": 32768, "times": [...] },
 *     { "name": "join",  "inputs": ["left", "right"], "paramBytes": 0, "outputBytesPerSample": 65536, "times": [...] }
 *   ]
 * }
 * ```
 *
 * - `layers` in a topological order: every name in `inputs` is a layer listed earlier. `inputs`
 *   left out means the layer before (a chain); `[]` means none (the model's input).
 * - `times`: forward+backward ms at per-GPU batch sizes (at least one; batches distinct, >= 1).
 * - `paramBytes`: bytes of the parameters whose gradients are all-reduced;
 *   `outputBytesPerSample`: bytes of the layer's output per sample (sent to differently split
 *   consumers, and its gradient back).
 */
export function parseProfileJson(text: string, file: string): ModelGraph {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    throw badInput(`${file}: not JSON (${(e as Error).message}); see 'migpool burst-plan --help' for the format`);
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw badInput(`${file}: expected an object with "name" and "layers"`);
  const d = doc as Record<string, unknown>;
  const name = typeof d['name'] === 'string' && d['name'].trim() !== '' ? d['name'].trim() : file;
  const raw = d['layers'];
  if (!Array.isArray(raw) || raw.length === 0) throw badInput(`${file}: "layers" must be a non-empty array`);
  const index = new Map<string, number>();
  const layers: Layer[] = raw.map((entry: unknown, v) => {
    const at = `${file}: layers[${v}]`;
    if (typeof entry !== 'object' || entry === null) throw badInput(`${at}: expected an object`);
    const e = entry as Record<string, unknown>;
    const lname = e['name'];
    if (typeof lname !== 'string' || lname.trim() === '') throw badInput(`${at}: "name" must be a non-empty string`);
    if (index.has(lname)) throw badInput(`${at}: layer name '${lname}' is used twice`);
    let inputs: number[];
    if (e['inputs'] === undefined) inputs = v === 0 ? [] : [v - 1];
    else {
      if (!Array.isArray(e['inputs'])) throw badInput(`${at} (${lname}): "inputs" must be an array of earlier layer names`);
      inputs = e['inputs'].map((x: unknown) => {
        const u = typeof x === 'string' ? index.get(x) : undefined;
        if (u === undefined) throw badInput(`${at} (${lname}): input ${JSON.stringify(x)} is not a layer listed before it; list layers in a topological order`);
        return u;
      });
    }
    const bytes = (key: string): number => {
      const b = e[key];
      if (typeof b !== 'number' || !Number.isFinite(b) || b < 0) throw badInput(`${at} (${lname}): "${key}" must be a non-negative number, got ${JSON.stringify(b)}`);
      return b;
    };
    const rawTimes = e['times'];
    if (!Array.isArray(rawTimes) || rawTimes.length === 0) throw badInput(`${at} (${lname}): "times" must be a non-empty array of {"batch", "ms"}`);
    const times: TimePoint[] = rawTimes.map((t: unknown) => {
      const p = (typeof t === 'object' && t !== null ? t : {}) as Record<string, unknown>;
      const batch = p['batch'];
      const ms = p['ms'];
      if (typeof batch !== 'number' || !Number.isInteger(batch) || batch < 1 || typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) {
        throw badInput(`${at} (${lname}): each time must be {"batch": whole number >= 1, "ms": number >= 0}, got ${JSON.stringify(t)}`);
      }
      return { batch, ms };
    });
    times.sort((a, b) => a.batch - b.batch);
    if (times.some((t, k) => k > 0 && (times[k - 1] as TimePoint).batch === t.batch)) throw badInput(`${at} (${lname}): a batch size appears twice in "times"`);
    const layer: Layer = { name: lname, inputs, times, paramBytes: bytes('paramBytes'), outputBytesPerSample: bytes('outputBytesPerSample') };
    index.set(lname, v);
    return layer;
  });
  return { name, layers, source: `${file}: ${layers.length} layers with explicit edges` };
}
