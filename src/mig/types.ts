/**
 * The nouns of the MIG fact base. Everything here is plain data: a GPU model and its GPU instance
 * (GI) and compute instance (CI) profiles, exactly as NVIDIA documents them and as `nvidia-smi mig
 * -lgip / -lgipp / -lcip` prints them.
 */

/** A legal position of a GPU instance, as `nvidia-smi mig -lgipp` prints `{start}:size`. */
export interface Placement {
  /** First GPU slice (memory slice index) the instance occupies. */
  readonly start: number;
  /** Number of GPU slices (memory slices) it occupies. */
  readonly size: number;
}

/** Media and copy engines of an instance, as the two-line rows of `nvidia-smi mig -lgip` show. */
export interface Engines {
  readonly copyEngines: number | null;
  readonly decoders: number | null;
  readonly encoders: number | null;
  readonly jpeg: number | null;
  readonly ofa: number | null;
}

/** Fields of a profile that no real output or NVIDIA table confirms (taken by analogy, flagged). */
export type UnverifiedField = 'id' | 'placements' | 'maxCount' | 'engines';

/** One GPU instance profile of one GPU model. */
export interface GiProfile extends Engines {
  /** Name without the `MIG ` prefix: `1g.5gb`, `1g.5gb+me`, `1g.24gb+gfx`, `2g.48gb-me`. */
  readonly name: string;
  /** NVML GPU instance profile ID as `nvidia-smi mig -lgip` prints it (column `ID`); null if unknown. */
  readonly id: number | null;
  /** Compute (SM) slices: the `Ng` of the name. */
  readonly computeSlices: number;
  /** Memory slices the instance owns (its placement size in memory-slice units). */
  readonly memorySlices: number;
  /** Memory in GiB as `nvidia-smi mig -lgip` prints it; null where no real output was found. */
  readonly memoryGiB: number | null;
  /** Streaming multiprocessors; null where no real output or NVIDIA table gives the figure. */
  readonly sms: number | null;
  /** Maximum number of instances of this profile on one GPU (the `Total` of `Free/Total`). */
  readonly maxCount: number;
  /** Legal placements, in the order `nvidia-smi mig -lgipp` prints them. */
  readonly placements: readonly Placement[];
  /** Oldest driver branch that offers the profile, where NVIDIA says it came later (e.g. 525). */
  readonly sinceDriver?: number;
  /** Fields taken by analogy with a sibling GPU rather than from a source; empty when all are sourced. */
  readonly unverified: readonly UnverifiedField[];
}

/** One compute instance profile available inside a GPU instance of a given GI profile. */
export interface CiProfile {
  /** Name without `MIG `: `1c.3g.20gb`; the full-size CI carries the GI's name (`3g.20gb`). */
  readonly name: string;
  /** NVML compute instance profile ID (`nvidia-smi mig -lcip`, column `Profile ID`). */
  readonly id: number;
  /** Compute slices of the CI. */
  readonly computeSlices: number;
  /** Whether it is the default CI profile of its GI (marked `*` by `-lcip`). */
  readonly isDefault: boolean;
  /** How many CIs of this profile one GI holds (the `Total` of `-lcip`). */
  readonly maxCount: number;
}

/** A MIG-capable GPU product family sharing one MIG geometry and one set of profiles. */
export interface GpuModel {
  /** Canonical name of the geometry family, used in JSON and messages: `A100-40GB`. */
  readonly name: string;
  /** Product names as `nvidia-smi -L` / `--query-gpu=name` print them. */
  readonly productNames: readonly string[];
  /** PCI device IDs as mig-parted writes them: `0x20B010DE` (device ID then vendor ID 10DE). */
  readonly pciDeviceIds: readonly string[];
  /** Short names accepted on the command line (case-insensitive). */
  readonly aliases: readonly string[];
  readonly architecture: 'Ampere' | 'Hopper' | 'Blackwell';
  /** Total memory in GB as marketed (the `40GB` of the name). */
  readonly memoryGB: number;
  /** SMs of the full GPU with MIG disabled; null where no NVIDIA figure was found. */
  readonly sms: number | null;
  /** Compute (SM) slices with MIG enabled. */
  readonly computeSlices: number;
  /** Memory slices with MIG enabled (8 on A100/H100/B200, 4 on A30 and RTX PRO 6000). */
  readonly memorySlices: number;
  /**
   * Units of the placement scale `nvidia-smi mig -lgipp` uses: equal to memorySlices on most parts,
   * 12 on the RTX PRO 6000 (3 units per memory slice).
   */
  readonly placementUnits: number;
  readonly giProfiles: readonly GiProfile[];
  /** Where the facts came from (document, section, captured output). */
  readonly sources: readonly string[];
  /** Facts that could not be confirmed from a primary source. */
  readonly caveats?: readonly string[];
}
