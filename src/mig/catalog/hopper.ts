import type { GpuModel } from '../types.js';
import { EIGHT_SLICE as E, gi } from './define.js';

const MIG_GUIDE = 'NVIDIA MIG User Guide v580, "Supported MIG Profiles" (docs.nvidia.com/datacenter/tesla/mig-user-guide)';
const MIG_PARTED = 'NVIDIA mig-parted config-default.yaml @ bd7160f4 (device-filter PCI IDs, per-profile maximum counts)';
/** Profile IDs and placements that are only known from sibling Hopper parts. */
const BY_ANALOGY = { unverified: ['id', 'placements'] } as const;
/** Placements that are only known from sibling Hopper parts. */
const PLACEMENTS_BY_ANALOGY = { unverified: ['placements'] } as const;

/**
 * H100 80GB SXM5 and H800 80GB. Rows: a real `nvidia-smi mig -lgip` / `-lgipp` capture on an
 * "NVIDIA H100 80GB HBM3" (published nvidia-smi usage notes, 2024), matching the MIG User Guide's
 * H100 table (Table 7) for engines and counts.
 */
export const H100_80GB: GpuModel = {
  name: 'H100-80GB',
  productNames: ['NVIDIA H100 80GB HBM3', 'NVIDIA H800'],
  // Device 2330 (H100 SXM5 80GB) and 2324 (H800) of mig-parted's H100-80GB group; GH100 parts are 23xx.
  pciDeviceIds: ['0x233010DE', '0x232410DE'],
  aliases: ['H100-80GB', 'H100-SXM5-80GB', 'H100-SXM5', 'H100-SXM', 'H100-80GB-HBM3', 'H800-80GB', 'H800', 'H800-SXM5'],
  architecture: 'Hopper',
  memoryGB: 80,
  sms: 132,
  computeSlices: 7,
  memorySlices: 8,
  placementUnits: 8,
  giProfiles: [
    //  name           ID  GiB    SM  [CE DEC ENC JPEG OFA] max placements
    gi('1g.10gb', 19, 9.75, 16, [1, 1, 0, 1, 0], 7, E.oneSlice),
    gi('1g.10gb+me', 20, 9.75, 16, [1, 1, 0, 1, 1], 1, E.oneSlice),
    gi('1g.20gb', 15, 19.62, 26, [1, 1, 0, 1, 0], 4, E.oneSliceDoubleMemory),
    gi('2g.20gb', 14, 19.62, 32, [2, 2, 0, 2, 0], 3, E.twoSlice),
    gi('3g.40gb', 9, 39.5, 60, [3, 3, 0, 3, 0], 2, E.threeSlice),
    gi('4g.40gb', 5, 39.5, 64, [4, 4, 0, 4, 0], 1, E.fourSlice),
    gi('7g.80gb', 0, 79.25, 132, [8, 7, 0, 7, 1], 1, E.full),
  ],
  sources: [MIG_GUIDE + ', Table 7 (H100)', 'nvidia-smi mig -lgip/-lgipp on an NVIDIA H100 80GB HBM3 (public capture)', MIG_PARTED],
};

/**
 * H100 PCIe 80GB and H800 PCIe: same profile names, counts and engines as the SXM5 part (MIG User
 * Guide Table 7 covers both), but the PCIe part has 114 SMs, so the per-profile SM counts and
 * memory of the SXM5 capture do not carry over; no real `-lgip` capture of a PCIe part was found.
 */
