import { badInput } from '../errors.js';
import { findGiProfile } from '../mig/catalog/index.js';
import { placeProfiles } from '../mig/geometry.js';
import type { GiProfile, GpuModel } from '../mig/types.js';

/** One way to run jobs on a GPU in a benchmark. */
export type BenchConfig =
  /** One job on the whole GPU, MIG off. */
  | { readonly name: string; readonly kind: 'full'; readonly jobs: 1 }
  /** N jobs side by side, each on its own MIG instance of one profile. */
  | { readonly name: string; readonly kind: 'mig'; readonly jobs: number; readonly profile: GiProfile }
  /** N jobs sharing the whole GPU (MIG off): taking turns, under MPS, or one after another. */
  | { readonly name: string; readonly kind: 'timeslice' | 'mps' | 'serial'; readonly jobs: number };

/** Profiles the default set benchmarks: one per size, without the media-engine variants. */
function plainProfiles(model: GpuModel): GiProfile[] {
  return model.giProfiles.filter((p) => !/[+-]/.test(p.name));
}

/** How many instances of `profile` one GPU holds (placement, counts and compute slices). */
export function maxPacking(model: GpuModel, profile: GiProfile): number {
  let n = 0;
  while (n < profile.maxCount && placeProfiles(model, Array.from({ length: n + 1 }, () => profile)).valid) n++;
  return n;
}

/**
 * The default configs: `1xfull`, each profile alone, and each homogeneous packing of the GPU
 * (`7x1g.5gb`, `3x2g.10gb`, ...), in that order, without duplicates.
 */
export function defaultConfigs(model: GpuModel): BenchConfig[] {
  const list: BenchConfig[] = [{ name: '1xfull', kind: 'full', jobs: 1 }];
  const profiles = plainProfiles(model);
  for (const p of profiles) list.push({ name: `1x${p.name}`, kind: 'mig', jobs: 1, profile: p });
  for (const p of profiles) {
    const n = maxPacking(model, p);
    if (n > 1) list.push({ name: `${n}x${p.name}`, kind: 'mig', jobs: n, profile: p });
  }
  return list;
}

/**
 * Reads `--configs`: a comma-separated list of `1xfull`, `NxPROFILE`, `NxTIMESLICE`, `NxMPS`,
 * `NxSERIAL` (case-insensitive). A packing that cannot fit the GPU is bad input, with the reason.
 */
export function parseBenchConfigs(text: string, model: GpuModel): BenchConfig[] {
  const items = text.split(',').map((s) => s.trim()).filter((s) => s.length > 0);
  if (items.length === 0) throw badInput(`--configs is empty: write e.g. 1xfull,7x1g.5gb,4xtimeslice`);
  return items.map((item) => {
    const m = /^(\d+)\s*x\s*(.+)$/i.exec(item);
    if (!m) throw badInput(`--configs '${item}': write NxWHAT, e.g. 1xfull, 7x${plainProfiles(model)[0]?.name ?? '1g.5gb'}, 4xtimeslice, 4xmps, 4xserial`);
    const jobs = Number(m[1]);
    const what = (m[2] ?? '').trim().toLowerCase();
    if (jobs < 1 || jobs > 64) throw badInput(`--configs '${item}': the number of jobs must be 1 to 64`);
    if (what === 'full') {
      if (jobs !== 1) throw badInput(`--configs '${item}': 'full' runs one job; for several jobs on the whole GPU use ${jobs}xtimeslice, ${jobs}xmps or ${jobs}xserial`);
      return { name: '1xfull', kind: 'full', jobs: 1 };
    }
    if (what === 'timeslice' || what === 'mps' || what === 'serial') return { name: `${jobs}x${what}`, kind: what, jobs };
    const profile = findGiProfile(model, what);
    const fit = placeProfiles(model, Array.from({ length: jobs }, () => profile));
    if (!fit.valid) throw badInput(`--configs '${item}': ${jobs} × ${profile.name} do not fit one ${model.name}: ${fit.reason}`);
    return { name: `${jobs}x${profile.name}`, kind: 'mig', jobs, profile };
  });
}
