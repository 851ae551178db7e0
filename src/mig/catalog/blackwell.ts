import type { GpuModel } from '../types.js';
import { EIGHT_SLICE as E, gi } from './define.js';

const MIG_GUIDE = 'NVIDIA MIG User Guide v580, "Supported MIG Profiles" (docs.nvidia.com/datacenter/tesla/mig-user-guide)';
const MIG_PARTED = 'NVIDIA mig-parted config-default.yaml @ bd7160f4 (device-filter PCI IDs, per-profile maximum counts)';
const NONE = [null, null, null, null, null] as const;
/** Known from NVIDIA's tables or mig-parted by name and count only. */
const NAME_ONLY = { unverified: ['id', 'placements', 'engines'] } as const;
const PLACEMENTS_BY_ANALOGY = { unverified: ['placements'] } as const;

/**
 * B200 (180GB). Rows 1g.23gb .. 2g.45gb: real `nvidia-smi mig -lgip` pasted in
 * github.com/NVIDIA/mig-parted PR #166 / gpu-operator PR #1242 (Jan 2025; a March 2025 driver prints
 * 20.50 GiB for the 1g profiles, PR #187). The 3g, 4g and 7g rows were not retrievable: names and
 * counts from the MIG User Guide's B200 table (Table 9) and mig-parted. That table's engine columns
 * disagree with the real 2g row (it says 1 NVDEC and 3 CE where nvidia-smi prints 2 and 4), so its
 * engine figures are not used.
 */
export const B200: GpuModel = {
  name: 'B200-180GB',
  productNames: ['NVIDIA B200'],
  pciDeviceIds: ['0x290110DE'],
  aliases: ['B200', 'B200-180GB', 'HGX-B200', 'DGX-B200'],
  architecture: 'Blackwell',
  memoryGB: 180,
  sms: null,
  computeSlices: 7,
  memorySlices: 8,
  placementUnits: 8,
  giProfiles: [
    //  name           ID  GiB     SM  [CE DEC ENC JPEG OFA] max placements
    gi('1g.23gb', 19, 22, 18, [2, 1, 0, 1, 0], 7, E.oneSlice, PLACEMENTS_BY_ANALOGY),
    gi('1g.23gb+me', 20, 22, 18, [2, 1, 0, 1, 1], 1, E.oneSlice, PLACEMENTS_BY_ANALOGY),
    gi('1g.45gb', 15, 44.25, 30, [2, 1, 0, 1, 0], 4, E.oneSliceDoubleMemory, PLACEMENTS_BY_ANALOGY),
    gi('2g.45gb', 14, 44.25, 36, [4, 2, 0, 2, 0], 3, E.twoSlice, PLACEMENTS_BY_ANALOGY),
    gi('3g.90gb', 9, null, null, NONE, 2, E.threeSlice, NAME_ONLY),
    gi('4g.90gb', 5, null, null, NONE, 1, E.fourSlice, NAME_ONLY),
    gi('7g.180gb', 0, null, null, NONE, 1, E.full, NAME_ONLY),
  ],
  sources: [MIG_GUIDE + ', Table 9 (B200)', 'nvidia-smi mig -lgip on a B200: github.com/NVIDIA/mig-parted PR #166 (first four rows)', MIG_PARTED],
  caveats: ['3g.90gb, 4g.90gb, 7g.180gb: memory, SMs and engines unknown; IDs and placements by analogy with Hopper.'],
};

/**
 * GB200 (186GB per GPU). Rows 1g.23gb .. 2g.47gb: real `nvidia-smi mig -lgip` from production
 * boards pasted in github.com/NVIDIA/mig-parted issue #227 (2025-08); pre-production HGX GB200 boards
 * named the 1g profile `1g.24gb` (gpu-operator PR #1303). 3g/4g/7g names and counts: mig-parted's
 * config-default.yaml (all-3g.93gb, all-4g.93gb, all-7g.186gb). mig-parted also lists 3g.95gb,
 * 4g.95gb and 7g.189gb without naming a GPU; they are not catalogued.
 */
