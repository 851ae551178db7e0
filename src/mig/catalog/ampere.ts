import type { GpuModel } from '../types.js';
import { EIGHT_SLICE as E, FOUR_SLICE as F, gi } from './define.js';

const MIG_GUIDE = 'NVIDIA MIG User Guide v580, "Supported MIG Profiles" (docs.nvidia.com/datacenter/tesla/mig-user-guide)';
const MIG_PARTED = 'NVIDIA mig-parted config-default.yaml @ bd7160f4 (device-filter PCI IDs), ../shared/data/mig-parted';

/**
 * A30 24GB. Rows: `nvidia-smi mig -lgip` and `-lgipp` captured on an A30
 * (test/fixtures/nvidia-smi/a30-24gb_lgip-fully-allocated_*, a30-24gb_lgipp_*, Summer-Lo/Docker_configuration
 * @ c4256b90), cross-checked with the MIG User Guide's A30 table (Table 5). `2g.12gb+me` (ID 6) is
 * R525+ and absent from that capture: its ID, memory and SMs follow the guide's A30 table and the
 * sibling `2g.12gb` row; its placements are assumed equal to `2g.12gb`'s.
 */
export const A30: GpuModel = {
  name: 'A30-24GB',
  productNames: ['NVIDIA A30', 'A30'],
  pciDeviceIds: ['0x20B710DE'],
  aliases: ['A30', 'A30-24GB', 'A30-PCIE-24GB'],
  architecture: 'Ampere',
  memoryGB: 24,
  sms: 56,
  computeSlices: 4,
  memorySlices: 4,
  placementUnits: 4,
  giProfiles: [
    //  name          ID  GiB    SM  [CE DEC ENC JPEG OFA] max placements
    gi('1g.6gb', 14, 5.81, 14, [1, 1, 0, 0, 0], 4, F.oneSlice),
    gi('1g.6gb+me', 21, 5.81, 14, [1, 1, 0, 1, 1], 1, F.oneSlice, { sinceDriver: 470 }),
    gi('2g.12gb', 5, 11.69, 28, [2, 2, 0, 0, 0], 2, F.twoSlice),
    gi('2g.12gb+me', 6, 11.69, 28, [2, 2, 0, 1, 1], 1, F.twoSlice, { sinceDriver: 525, unverified: ['placements'] }),
    gi('4g.24gb', 0, 23.5, 56, [4, 4, 0, 1, 1], 1, F.full),
  ],
  sources: [
    MIG_GUIDE + ', Table 5 (A30)',
    'nvidia-smi mig -lgip/-lgipp on an A30: github.com/Summer-Lo/Docker_configuration @ c4256b90, 000-MIG/README.md',
    MIG_PARTED,
  ],
};

/**
 * A100 40GB (SXM4 and PCIe) and A800 40GB: one MIG geometry. Rows: `nvidia-smi mig -lgip` on an
 * A100-PCIE-40GB, R510 (test/fixtures/nvidia-smi/a100-pcie-40gb_lgip-r510-esxi_*), and the R525
 * `-lgipp` listing of the MIG User Guide (a100-40gb_lgipp-r525_*). Profile 15 (`1g.10gb`, R525+) is
 * not in the R510 capture; its row comes from a later-driver capture that prints 9.62 GiB for it
 * (github `gpu-job-charts` README, "GPU Instance Profiles"), which also shows that newer drivers
 * print slightly less memory for the other profiles (2g 9.62, 3g/4g 19.50, 7g 39.25).
 * Before R510 the driver refused `4g.20gb` together with `3g.20gb` (MIG User Guide, A100 note).
 */
