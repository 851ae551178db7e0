import { findGiProfile } from '../mig/catalog/index.js';
import type { GpuModel } from '../mig/types.js';
import { A100_40GB_BANDWIDTH, MEMORY_BANDWIDTH } from './bandwidth.js';
import { smSpeed } from './sm-speed.js';

/** SMs of one A100 compute slice (98 SMs over 7 slices with MIG on): the unit of SM capacity. */
export const A100_SMS_PER_SLICE = 14;
/** Compute slices of the reference resource, the A100-40GB `7g.40gb`, on which `T(B)` is defined. */
export const REFERENCE_SLICES = 7;
/** Memory bandwidth of one A100-40GB compute slice's share, GB/s: the unit of bandwidth capacity. */
export const BANDWIDTH_PER_SLICE = A100_40GB_BANDWIDTH / REFERENCE_SLICES;

/** What the model needs to know of a place a job runs: its SMs, memory bandwidth and memory. */
export interface ResourceShape {
  readonly sms: number;
  /** Training speed of one of its SMs relative to an A100 SM (sm-speed.ts); 1 when absent. */
  readonly smSpeed?: number;
  readonly bandwidthGBps: number;
  /** GiB; null where the catalogue has no figure (the job is then assumed to fit). */
  readonly memoryGiB: number | null;
  /** Figures that are estimates rather than catalogue or datasheet facts. */
  readonly caveats: readonly string[];
}

function bandwidthOf(gpu: GpuModel, caveats: string[]): number {
  const entry = MEMORY_BANDWIDTH[gpu.name];
  if (!entry) {
    caveats.push(`no memory bandwidth known for ${gpu.name}: assumed the A100-40GB's ${A100_40GB_BANDWIDTH} GB/s`);
    return A100_40GB_BANDWIDTH;
  }
  if (!entry.confirmed) caveats.push(`${gpu.name} memory bandwidth ${entry.gbPerSecond} GB/s is an unconfirmed datasheet figure`);
  return entry.gbPerSecond;
}

/** SMs per compute slice of the GPU's largest instance whose SM count the catalogue knows. */
function smsPerSliceFromProfiles(gpu: GpuModel): number | null {
  const known = gpu.giProfiles.filter((p) => p.sms !== null).sort((a, b) => b.computeSlices - a.computeSlices)[0];
  return known?.sms != null ? known.sms / known.computeSlices : null;
}

/**
 * A MIG instance of `profile` on `gpu`, or the whole GPU with MIG off when `profile` is null.
 * SMs come from the catalogue; where it has none they are estimated, in this order, from the GPU's
 * SMs times its share of compute slices, from the SMs per slice of its largest known instance, or
 * from the A100's 14 SMs per slice, and the estimate is named in `caveats`. A MIG instance owns
 * `memorySlices / gpu.memorySlices` of the GPU's memory bandwidth.
 */
export function resourceShape(gpu: GpuModel, profile: string | null): ResourceShape {
  const caveats: string[] = [];
  const bandwidth = bandwidthOf(gpu, caveats);
  const speed = smSpeed(gpu);
  if (!speed.confirmed) caveats.push(`${gpu.name} per-SM speed ${speed.factor.toFixed(2)}x an A100 SM is unconfirmed (${speed.source})`);
  if (profile === null) {
    let sms = gpu.sms;
    if (sms === null) {
      const full = gpu.giProfiles.find((p) => p.computeSlices === gpu.computeSlices && p.sms !== null);
      sms = full?.sms ?? A100_SMS_PER_SLICE * gpu.computeSlices;
      caveats.push(`${gpu.name} SMs with MIG off unknown: used ${sms} (${full ? `its ${full.name} instance` : '14 per compute slice'}), likely a few too few`);
    }
    return { sms, smSpeed: speed.factor, bandwidthGBps: bandwidth, memoryGiB: gpu.memoryGB, caveats };
  }
  const p = findGiProfile(gpu, profile);
  let sms = p.sms;
  if (sms === null) {
    const perSlice = gpu.sms !== null ? gpu.sms / gpu.computeSlices : smsPerSliceFromProfiles(gpu);
    sms = (perSlice ?? A100_SMS_PER_SLICE) * p.computeSlices;
    const how = gpu.sms !== null ? `${gpu.name}'s ${gpu.sms} SMs x ${p.computeSlices}/${gpu.computeSlices}` : perSlice !== null ? 'SMs per slice of its largest known instance' : "the A100's 14 SMs per slice";
    caveats.push(`${gpu.name} ${p.name} SMs unknown: estimated ${Math.round(sms)} from ${how}`);
  }
  if (p.memoryGiB === null) caveats.push(`${gpu.name} ${p.name} memory unknown: every job is assumed to fit`);
  return { sms, smSpeed: speed.factor, bandwidthGBps: (bandwidth * p.memorySlices) / gpu.memorySlices, memoryGiB: p.memoryGiB, caveats };
}

/**
 * Effective capacity in A100-40GB compute-slice units (the A100 `7g.40gb` is 7): the geometric mean
 * `c_sm^(1-m) * c_bw^m` of SM capacity (SMs x per-SM speed / 14) and bandwidth capacity
 * (GB/s / (1555/7)), weighted by the workload's memory-bound share `m`.
 */
export function effectiveCapacity(shape: ResourceShape, memoryBoundShare: number): number {
  const cSm = (shape.sms * (shape.smSpeed ?? 1)) / A100_SMS_PER_SLICE;
  const cBw = shape.bandwidthGBps / BANDWIDTH_PER_SLICE;
  return cSm ** (1 - memoryBoundShare) * cBw ** memoryBoundShare;
}
