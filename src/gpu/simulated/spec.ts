import { badInput } from '../../errors.js';
import { GPU_MODELS, resolveGpuModel } from '../../mig/catalog/index.js';
import type { GpuModel } from '../../mig/types.js';

/** One kind of GPU in a simulated machine. */
export interface SimulatedGpuKind {
  readonly model: GpuModel;
  /** Product name the simulated nvidia-smi prints: the part the user named. */
  readonly productName: string;
}

function normalize(text: string): string {
  return text.toUpperCase().replace(/^NVIDIA[\s_-]+/, '').replace(/[\s_-]+/g, '-');
}

/** The product name of `model` that `asked` names, else the family's first product name. */
function productNameFor(model: GpuModel, asked: string): string {
  const want = normalize(asked);
  return (
    model.productNames.find((p) => normalize(p) === want) ??
    model.productNames.find((p) => p.startsWith('NVIDIA') && normalize(p).includes(want)) ??
    model.productNames[0] ??
    model.name
  );
}

/**
 * Most GPUs one entry of a machine spec holds (`64xA100-SXM4-40GB`): migpool's own bound, not a
 * hardware fact, that keeps a slip of the keyboard (800x for 8x) from building a huge machine; a
 * larger one is several entries (bench/service.ts simulates 1,000 GPUs as 15 x 64 + 40).
 */
export const MAX_PER_ENTRY = 64;

/** A spec for `count` GPUs of `name` that parses, split into entries of at most MAX_PER_ENTRY. */
function countExample(count: number, name = 'A100-SXM4-40GB'): string {
  if (!Number.isSafeInteger(count) || count < 1 || count > MAX_PER_ENTRY * 4) return `${MAX_PER_ENTRY}x${name},${MAX_PER_ENTRY}x${name}`;
  const parts: string[] = [];
  for (let left = count; left > 0; left -= MAX_PER_ENTRY) parts.push(`${Math.min(left, MAX_PER_ENTRY)}x${name}`);
  return parts.join(',');
}

/**
 * Reads a machine spec: `8xA100-SXM4-40GB`, `2xA30,1xH100-80GB`, `A30` (one GPU). GPU names are
 * anything `migpool gpus` accepts.
 *
 * @param flag the flag the spec came from, named in errors (`migpool demo` takes it as `--gpus`)
 */
export function parseSimulateSpec(spec: string, flag = '--simulate'): SimulatedGpuKind[] {
  const parts = spec.split(',').map((s) => s.trim()).filter((s) => s.length > 0);
  if (parts.length === 0) throw badInput(`empty ${flag} spec: write it like 8xA100-SXM4-40GB or 2xA30,1xH100-80GB`);
  const gpus: SimulatedGpuKind[] = [];
  for (const part of parts) {
    if (/^\d+$/.test(part)) throw badInput(`${flag} '${part}': a count alone names no GPU: give the model after it, as in ${countExample(Number(part))}`);
    const m = /^(?:(\d+)\s*[xX*]\s*)?(.+)$/.exec(part);
    const count = m?.[1] === undefined ? 1 : Number(m[1]);
    const name = (m?.[2] ?? '').trim();
    if (!Number.isInteger(count) || count < 1) throw badInput(`${flag} '${part}': the count must be 1 or more, as in 8xA100-SXM4-40GB`);
    if (count > MAX_PER_ENTRY) {
      throw badInput(`${flag} '${part}': ${count} is more GPUs than one entry of a machine spec holds (at most ${MAX_PER_ENTRY} per entry); split it into entries, as in ${countExample(count, name)}`);
    }
    let model: GpuModel;
    try {
      model = resolveGpuModel(name);
    } catch (e) {
      const why = e instanceof Error ? e.message : String(e);
      throw badInput(`${flag} '${part}': ${why}`);
    }
    for (let i = 0; i < count; i++) gpus.push({ model, productName: productNameFor(model, name) });
  }
  return gpus;
}

/** The catalogued family of a simulated GPU, by canonical name. */
export function modelByName(name: string): GpuModel {
  const model = GPU_MODELS.find((m) => m.name === name);
  if (!model) throw badInput(`simulated GPU family '${name}' is not in the catalogue; run 'migpool sim reset'`);
  return model;
}