export const H100_PCIE: GpuModel = {
  name: 'H100-PCIE-80GB',
  productNames: ['NVIDIA H100 PCIe', 'NVIDIA H800 PCIe'],
  // Device 2331 (H100 PCIe) and 2322 (H800 PCIe) of mig-parted's H100-80GB group.
  pciDeviceIds: ['0x233110DE', '0x232210DE'],
  aliases: ['H100-PCIE', 'H100-PCIE-80GB', 'H800-PCIE', 'H800-PCIE-80GB'],
  architecture: 'Hopper',
  memoryGB: 80,
  sms: 114,
  computeSlices: 7,
  memorySlices: 8,
  placementUnits: 8,
  giProfiles: [
    gi('1g.10gb', 19, null, null, [1, 1, 0, 1, 0], 7, E.oneSlice, BY_ANALOGY),
    gi('1g.10gb+me', 20, null, null, [1, 1, 0, 1, 1], 1, E.oneSlice, BY_ANALOGY),
    gi('1g.20gb', 15, null, null, [1, 1, 0, 1, 0], 4, E.oneSliceDoubleMemory, BY_ANALOGY),
    gi('2g.20gb', 14, null, null, [2, 2, 0, 2, 0], 3, E.twoSlice, BY_ANALOGY),
    gi('3g.40gb', 9, null, null, [3, 3, 0, 3, 0], 2, E.threeSlice, BY_ANALOGY),
    gi('4g.40gb', 5, null, null, [4, 4, 0, 4, 0], 1, E.fourSlice, BY_ANALOGY),
    gi('7g.80gb', 0, null, null, [8, 7, 0, 7, 1], 1, E.full, BY_ANALOGY),
  ],
  sources: [MIG_GUIDE + ', Table 7 (H100)', MIG_PARTED],
  caveats: ['No real nvidia-smi -lgip output of an H100 PCIe was found: per-profile SMs and memory are unknown; IDs and placements are those of the H100 SXM5.'],
};

/**
 * H100 NVL and H800 NVL, 94GB. Rows: real `nvidia-smi mig -lgip` and `-lgipp` on an H100 NVL
 * (test/fixtures/nvidia-smi/h100-nvl-94gb_lgip_alizeechen11-mig-and-mps.txt and _lgipp_).
 */
export const H100_NVL: GpuModel = {
  name: 'H100-NVL-94GB',
  productNames: ['NVIDIA H100 NVL', 'NVIDIA H800 NVL'],
  pciDeviceIds: ['0x232110DE', '0x233A10DE'],
  aliases: ['H100-NVL', 'H100-NVL-94GB', 'H100-94GB', 'H800-NVL'],
  architecture: 'Hopper',
  memoryGB: 94,
  sms: 132,
  computeSlices: 7,
  memorySlices: 8,
  placementUnits: 8,
  giProfiles: [
    //  name           ID  GiB    SM  [CE DEC ENC JPEG OFA] max placements
    gi('1g.12gb', 19, 10.75, 16, [1, 1, 0, 1, 0], 7, E.oneSlice),
    gi('1g.12gb+me', 20, 10.75, 16, [1, 1, 0, 1, 1], 1, E.oneSlice),
    gi('1g.24gb', 15, 21.62, 26, [1, 1, 0, 1, 0], 4, E.oneSliceDoubleMemory),
    gi('2g.24gb', 14, 21.62, 32, [2, 2, 0, 2, 0], 3, E.twoSlice),
    gi('3g.47gb', 9, 46.38, 60, [3, 3, 0, 3, 0], 2, E.threeSlice),
    gi('4g.47gb', 5, 46.38, 64, [4, 4, 0, 4, 0], 1, E.fourSlice),
    gi('7g.94gb', 0, 93.12, 132, [8, 7, 0, 7, 1], 1, E.full),
  ],
  sources: ['nvidia-smi mig -lgip/-lgipp on an H100 NVL: github alizeechen11 MIG-and-MPS notes (test/fixtures/nvidia-smi)', MIG_PARTED],
};

/**
 * H100 96GB: the Hopper GPU of GH200 (480GB superchip), H100 96GB and PG506-96GB. Rows: real
 * `nvidia-smi mig -lgip` on a GH200 (test/fixtures/nvidia-smi/gh200-96gb_lgip_kf-cuanschutz.txt);
 * placements from the common 8-slice `-lgipp` listing (not captured on this part).
 */
