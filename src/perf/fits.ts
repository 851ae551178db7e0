import { findGiProfile } from '../mig/catalog/index.js';
import type { Resource } from './types.js';

/** Whether a job fits: yes, no, or unknown (its memory or the resource's is not known). */
export type MemoryFit = true | false | 'unknown';

/**
 * Whether one job needing `memoryGiB` (null: unknown) fits on `resource`; for `timeslice` and
 * `mps` all N jobs must fit in the GPU's memory together. Unknown memory is never taken to fit:
 * the answer is 'unknown', and the caller decides (place it only where the user allows, e.g. a
 * whole GPU or a profile the job asked for).
 */
export function fitsOn(memoryGiB: number | null, resource: Resource): MemoryFit {
  const have = resource.kind === 'mig' ? findGiProfile(resource.gpu, resource.profile).memoryGiB : resource.gpu.memoryGB;
  if (memoryGiB === null || have === null) return 'unknown';
  const jobs = resource.kind === 'timeslice' || resource.kind === 'mps' ? resource.jobs : 1;
  return have >= jobs * memoryGiB;
}
