import type { CiProfile, GiProfile } from './types.js';

/**
 * Compute-instance sizes a GPU instance of N compute slices offers. From `nvidia-smi mig -lcip` as
 * the MIG User Guide prints it: a 4g GI lists 1c, 2c and 4g only (no 3c, although the guide's prose
 * mentions one); a 3g GI lists 1c, 2c, 3g (real A100-40GB listing); a 2g GI 1c, 2g
 * (test/fixtures/nvidia-smi/a100-pcie-40gb_lcip-all-gis_*); a 7g GI 1c, 2c, 3c, 4c, 7g.
 */
const CI_SIZES: Readonly<Record<number, readonly number[]>> = {
  1: [1],
  2: [1, 2],
  3: [1, 2, 3],
  4: [1, 2, 4],
  7: [1, 2, 3, 4, 7],
};

/**
 * NVML compute instance profile IDs by compute-slice count (`NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE`
 * = 0 ... `_7_SLICE` = 4), as `-lcip` prints them (e.g. `MIG 2g.10gb  1*`, `MIG 4g.20gb  3*`).
 */
const CI_PROFILE_ID: Readonly<Record<number, number>> = { 1: 0, 2: 1, 3: 2, 4: 3, 7: 4 };

/**
 * The full-size CI of a one-slice GI with two memory slices (`1g.24gb` on GH200, `1g.10gb` on
 * A100-40GB, ...) is `NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1` = 7: `nvidia-smi mig -cgi 15 -C`
 * on a GH200 prints "using profile MIG 1g.24gb (ID  7)" (test/fixtures/nvidia-smi/
 * gh200-96gb_cgi-C-success-3x1g.24gb_kf-cuanschutz.txt). Seen on GH200 only; assumed for its kin.
 */
const ONE_SLICE_REV1 = 7;

/** The compute instance profiles of a GPU instance profile, the full-size (default) one last. */
export function ciProfilesOf(gi: GiProfile): CiProfile[] {
  const sizes = CI_SIZES[gi.computeSlices] ?? [gi.computeSlices];
  const doubleMemory = gi.computeSlices === 1 && gi.memorySlices === 2;
  return sizes.map((k) => ({
    name: k === gi.computeSlices ? gi.name : `${k}c.${gi.name}`,
    id: doubleMemory ? ONE_SLICE_REV1 : (CI_PROFILE_ID[k] ?? -1),
    computeSlices: k,
    isDefault: k === gi.computeSlices,
    maxCount: Math.floor(gi.computeSlices / k),
  }));
}
