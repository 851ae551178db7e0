import { badInput, MigpoolError } from '../../errors.js';
import { resolveWorkload } from '../../perf/workloads.js';
import type { Workload } from '../../perf/types.js';

/** Workloads with their share of jobs; shares are normalised to sum to 1. */
export type WorkloadMix = readonly { readonly workload: Workload; readonly share: number }[];

/**
 * The default mix of single-GPU jobs: the study's three workloads (ResNet-26/CIFAR-10 `small`,
 * ResNet-50/ImageNet-64 `medium`, ResNet-152/ImageNet `large`) at 60/30/10. Skewed to small jobs
 * because both traces are: 93% of Philly's jobs ask for one GPU and half run under 20 minutes,
 * and 44% of Alibaba's GPU pods ask for a fraction of one.
 */
export const DEFAULT_MIX_SPEC = 'small=0.6,medium=0.3,large=0.1';

/**
 * Parses `small=0.6,medium=0.3,large=0.1`: comma-separated `WORKLOAD=WEIGHT`, workloads by name or
 * alias (see resolveWorkload), weights non-negative and not all zero (normalised, so `6,3,1`
 * works too). `extra` workloads (a user's) are searched first.
 *
 * @throws MigpoolError `BAD_INPUT` naming the entry at fault
 */
export function parseMix(spec: string, extra: readonly Workload[] = []): WorkloadMix {
  const entries = spec
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '');
  if (entries.length === 0) throw badInput(`mix '${spec}' is empty: write it as small=0.6,medium=0.3,large=0.1`);
  const parsed: { workload: Workload; weight: number }[] = [];
  for (const entry of entries) {
    const m = /^([^=]+)=(.+)$/.exec(entry);
    if (!m?.[1] || !m[2]) throw badInput(`mix entry '${entry}' is not WORKLOAD=WEIGHT (e.g. small=0.6)`);
    const weight = Number(m[2].trim());
    if (!Number.isFinite(weight) || weight < 0) throw badInput(`mix entry '${entry}': the weight must be a non-negative number, got '${m[2].trim()}'`);
    let workload: Workload;
    try {
      workload = resolveWorkload(m[1], extra);
    } catch (e) {
      if (e instanceof MigpoolError) throw badInput(`mix entry '${entry}': unknown workload '${m[1].trim()}' (try small, medium, large, bert-base-squad; 'migpool workloads' lists them all)`);
      throw e;
    }
    if (parsed.some((p) => p.workload.name === workload.name)) throw badInput(`mix entry '${entry}': ${workload.name} appears twice`);
    parsed.push({ workload, weight });
  }
  const total = parsed.reduce((s, p) => s + p.weight, 0);
  if (total <= 0) throw badInput(`mix '${spec}': the weights are all zero`);
  return parsed.map((p) => ({ workload: p.workload, share: p.weight / total }));
}

/** The mix as `name=share,...` with shares rounded to 3 decimals. */
export function formatMix(mix: WorkloadMix): string {
  return mix.map((m) => `${m.workload.name}=${Number(m.share.toFixed(3))}`).join(',');
}

/** Draws one workload from the mix with one number from `random`. */
export function drawWorkload(mix: WorkloadMix, random: () => number): Workload {
  const u = random();
  let acc = 0;
  for (const m of mix) {
    acc += m.share;
    if (u < acc) return m.workload;
  }
  const last = mix[mix.length - 1];
  if (!last) throw new MigpoolError('RUNTIME', 'empty workload mix');
  return last.workload;
}
