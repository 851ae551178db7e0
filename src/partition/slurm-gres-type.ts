/**
 * GRES type names as Slurm's `AutoDetect=nvml` makes them, derived from the catalogue. Pure.
 *
 * The rule, from SchedMD/slurm src/plugins/gpu/nvml/gpu_nvml.c (`_nvml_get_device_name`,
 * `_handle_mig`, and the MIG branch of `gpu_p_get_system_gpu_list`):
 * - the GPU's name is `nvmlDeviceGetName` passed through `gpu_common_underscorify_tolower`
 *   (src/plugins/gpu/common/gpu_common.c: lower case, each space made `_`): `NVIDIA A100-SXM4-40GB`
 *   -> `nvidia_a100-sxm4-40gb`. A whole GPU's type is that name.
 * - a MIG device's type starts with the GPU's name cut at its first `-` (`nvidia_a100`,
 *   `nvidia_h100_80gb_hbm3`, `nvidia_h200`, `nvidia_b200`), then:
 *   - Slurm 21.08 to 23.02.5: `_<GI slice count>g.<roundl(memorySizeMB / 1024)>gb` from the MIG
 *     device's `nvmlDeviceGetAttributes` (GPU instance slices and memory). The compute-instance
 *     size and `+me` do not appear. A100-80GB `3g.40gb` (39.25 GiB) is `nvidia_a100_3g.39gb`.
 *   - Slurm 23.02.6 and later (commit 04f0e4c3d7 "Get mig profile name from nvidia if possible",
 *     first tagged slurm-23-02-6-1): the MIG device's own NVML name, underscorified, from its
 *     `mig_` on (`NVIDIA A100-SXM4-80GB MIG 3g.40gb` -> `_3g.40gb`), that is NVIDIA's profile
 *     name: `nvidia_a100_3g.40gb`, `nvidia_a100_1c.3g.20gb`, `nvidia_h100_80gb_hbm3_1g.10gb+me`.
 *     (Only when NVML gives no such name does it fall back to the attributes, `Nc.` added and,
 *     from 23.11, the memory rounded up; not modelled here.)
 * - slurm.conf's configured type must be a case-insensitive substring of the detected one
 *   (`_normalize_sys_gres_types` / `_find_type_in_gres_list` in src/plugins/gres/gpu/gres_gpu.c;
 *   doc/html/gres.shtml "MIG Management"): otherwise slurmd logs "Could not find an unused
 *   configuration record with a GRES type that is a substring of system device" and drops the type,
 *   and jobs asking for it stay pending (BadConstraints).
 * The memory of a GI profile is the catalogue's `memoryGiB` (`nvidia-smi mig -lgip`, which prints
 * the same memorySizeMB over 1024; an A100-80GB 3g.40gb is 39.25 GiB, and CUDA reports such a slice
 * as 42144366592 bytes, the same 40192 MiB).
 *
 * Lines, at SchedMD/slurm commit 284c3b95f0: src/plugins/gpu/nvml/gpu_nvml.c 758-767
 * (`_nvml_get_device_name`), 1250-1276 (`_handle_mig`: the `mig_` name, else the attributes),
 * 1455-1467 (the GPU name cut at its first `-`), 1491-1510 (type = that prefix + the MIG suffix);
 * src/plugins/gpu/common/gpu_common.c 286-293 (`gpu_common_underscorify_tolower`);
 * src/plugins/gres/gpu/gres_gpu.c 141-156 and 182-229 (substring match of configured types);
 * the 23.02.5 rule is the `-` side of commit 04f0e4c3d7's diff to `_handle_mig`.
 */
import { badInput } from '../errors.js';
import { resolveGpuModel } from '../mig/catalog/index.js';
import type { GpuModel } from '../mig/types.js';

/** How a Slurm version names MIG types: by slices and rounded memory, or by NVIDIA's profile name. */
export type SlurmMigNaming = 'attributes' | 'device-name';

export interface SlurmVersion {
  readonly major: number;
  readonly minor: number;
  readonly micro: number;
}

/** `slurm 22.05.8`, `slurm-wlm 23.11.4`, `22.05.8` -> the version; null when none is there. */
export function parseSlurmVersion(text: string): SlurmVersion | null {
  const m = /(\d+)\.(\d+)(?:\.(\d+))?/.exec(text);
  return m ? { major: Number(m[1]), minor: Number(m[2]), micro: Number(m[3] ?? 0) } : null;
}