export const GB200: GpuModel = {
  name: 'GB200-186GB',
  productNames: ['NVIDIA GB200'],
  pciDeviceIds: ['0x294110DE'],
  aliases: ['GB200', 'GB200-186GB', 'GB200-HGX', 'GB200-NVL72'],
  architecture: 'Blackwell',
  memoryGB: 186,
  sms: null,
  computeSlices: 7,
  memorySlices: 8,
  placementUnits: 8,
  giProfiles: [
    //  name           ID  GiB     SM  [CE DEC ENC JPEG OFA] max placements
    gi('1g.23gb', 19, 22, 18, [2, 1, 0, 1, 0], 7, E.oneSlice, PLACEMENTS_BY_ANALOGY),
    gi('1g.23gb+me', 20, 22, 18, [2, 1, 0, 1, 1], 1, E.oneSlice, PLACEMENTS_BY_ANALOGY),
    gi('1g.47gb', 15, 45.5, 32, [2, 1, 0, 1, 0], 4, E.oneSliceDoubleMemory, PLACEMENTS_BY_ANALOGY),
    gi('2g.47gb', 14, 45.5, 38, [4, 2, 0, 2, 0], 3, E.twoSlice, PLACEMENTS_BY_ANALOGY),
    gi('3g.93gb', 9, null, null, NONE, 2, E.threeSlice, NAME_ONLY),
    gi('4g.93gb', 5, null, null, NONE, 1, E.fourSlice, NAME_ONLY),
    gi('7g.186gb', 0, null, null, NONE, 1, E.full, NAME_ONLY),
  ],
  sources: ['nvidia-smi mig -lgip on GB200: github.com/NVIDIA/mig-parted issue #227, gpu-operator PR #1303', MIG_PARTED],
  caveats: [
    '3g.93gb, 4g.93gb, 7g.186gb: memory, SMs and engines unknown; IDs and placements by analogy with Hopper.',
    'The 2g.47gb engines of the real capture were truncated after DEC; CE/JPEG taken as on B200.',
  ],
};

/**
 * B300 (288GB). Only mig-parted names its profiles (config-default.yaml: all-1g.34gb: 7,
 * all-1g.34gb.me: 1, all-1g.67gb: 4, all-2g.67gb: 3, all-3g.135gb: 2, all-4g.135gb: 1,
 * all-7g.269gb: 1, all-balanced for 0x3182). No real nvidia-smi MIG output was found.
 * Product name from NVIDIA's Linux driver README (device 3182).
 */
export const B300: GpuModel = {
  name: 'B300-288GB',
  productNames: ['NVIDIA B300 SXM6 AC'],
  pciDeviceIds: ['0x318210DE'],
  aliases: ['B300', 'B300-288GB', 'B300-SXM6'],
  architecture: 'Blackwell',
  memoryGB: 288,
  sms: null,
  computeSlices: 7,
  memorySlices: 8,
  placementUnits: 8,
  giProfiles: [
    gi('1g.34gb', 19, null, null, NONE, 7, E.oneSlice, NAME_ONLY),
    gi('1g.34gb+me', 20, null, null, NONE, 1, E.oneSlice, NAME_ONLY),
    gi('1g.67gb', 15, null, null, NONE, 4, E.oneSliceDoubleMemory, NAME_ONLY),
    gi('2g.67gb', 14, null, null, NONE, 3, E.twoSlice, NAME_ONLY),
    gi('3g.135gb', 9, null, null, NONE, 2, E.threeSlice, NAME_ONLY),
    gi('4g.135gb', 5, null, null, NONE, 1, E.fourSlice, NAME_ONLY),
    gi('7g.269gb', 0, null, null, NONE, 1, E.full, NAME_ONLY),
  ],
  sources: [MIG_PARTED, 'NVIDIA Linux driver README, supported GPUs (product name)'],
  caveats: ['Only names and counts are sourced (mig-parted); IDs and placements by analogy with B200/Hopper; memory, SMs and engines unknown.'],
};

/**
 * GB300 (288GB per GPU). Only mig-parted names its profiles (all-1g.35gb for 0x31C2: 7,
 * all-1g.35gb.me: 1, all-1g.70gb: 4, all-2g.70gb: 3, all-3g.139gb: 2, all-4g.139gb: 1,
 * all-7g.278gb: 1, all-balanced for 0x31C2). No real nvidia-smi MIG output was found.
 */
