import { badInput, MigpoolError } from '../errors.js';
import { resolveGpuModel } from '../mig/catalog/index.js';
import type { GpuModel } from '../mig/types.js';
import type { Fleet } from './types.js';

/** Most GPUs one term of a fleet spec may ask for. */
export const MAX_FLEET_GPUS = 100_000;

const TERM = /^(\d+)\s*[xX×]\s*(\S.*)$/;

/**
 * Parses a fleet spec: comma-separated `COUNTxGPU` terms, `2048xA100-SXM4-40GB` or
 * `64xA100-40GB,16xH100-80GB`. GPU names are anything resolveGpuModel accepts (product names,
 * canonical names, aliases). GPUs are numbered in the order of the terms. At most
 * MAX_FLEET_GPUS GPUs in all. Bad input is a BAD_INPUT error of one line.
 */
export function parseFleet(spec: string): Fleet {
  const terms = spec.split(',').map((t) => t.trim());
  if (spec.trim() === '' || terms.some((t) => t === '')) {
    throw badInput(`fleet '${spec}' is empty or has an empty term: write COUNTxGPU terms separated by commas, e.g. 2048xA100-SXM4-40GB or 64xA100-40GB,16xH100-80GB`);
  }
  const gpus: GpuModel[] = [];
  for (const term of terms) {
    const m = TERM.exec(term);
    if (!m || m[1] === undefined || m[2] === undefined) {
      throw badInput(`fleet term '${term}' is not COUNTxGPU: write e.g. 2048xA100-SXM4-40GB`);
    }
    const count = Number(m[1]);
    if (!Number.isSafeInteger(count) || count < 1) throw badInput(`fleet term '${term}': the count must be a positive integer`);
    if (gpus.length + count > MAX_FLEET_GPUS) throw badInput(`fleet '${spec}' has more than ${MAX_FLEET_GPUS} GPUs: simulate a smaller fleet`);
    let model: GpuModel;
    try {
      model = resolveGpuModel(m[2]);
    } catch (e) {
      if (e instanceof MigpoolError) throw badInput(`fleet term '${term}': ${e.message}`);
      throw e;
    }
    for (let i = 0; i < count; i++) gpus.push(model);
  }
  return { spec, gpus };
}