export function formatSlurmVersion(v: SlurmVersion): string {
  return `${v.major}.${String(v.minor).padStart(2, '0')}.${v.micro}`;
}

function atLeast(v: SlurmVersion, major: number, minor: number, micro: number): boolean {
  return v.major !== major ? v.major > major : v.minor !== minor ? v.minor > minor : v.micro >= micro;
}

/** The MIG naming of a Slurm version (23.02.6 switched to NVIDIA's names); unknown: the current one. */
export function migNamingOf(version: SlurmVersion | null): SlurmMigNaming {
  return version === null || atLeast(version, 23, 2, 6) ? 'device-name' : 'attributes';
}

/**
 * Whether `scontrol reconfigure` re-reads GRES changes on its own. From 23.11 it starts new daemon
 * processes (doc/man/man1/scontrol.1, `reconfigure`); before, slurmctld refuses a changed gpu Count
 * of a node whose GRES have files ("Attempt to change gres/gpu Count ... invalid with File
 * configuration", `_node_reconfig_test` in src/interfaces/gres.c), and sets up new TRES only when
 * it starts (doc/man/man5/slurm.conf.5, AccountingStorageTRES).
 */
export function reconfigureRestarts(version: SlurmVersion | null): boolean {
  return version !== null && atLeast(version, 23, 11, 0);
}

/** `gpu_common_underscorify_tolower`: lower case, spaces made `_`. */
export function underscorifyLower(name: string): string {
  return name.toLowerCase().replaceAll(' ', '_');
}

/** The type of a whole GPU: `NVIDIA A100-SXM4-40GB` -> `nvidia_a100-sxm4-40gb`. */
export function slurmGpuType(productName: string): string {
  return underscorifyLower(productName.trim());
}

/** The start of a MIG type: the GPU's type cut at its first `-` (`nvidia_a100`, `nvidia_h200`). */
export function slurmMigPrefix(productName: string): string {
  return slurmGpuType(productName).split('-')[0]!;
}

/** `1c.3g.20gb+me` -> ci 1, g 3, gb 20, suffix `+me`, gi `3g.20gb+me`. */
function parseProfile(profile: string): { ci: number | null; g: number; gb: number; gi: string } | null {
  const m = /^(?:(\d+)c\.)?((\d+)g\.(\d+)gb(?:[+-][\w.]+)?)$/.exec(profile.trim().toLowerCase());
  if (!m) return null;
  return { ci: m[1] === undefined ? null : Number(m[1]), g: Number(m[3]), gb: Number(m[4]), gi: m[2]! };
}

export interface MigGresType {
  readonly type: string;
  /** Why the name may differ from Slurm's (no measured memory for the profile), or null. */
  readonly caveat: string | null;
}

/**
 * The GRES type AutoDetect=nvml gives a MIG device of `profile` (mig-parted name: `3g.40gb`,
 * `1g.10gb+me`, `1c.3g.20gb`) on a GPU named `productName`, under `naming`.
 * Throws a bad-input error for a name that is not a MIG profile.
 */
export function slurmMigGresType(productName: string, profile: string, naming: SlurmMigNaming, model?: GpuModel | null): MigGresType {
  const p = parseProfile(profile);
  if (p === null) throw badInput(`'${profile}' is not a MIG profile name (such as 3g.40gb, 1g.10gb+me or 1c.3g.20gb)`);
  const prefix = slurmMigPrefix(productName);
  if (naming === 'device-name') return { type: `${prefix}_${profile.trim().toLowerCase()}`, caveat: null };
  let m: GpuModel | null = model ?? null;
  if (m === null) {
    try {
      m = resolveGpuModel(productName);
    } catch {
      m = null;
    }
  }
  const baseGi = p.gi.replace(/[+-].*$/, '');
  const gib = m?.giProfiles.find((x) => x.name === p.gi)?.memoryGiB ?? m?.giProfiles.find((x) => x.name === baseGi)?.memoryGiB ?? null;
  if (gib === null) {
    return { type: `${prefix}_${p.g}g.${p.gb}gb`, caveat: `no measured memory size for ${p.gi} on ${productName}: its Slurm type uses ${p.gb}gb from the profile name, which NVML may round differently` };
  }
  // roundl: halves away from zero, as Math.round does for positive numbers.
  return { type: `${prefix}_${p.g}g.${Math.round(gib)}gb`, caveat: null };
}