export const GB300: GpuModel = {
  name: 'GB300-288GB',
  productNames: ['NVIDIA GB300'],
  pciDeviceIds: ['0x31C210DE'],
  aliases: ['GB300', 'GB300-288GB', 'GB300-NVL72'],
  architecture: 'Blackwell',
  memoryGB: 288,
  sms: null,
  computeSlices: 7,
  memorySlices: 8,
  placementUnits: 8,
  giProfiles: [
    gi('1g.35gb', 19, null, null, NONE, 7, E.oneSlice, NAME_ONLY),
    gi('1g.35gb+me', 20, null, null, NONE, 1, E.oneSlice, NAME_ONLY),
    gi('1g.70gb', 15, null, null, NONE, 4, E.oneSliceDoubleMemory, NAME_ONLY),
    gi('2g.70gb', 14, null, null, NONE, 3, E.twoSlice, NAME_ONLY),
    gi('3g.139gb', 9, null, null, NONE, 2, E.threeSlice, NAME_ONLY),
    gi('4g.139gb', 5, null, null, NONE, 1, E.fourSlice, NAME_ONLY),
    gi('7g.278gb', 0, null, null, NONE, 1, E.full, NAME_ONLY),
  ],
  sources: [MIG_PARTED, 'NVIDIA Linux driver README, supported GPUs (product name)'],
  caveats: ['Only names and counts are sourced (mig-parted); IDs and placements by analogy with B200/Hopper; memory, SMs and engines unknown.'],
};

/**
 * RTX PRO 6000 Blackwell (96GB): 4 compute slices over 12 placement units. Rows: real
 * `nvidia-smi mig -lgip` and `-lgipp` on an RTX PRO 6000 Blackwell Server Edition, driver 610.43
 * (published blog "Slicing GPUs in Kubernetes with NVIDIA MIG", 2026; the same IDs, SMs and memory
 * appear in real pastes in GoogleCloudPlatform/container-engine-accelerators PR #563 and
 * bottlerocket-kernel-kit PR #300; an older driver printed 23.12/46.50 GiB), matching the MIG User
 * Guide's RTX PRO 6000 table (Table 11) for counts and media engines.
 */
export const RTX_PRO_6000: GpuModel = {
  name: 'RTX-PRO-6000',
  productNames: [
    'NVIDIA RTX PRO 6000 Blackwell Server Edition',
    'NVIDIA RTX PRO 6000 Blackwell Workstation Edition',
    'NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition',
  ],
  pciDeviceIds: ['0x2BB510DE'],
  aliases: ['RTX-PRO-6000', 'RTX-PRO-6000-BLACKWELL', 'RTX-PRO-6000-BLACKWELL-SERVER-EDITION', 'RTX6000-PRO'],
  architecture: 'Blackwell',
  memoryGB: 96,
  sms: 188,
  computeSlices: 4,
  memorySlices: 4,
  placementUnits: 12,
  giProfiles: [
    //  name                ID  GiB     SM  [CE DEC ENC JPEG OFA] max placements
    gi('1g.24gb', 14, 23.62, 46, [1, 1, 1, 1, 0], 4, '{0,3,6,9}:3'),
    gi('1g.24gb+me', 21, 23.62, 46, [1, 1, 1, 1, 1], 1, '{0,3,6,9}:3'),
    gi('1g.24gb+gfx', 47, 23.62, 46, [1, 1, 1, 1, 0], 4, '{0,3,6,9}:3'),
    gi('1g.24gb+me.all', 65, 23.62, 46, [1, 4, 4, 4, 1], 1, '{0,3,6,9}:3'),
    gi('1g.24gb-me', 67, 23.62, 46, [1, 0, 0, 0, 0], 4, '{0,3,6,9}:3'),
    gi('2g.48gb', 5, 47.38, 94, [2, 2, 2, 2, 0], 2, '{0,6}:6'),
    gi('2g.48gb+gfx', 35, 47.38, 94, [2, 2, 2, 2, 0], 2, '{0,6}:6'),
    gi('2g.48gb+me.all', 64, 47.38, 94, [2, 4, 4, 4, 1], 1, '{0,6}:6'),
    gi('2g.48gb-me', 66, 47.38, 94, [2, 0, 0, 0, 0], 2, '{0,6}:6'),
    gi('4g.96gb', 0, 95.12, 188, [4, 4, 4, 4, 1], 1, '{0}:12'),
    gi('4g.96gb+gfx', 32, 95.12, 188, [4, 4, 4, 4, 1], 1, '{0}:12'),
  ],
  sources: [
    MIG_GUIDE + ', Table 11 (RTX PRO 6000)',
    'nvidia-smi mig -lgip/-lgipp on an RTX PRO 6000 Blackwell Server Edition (public captures, see comment)',
    MIG_PARTED,
  ],
  caveats: ['Placements count 12 units (3 per memory slice), as -lgipp prints them.'],
};