export const H100_96GB: GpuModel = {
  name: 'H100-96GB',
  productNames: ['NVIDIA GH200 480GB', 'NVIDIA H100 96GB HBM3', 'NVIDIA PG506-96GB'],
  // mig-parted's "H100-96GB, PG506-96GB, GH200, H20" group less H20 (0x2329), which has other SMs.
  pciDeviceIds: ['0x234210DE', '0x233D10DE', '0x20B610DE'],
  aliases: ['GH200', 'GH200-96GB', 'GH200-480GB', 'H100-96GB', 'PG506-96GB'],
  architecture: 'Hopper',
  memoryGB: 96,
  sms: 132,
  computeSlices: 7,
  memorySlices: 8,
  placementUnits: 8,
  giProfiles: [
    //  name           ID  GiB    SM  [CE DEC ENC JPEG OFA] max placements
    gi('1g.12gb', 19, 11, 16, [1, 1, 0, 1, 0], 7, E.oneSlice, { unverified: ['placements'] }),
    gi('1g.12gb+me', 20, 11, 16, [1, 1, 0, 1, 1], 1, E.oneSlice, { unverified: ['placements'] }),
    gi('1g.24gb', 15, 23, 26, [1, 1, 0, 1, 0], 4, E.oneSliceDoubleMemory, { unverified: ['placements'] }),
    gi('2g.24gb', 14, 23, 32, [2, 2, 0, 2, 0], 3, E.twoSlice, { unverified: ['placements'] }),
    gi('3g.48gb', 9, 46.5, 60, [3, 3, 0, 3, 0], 2, E.threeSlice, { unverified: ['placements'] }),
    gi('4g.48gb', 5, 46.5, 64, [4, 4, 0, 4, 0], 1, E.fourSlice, { unverified: ['placements'] }),
    gi('7g.96gb', 0, 93, 132, [8, 7, 0, 7, 1], 1, E.full, { unverified: ['placements'] }),
  ],
  sources: ['nvidia-smi mig -lgip on a GH200 (University of Colorado Anschutz Kubeflow notes, test/fixtures/nvidia-smi)', MIG_PARTED],
};

/**
 * H20 96GB: mig-parted gives it the H100-96GB profiles. Its SM count differs from the GH200's, so
 * no per-profile SMs or memory are given; IDs, placements and engines are the H100-96GB's.
 */
export const H20: GpuModel = {
  name: 'H20-96GB',
  productNames: ['NVIDIA H20'],
  pciDeviceIds: ['0x232910DE'],
  aliases: ['H20', 'H20-96GB'],
  architecture: 'Hopper',
  memoryGB: 96,
  sms: null,
  computeSlices: 7,
  memorySlices: 8,
  placementUnits: 8,
  giProfiles: [
    gi('1g.12gb', 19, null, null, [1, 1, 0, 1, 0], 7, E.oneSlice, { unverified: ['id', 'placements', 'engines'] }),
    gi('1g.12gb+me', 20, null, null, [1, 1, 0, 1, 1], 1, E.oneSlice, { unverified: ['id', 'placements', 'engines'] }),
    gi('1g.24gb', 15, null, null, [1, 1, 0, 1, 0], 4, E.oneSliceDoubleMemory, { unverified: ['id', 'placements', 'engines'] }),
    gi('2g.24gb', 14, null, null, [2, 2, 0, 2, 0], 3, E.twoSlice, { unverified: ['id', 'placements', 'engines'] }),
    gi('3g.48gb', 9, null, null, [3, 3, 0, 3, 0], 2, E.threeSlice, { unverified: ['id', 'placements', 'engines'] }),
    gi('4g.48gb', 5, null, null, [4, 4, 0, 4, 0], 1, E.fourSlice, { unverified: ['id', 'placements', 'engines'] }),
    gi('7g.96gb', 0, null, null, [8, 7, 0, 7, 1], 1, E.full, { unverified: ['id', 'placements', 'engines'] }),
  ],
  sources: [MIG_PARTED + ' (all-balanced: H20 shares the H100-96GB profiles)'],
  caveats: ['No real nvidia-smi output of an H20 was found: everything but the profile names and counts is taken from the H100-96GB.'],
};

/**
 * H200 141GB (SXM5) and H200 NVL. Rows: real `nvidia-smi mig -lgip` on an "NVIDIA H200" (device
 * 0x233510DE) pasted in github.com/NVIDIA/mig-parted issue #120 (2024-09-04); engines and counts
 * agree with the MIG User Guide's H200 table (Table 8). No H200 `-lgipp` or H200 NVL `-lgip` capture
 * was found: placements are the common 8-slice ones, and the NVL part is assumed identical (NVIDIA's
 * vGPU docs give it the same profile names).
 */
