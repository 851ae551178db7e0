import { parsePlacementList } from '../placement-text.js';
import type { GiProfile, UnverifiedField } from '../types.js';

/** Engines as the two-line rows of `nvidia-smi mig -lgip` show them: CE, DEC, ENC, JPEG, OFA. */
export type EngineRow = readonly [
  ce: number | null,
  dec: number | null,
  enc: number | null,
  jpeg: number | null,
  ofa: number | null,
];

/** Optional extras of a profile row. */
export interface ProfileExtras {
  readonly sinceDriver?: number;
  readonly unverified?: readonly UnverifiedField[];
}

/**
 * One GI profile from a table row, in the column order of `nvidia-smi mig -lgip` plus the
 * placements of `-lgipp`: name, ID, memory GiB, SMs, engines, maximum count, placements.
 */
export function gi(
  name: string,
  id: number | null,
  memoryGiB: number | null,
  sms: number | null,
  engines: EngineRow,
  maxCount: number,
  placementText: string,
  extras: ProfileExtras = {},
): GiProfile {
  const placements = parsePlacementList(placementText);
  const slices = /^(\d+)g\./.exec(name);
  if (!placements || placements.length === 0 || !slices) {
    throw new Error(`catalogue row ${name}: bad name or placements '${placementText}'`);
  }
  const [ce, dec, enc, jpeg, ofa] = engines;
  return {
    name,
    id,
    computeSlices: Number(slices[1]),
    memorySlices: placements[0]?.size ?? 0,
    memoryGiB,
    sms,
    copyEngines: ce,
    decoders: dec,
    encoders: enc,
    jpeg,
    ofa,
    maxCount,
    placements,
    ...(extras.sinceDriver !== undefined ? { sinceDriver: extras.sinceDriver } : {}),
    unverified: extras.unverified ?? [],
  };
}

/**
 * The placement lists shared by every 7-compute / 8-memory-slice GPU (A100, H100, H200, B200 and
 * their kin), as `nvidia-smi mig -lgipp` prints them on an A100-40GB (MIG User Guide v580, "Getting
 * started", R525 listing) and an H100 NVL (test/fixtures/nvidia-smi/h100-nvl-94gb_lgipp_*).
 */
export const EIGHT_SLICE = {
  oneSlice: '{0,1,2,3,4,5,6}:1',
  oneSliceDoubleMemory: '{0,2,4,6}:2',
  twoSlice: '{0,2,4}:2',
  threeSlice: '{0,4}:4',
  fourSlice: '{0}:4',
  full: '{0}:8',
} as const;

/**
 * Placement lists of 4-compute / 4-memory-slice GPUs, as `nvidia-smi mig -lgipp` prints them on an
 * A30 (test/fixtures/nvidia-smi/a30-24gb_lgipp_summer-lo-docker-configuration.txt).
 */
export const FOUR_SLICE = {
  oneSlice: '{0,1,2,3}:1',
  twoSlice: '{0,2}:2',
  full: '{0}:4',
} as const;
