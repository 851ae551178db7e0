import type { CiProfile, GiProfile, GpuModel } from '../mig/types.js';

/** A compute instance as found on a GPU. */
export interface CurrentComputeInstance {
  readonly id: number;
  /** `3g.20gb` (full) or `1c.3g.20gb`. */
  readonly profile: string;
  /** PIDs running on it. */
  readonly pids: readonly number[];
}

/** A GPU instance as found on a GPU. */
export interface CurrentGpuInstance {
  readonly id: number;
  readonly profile: GiProfile;
  readonly start: number;
  readonly size: number;
  readonly computeInstances: readonly CurrentComputeInstance[];
}

/** One GPU as it is now: what the planner starts from. */
export interface CurrentGpu {
  readonly index: number;
  readonly uuid: string;
  readonly model: GpuModel;
  readonly migMode: { readonly current: 'enabled' | 'disabled'; readonly pending: 'enabled' | 'disabled' };
  readonly instances: readonly CurrentGpuInstance[];
  /** PIDs holding the whole GPU (MIG off) or not tied to an instance. */
  readonly gpuPids: readonly number[];
}

/** One GPU instance wanted: a GI profile and the compute instances inside it. */
export interface DesiredGroup {
  readonly gi: GiProfile;
  readonly cis: readonly CiProfile[];
}

/** What one GPU should become. */
export interface DesiredGpu {
  readonly migEnabled: boolean;
  readonly groups: readonly DesiredGroup[];
}

/** `3g.20gb[1c.3g.20gb,2c.3g.20gb]`: a GPU instance with its CIs, for comparing and messages. */
export function groupSignature(gi: string, cis: readonly string[]): string {
  return `${gi}[${[...cis].sort().join(',')}]`;
}

/**
 * The instances of a GPU as mig-parted counts them (one count per compute instance, keyed by the
 * CI's profile name: `3g.20gb` for a full CI, `1c.3g.20gb` otherwise), as in mig-parted's
 * pkg/mig/config GetMigConfig.
 */
export function migDeviceCounts(instances: readonly { readonly computeInstances: readonly { readonly profile: string }[] }[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const gi of instances) for (const ci of gi.computeInstances) counts[ci.profile] = (counts[ci.profile] ?? 0) + 1;
  return counts;
}