export const H200: GpuModel = {
  name: 'H200-141GB',
  productNames: ['NVIDIA H200', 'NVIDIA H200 NVL'],
  pciDeviceIds: ['0x233510DE', '0x233B10DE'],
  aliases: ['H200', 'H200-141GB', 'H200-SXM5', 'H200-SXM', 'H200-NVL'],
  architecture: 'Hopper',
  memoryGB: 141,
  sms: 132,
  computeSlices: 7,
  memorySlices: 8,
  placementUnits: 8,
  giProfiles: [
    //  name           ID  GiB     SM  [CE DEC ENC JPEG OFA] max placements
    gi('1g.18gb', 19, 16, 16, [1, 1, 0, 1, 0], 7, E.oneSlice, PLACEMENTS_BY_ANALOGY),
    gi('1g.18gb+me', 20, 16, 16, [1, 1, 0, 1, 1], 1, E.oneSlice, PLACEMENTS_BY_ANALOGY),
    gi('1g.35gb', 15, 32.25, 26, [1, 1, 0, 1, 0], 4, E.oneSliceDoubleMemory, PLACEMENTS_BY_ANALOGY),
    gi('2g.35gb', 14, 32.25, 32, [2, 2, 0, 2, 0], 3, E.twoSlice, PLACEMENTS_BY_ANALOGY),
    gi('3g.71gb', 9, 69.5, 60, [3, 3, 0, 3, 0], 2, E.threeSlice, PLACEMENTS_BY_ANALOGY),
    gi('4g.71gb', 5, 69.5, 64, [4, 4, 0, 4, 0], 1, E.fourSlice, PLACEMENTS_BY_ANALOGY),
    gi('7g.141gb', 0, 139.75, 132, [8, 7, 0, 7, 1], 1, E.full, PLACEMENTS_BY_ANALOGY),
  ],
  sources: [MIG_GUIDE + ', Table 8 (H200)', 'nvidia-smi mig -lgip on an NVIDIA H200: github.com/NVIDIA/mig-parted/issues/120', MIG_PARTED],
  caveats: ['H200 NVL assumed identical to the H200 SXM5 (no real output of the NVL found).'],
};

/**
 * GH200 144G HBM3e. Rows 1g.18gb, 1g.18gb+me, 1g.36gb, 2g.36gb: real `nvidia-smi mig -lgip` pasted
 * in github.com/NVIDIA/mig-parted PR #139 / gpu-operator PR #1057 (2024-10-23). The 3g, 4g and 7g
 * rows of that paste could not be retrieved: their names and counts come from mig-parted's
 * config-default.yaml (all-3g.72gb: 2, all-4g.72gb: 1, all-7g.144gb: 1), IDs by analogy with H200.
 */
export const GH200_144GB: GpuModel = {
  name: 'GH200-144GB',
  productNames: ['NVIDIA GH200 144G HBM3e'],
  pciDeviceIds: ['0x234810DE'],
  aliases: ['GH200-144GB', 'GH200-144G', 'GH200-144G-HBM3E'],
  architecture: 'Hopper',
  memoryGB: 144,
  sms: null,
  computeSlices: 7,
  memorySlices: 8,
  placementUnits: 8,
  giProfiles: [
    //  name           ID  GiB     SM  [CE DEC ENC JPEG OFA] max placements
    gi('1g.18gb', 19, 17.5, 16, [1, 1, 0, 1, 0], 7, E.oneSlice, PLACEMENTS_BY_ANALOGY),
    gi('1g.18gb+me', 20, 17.5, 16, [1, 1, 0, 1, 1], 1, E.oneSlice, PLACEMENTS_BY_ANALOGY),
    gi('1g.36gb', 15, 35.25, 26, [1, 1, 0, 1, 0], 4, E.oneSliceDoubleMemory, PLACEMENTS_BY_ANALOGY),
    gi('2g.36gb', 14, 35.25, 32, [2, 2, 0, 2, 0], 3, E.twoSlice, PLACEMENTS_BY_ANALOGY),
    gi('3g.72gb', 9, null, null, [null, null, null, null, null], 2, E.threeSlice, BY_ANALOGY),
    gi('4g.72gb', 5, null, null, [null, null, null, null, null], 1, E.fourSlice, BY_ANALOGY),
    gi('7g.144gb', 0, null, null, [null, null, null, null, null], 1, E.full, BY_ANALOGY),
  ],
  sources: ['nvidia-smi mig -lgip on a GH200 144G HBM3e: github.com/NVIDIA/mig-parted PR #139 (first four rows)', MIG_PARTED],
  caveats: ['3g.72gb, 4g.72gb, 7g.144gb: memory, SMs and engines unknown; IDs and placements taken from the H200. Full-GPU SM count not found.'],
};
