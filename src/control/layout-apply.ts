import { MigpoolError } from '../errors.js';
import type { GpuPort } from '../gpu/port.js';
import type { CurrentGpu } from '../partition/state.js';

/** One instance of a layout a policy chose: a GI profile at a placement start. */
export interface LayoutSlot {
  readonly profile: string;
  readonly start: number;
}

/**
 * Makes one GPU hold exactly `layout` (MIG on), or turns MIG off (`layout` null), through the
 * port: instances with the same profile and start are kept (with whatever runs on them), others
 * are destroyed (compute instances first) and missing ones created with one full-size compute
 * instance each. `busy` names the placement starts holding jobs: changing one of those, or turning
 * MIG off under a job, is refused before anything is touched. A MIG mode change that stays
 * pending is followed by a GPU reset (the GPU is idle by then).
 */
export async function applyLayout(port: GpuPort, gpu: CurrentGpu, layout: readonly LayoutSlot[] | null, busy: ReadonlySet<number>): Promise<{ created: number; destroyed: number }> {
  const keep = (start: number, profile: string): boolean => layout !== null && layout.some((s) => s.start === start && s.profile === profile);
  const doomed = gpu.instances.filter((i) => !keep(i.start, i.profile.name));
  const blocked = doomed.filter((i) => busy.has(i.start) || i.computeInstances.some((c) => c.pids.length > 0));
  if (blocked.length > 0 || (layout === null && gpu.gpuPids.length > 0)) {
    const what = blocked.map((i) => `${i.profile.name} at ${i.start}`).join(', ') || 'the whole GPU';
    throw new MigpoolError('RUNTIME', `GPU ${gpu.index}: refusing to re-partition: ${what} is in use`);
  }
  let destroyed = 0;
  for (const gi of doomed) {
    for (const ci of gi.computeInstances) await port.destroyComputeInstance(gpu.index, gi.id, ci.id);
    await port.destroyGpuInstance(gpu.index, gi.id);
    destroyed++;
  }
  const wantMig = layout !== null;
  if ((gpu.migMode.current === 'enabled') !== wantMig) {
    const { pending } = await port.setMigMode(gpu.index, wantMig);
    if (pending) await port.resetGpu(gpu.index);
  }
  let created = 0;
  for (const slot of layout ?? []) {
    if (gpu.instances.some((i) => i.start === slot.start && i.profile.name === slot.profile)) continue;
    const gi = await port.createGpuInstance(gpu.index, slot.profile, slot.start);
    await port.createComputeInstance(gpu.index, gi.id, slot.profile);
    created++;
  }
  return { created, destroyed };
}
