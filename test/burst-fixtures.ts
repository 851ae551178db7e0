import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { builtInModel, resolveBuiltInModel } from '../src/burst/models.js';
import type { Layer, ModelGraph } from '../src/burst/types.js';

/** A built-in model read from the checkout's data/deeppool/ (tests only). */
export function loadBuiltIn(name: string): ModelGraph {
  const m = resolveBuiltInModel(name);
  return builtInModel(m, readFileSync(fileURLToPath(new URL(`../data/deeppool/${m.file}`, import.meta.url)), 'utf8'));
}

/** The text of a file of data/deeppool/ (tests only). */
export function profileText(file: string): string {
  return readFileSync(fileURLToPath(new URL(`../data/deeppool/${file}`, import.meta.url)), 'utf8');
}

/** A layer whose time is `perSample` ms per sample plus `fixed` ms, profiled at batches 1, 2, 4, ... 1024. */
export function linearLayer(name: string, inputs: number[], perSample: number, fixed: number, outputBytesPerSample: number, paramBytes = 0): Layer {
  const times = [];
  for (let b = 1; b <= 1024; b *= 2) times.push({ batch: b, ms: fixed + perSample * b });
  return { name, inputs, times, paramBytes, outputBytesPerSample };
}
