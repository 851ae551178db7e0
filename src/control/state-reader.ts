import { MigpoolError } from '../errors.js';
import { GPU_MODELS, resolveGpuModel } from '../mig/catalog/index.js';
import type { GpuModel } from '../mig/types.js';
import type { CurrentGpu } from '../partition/state.js';
import { GpuLostError, type ComputeInstanceInfo, type GpuInfo, type GpuInstanceInfo, type GpuPort } from '../gpu/port.js';

/** The catalogued family of a GPU the port reports, by PCI device ID, else by product name. */
export function modelOfGpu(gpu: GpuInfo): GpuModel | null {
  const id = gpu.pciDeviceId.toUpperCase();
  const byId = GPU_MODELS.find((m) => m.pciDeviceIds.some((p) => p.toUpperCase() === id));
  if (byId) return byId;
  try {
    return resolveGpuModel(gpu.name);
  } catch {
    return null;
  }
}

/** A GPU as found, with its catalogued family (null: not a MIG GPU migpool knows). */
export interface FoundGpu {
  readonly info: GpuInfo;
  readonly current: CurrentGpu | null;
}

/** How readCurrentState treats GPUs that no longer answer. */
export interface ReadOptions {
  /**
   * Called when the port names GPUs that do not answer (GpuLostError): the GPUs that answer are
   * read and returned. Without it the error is thrown (commands that change GPUs stop on it).
   */
  readonly onLost?: (e: GpuLostError) => void;
  /** Called with the GPU and compute instances as the port listed them (MIG device UUIDs, GI IDs), read once for both. */
  readonly onInstances?: (gis: readonly GpuInstanceInfo[], cis: readonly ComputeInstanceInfo[]) => void;
}

/**
 * Reads every GPU's MIG mode, instances, compute instances and processes through the port (or
 * only GPU `only`'s, e.g. after changing it).
 */
export async function readCurrentState(port: GpuPort, only?: number, options: ReadOptions = {}): Promise<FoundGpu[]> {
  let listed: GpuInfo[];
  try {
    listed = await port.listGpus();
  } catch (e) {
    if (!(e instanceof GpuLostError) || options.onLost === undefined) throw e;
    options.onLost(e);
    listed = [...e.answered];
  }
  const gpus = listed.filter((g) => only === undefined || g.index === only);
  const anyMig = gpus.some((g) => g.migMode?.current === 'enabled');
  const [gis, cis, procs] = await Promise.all([
    anyMig ? port.listGpuInstances(only) : Promise.resolve([]),
    anyMig ? port.listComputeInstances(only) : Promise.resolve([]),
    gpus.length > 0 ? port.listProcesses() : Promise.resolve([]),
  ]);
  options.onInstances?.(gis, cis);
  const byGpu = <T extends { readonly gpu: number }>(xs: readonly T[]): Map<number, T[]> => {
    const m = new Map<number, T[]>();
    for (const x of xs) m.set(x.gpu, [...(m.get(x.gpu) ?? []), x]);
    return m;
  };
  const [gisOf, cisOf, procsOf] = [byGpu(gis), byGpu(cis), byGpu(procs)];
  return gpus.map((info) => {
    const model = modelOfGpu(info);
    if (!model || !info.migMode) return { info, current: null };
    const mine = procsOf.get(info.index) ?? [];
    const instances = (gisOf.get(info.index) ?? [])
      .flatMap((g) => {
        const profile = model.giProfiles.find((p) => p.name === g.profile);
        if (!profile) {
          throw new MigpoolError('DEVICE', `GPU ${info.index} has GPU instance ${g.id} of profile '${g.profile}', which migpool's ${model.name} catalogue does not know; please report it`);
        }
        return [
          {
            id: g.id,
            profile,
            start: g.start,
            size: g.size,
            computeInstances: (cisOf.get(info.index) ?? [])
              .filter((c) => c.gpuInstanceId === g.id)
              .map((c) => ({ id: c.id, profile: c.profile, pids: mine.filter((p) => p.gpuInstanceId === g.id && p.computeInstanceId === c.id).map((p) => p.pid) })),
          },
        ];
      });
    return {
      info,
      current: {
        index: info.index,
        uuid: info.uuid,
        model,
        migMode: info.migMode,
        instances,
        gpuPids: mine.filter((p) => p.gpuInstanceId === null || !instances.some((i) => i.id === p.gpuInstanceId)).map((p) => p.pid),
      },
    };
  });
}
