import { MISO_ROWS } from './calibration/miso-data.js';
import { REFERENCE_GPU } from './calibrated.js';

/** Floor of any extrapolation: a CUDA context and a framework take about this much. */
const MIN_JOB_GIB = 0.5;

function profileMemory(profile: string): number {
  const p = REFERENCE_GPU.giProfiles.find((g) => g.name === profile);
  if (p?.memoryGiB == null) throw new Error(`A100-40GB profile ${profile} has no memory figure`);
  return p.memoryGiB;
}

/**
 * Memory one job of MISO model `model` needs at `batch`, GiB, as a bound read off the calibration:
 * at each measured batch, the memory of the smallest A100-40GB instance it ran on (a row missing for
 * a smaller instance means it did not fit there); between and beyond measured batches, linear in
 * batch through the two nearest measured ones. It can overstate the need by up to one instance size,
 * and understate it beyond the largest measured batch.
 */
export function misoMemoryGiB(model: string, batch: number): number {
  const byBatch = new Map<number, number>();
  for (const r of MISO_ROWS) {
    if (r.model !== model) continue;
    const m = profileMemory(r.profile);
    byBatch.set(r.batch, Math.min(byBatch.get(r.batch) ?? Infinity, m));
  }
  const pts = [...byBatch.entries()].sort((a, b) => a[0] - b[0]);
  const first = pts[0];
  if (!first) throw new Error(`no MISO rows for '${model}'`);
  if (pts.length === 1) return first[1];
  let i = pts.findIndex(([b]) => b >= batch);
  if (i <= 0) i = i === 0 ? 1 : pts.length - 1;
  const [b0, m0] = pts[i - 1] ?? first;
  const [b1, m1] = pts[i] ?? first;
  if (b0 === batch) return m0;
  if (b1 === batch) return m1;
  const value = m0 + ((m1 - m0) * (batch - b0)) / (b1 - b0);
  return Math.max(value, MIN_JOB_GIB);
}