export const A100_40GB: GpuModel = {
  name: 'A100-40GB',
  productNames: ['NVIDIA A100-SXM4-40GB', 'NVIDIA A100-PCIE-40GB', 'A100-SXM4-40GB', 'A100-PCIE-40GB', 'NVIDIA A800 40GB Active'],
  // A100-40GB, A800-40GB group of mig-parted's all-balanced config.
  pciDeviceIds: ['0x20B010DE', '0x20B110DE', '0x20F110DE', '0x20F610DE'],
  aliases: ['A100-40GB', 'A100-SXM4-40GB', 'A100-PCIE-40GB', 'A100-SXM-40GB', 'A800-40GB', 'A800-40GB-ACTIVE'],
  architecture: 'Ampere',
  memoryGB: 40,
  sms: 108,
  computeSlices: 7,
  memorySlices: 8,
  placementUnits: 8,
  giProfiles: [
    //  name          ID  GiB    SM  [CE DEC ENC JPEG OFA] max placements
    gi('1g.5gb', 19, 4.75, 14, [1, 0, 0, 0, 0], 7, E.oneSlice),
    gi('1g.5gb+me', 20, 4.75, 14, [1, 1, 0, 1, 1], 1, E.oneSlice),
    gi('1g.10gb', 15, 9.62, 14, [1, 1, 0, 0, 0], 4, E.oneSliceDoubleMemory, { sinceDriver: 525 }),
    gi('2g.10gb', 14, 9.75, 28, [2, 1, 0, 0, 0], 3, E.twoSlice),
    gi('3g.20gb', 9, 19.62, 42, [3, 2, 0, 0, 0], 2, E.threeSlice),
    gi('4g.20gb', 5, 19.62, 56, [4, 2, 0, 0, 0], 1, E.fourSlice),
    gi('7g.40gb', 0, 39.5, 98, [7, 5, 0, 1, 1], 1, E.full),
  ],
  sources: [
    MIG_GUIDE + ', Table 6 (A100)',
    'nvidia-smi mig -lgip on an A100-PCIE-40GB, R510: yokatayama e-learning capture (test/fixtures/nvidia-smi)',
    'nvidia-smi mig -lgipp, R525: MIG User Guide "Getting Started with MIG"',
    MIG_PARTED,
  ],
  caveats: ['Drivers before R510 reject 4g.20gb together with 3g.20gb; migpool assumes R510 or newer.'],
};

/**
 * A100 80GB (SXM4 and PCIe) and A800 80GB. Rows: `nvidia-smi mig -lgip` on an A100 80GB PCIe,
 * R515 (a real capture published in the GPU Operator's Chinese-language MIG guide), with the
 * placements of the A100 `-lgipp` listing (same 8-slice geometry). Profile 15 (`1g.20gb`, R525+) is
 * named by mig-parted and by the MIG User Guide; no real `-lgip` line for it was found, so its
 * memory is left unknown.
 */
export const A100_80GB: GpuModel = {
  name: 'A100-80GB',
  productNames: ['NVIDIA A100-SXM4-80GB', 'NVIDIA A100 80GB PCIe', 'A100-SXM4-80GB', 'A100 80GB PCIe', 'NVIDIA A800-SXM4-80GB', 'NVIDIA A800 80GB PCIe'],
  // The GA100 members (device IDs 20xx) of mig-parted's H100-80GB/A100-80GB group.
  pciDeviceIds: ['0x20B210DE', '0x20B510DE', '0x20F310DE', '0x20F510DE'],
  aliases: ['A100-80GB', 'A100-SXM4-80GB', 'A100-PCIE-80GB', 'A100-SXM-80GB', 'A800-80GB', 'A800-SXM4-80GB', 'A800-PCIE-80GB'],
  architecture: 'Ampere',
  memoryGB: 80,
  sms: 108,
  computeSlices: 7,
  memorySlices: 8,
  placementUnits: 8,
  giProfiles: [
    //  name          ID  GiB    SM  [CE DEC ENC JPEG OFA] max placements
    gi('1g.10gb', 19, 9.5, 14, [1, 0, 0, 0, 0], 7, E.oneSlice),
    gi('1g.10gb+me', 20, 9.5, 14, [1, 1, 0, 1, 1], 1, E.oneSlice),
    gi('1g.20gb', 15, null, 14, [1, 1, 0, 0, 0], 4, E.oneSliceDoubleMemory, { sinceDriver: 525 }),
    gi('2g.20gb', 14, 19.5, 28, [2, 1, 0, 0, 0], 3, E.twoSlice),
    gi('3g.40gb', 9, 39.25, 42, [3, 2, 0, 0, 0], 2, E.threeSlice),
    gi('4g.40gb', 5, 39.25, 56, [4, 2, 0, 0, 0], 1, E.fourSlice),
    gi('7g.80gb', 0, 79, 98, [7, 5, 0, 1, 1], 1, E.full),
  ],
  sources: [
    MIG_GUIDE + ', Table 6 (A100)',
    'nvidia-smi mig -lgip on an A100 80GB PCIe, R515: GPU Operator MIG guide (zh), real capture',
    MIG_PARTED,
  ],
};
