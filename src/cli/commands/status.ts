import type { Command } from 'commander';
import { GPU_MODELS, resolveGpuModel } from '../../mig/catalog/index.js';
import { GpuLostError, type ComputeInstanceInfo, type GpuInfo, type GpuInstanceInfo, type GpuPort, type GpuProcess } from '../../gpu/port.js';
import type { GpuModel } from '../../mig/types.js';
import { openGpuPort, type DeviceOptions } from '../device.js';
import { writeJson, type Io } from '../io.js';

/** Adds --simulate and --state-dir to a device command. */
export function withDeviceOptions(cmd: Command): Command {
  return cmd
    .option('--simulate <spec>', 'use a simulated machine instead of nvidia-smi, e.g. 8xA100-SXM4-40GB or 2xA30,1xH100-80GB (or $MIGPOOL_SIMULATE)')
    .option('--state-dir <dir>', 'where the simulated machine is kept (default $MIGPOOL_STATE_DIR or ~/.local/state/migpool)');
}

interface GpuStatus {
  gpu: GpuInfo;
  instances: GpuInstanceInfo[];
  computeInstances: ComputeInstanceInfo[];
  processes: GpuProcess[];
}

/**
 * Reads everything `status` shows, asking for instances only on GPUs in MIG mode. With `onLost`,
 * GPUs that no longer answer (GpuLostError) are handed to it and the others are read.
 */
export async function readStatus(port: GpuPort, onLost?: (e: GpuLostError) => void): Promise<GpuStatus[]> {
  let gpus: GpuInfo[];
  try {
    gpus = await port.listGpus();
  } catch (e) {
    if (!(e instanceof GpuLostError) || onLost === undefined) throw e;
    onLost(e);
    gpus = [...e.answered];
  }
  const anyMig = gpus.some((g) => g.migMode?.current === 'enabled');
  const [instances, computeInstances, processes] = await Promise.all([
    anyMig ? port.listGpuInstances() : Promise.resolve([]),
    anyMig ? port.listComputeInstances() : Promise.resolve([]),
    gpus.length > 0 ? port.listProcesses() : Promise.resolve([]),
  ]);
  return gpus.map((gpu) => ({
    gpu,
    instances: instances.filter((i) => i.gpu === gpu.index).sort((a, b) => a.start - b.start),
    computeInstances: computeInstances.filter((c) => c.gpu === gpu.index),
    processes: processes.filter((p) => p.gpu === gpu.index),
  }));
}

function modelOf(gpu: GpuInfo): GpuModel | null {
  const byId = GPU_MODELS.find((m) => m.pciDeviceIds.includes(gpu.pciDeviceId.toUpperCase().replace(/^0X/, '0x')));
  if (byId) return byId;
  try {
    return resolveGpuModel(gpu.name);
  } catch {
    return null;
  }
}

function statusJson(s: GpuStatus) {
  return {
    index: s.gpu.index,
    uuid: s.gpu.uuid,
    name: s.gpu.name,
    pciDeviceId: s.gpu.pciDeviceId,
    busId: s.gpu.busId,
    memoryMiB: s.gpu.memoryMiB,
    migCapable: s.gpu.migCapable,
    migMode: s.gpu.migMode,
    gpuInstances: s.instances.map((i) => ({
      id: i.id,
      profile: i.profile,
      profileId: i.profileId,
      start: i.start,
      size: i.size,
      computeInstances: s.computeInstances
        .filter((c) => c.gpuInstanceId === i.id)
        .map((c) => ({ id: c.id, profile: c.profile, profileId: c.profileId, uuid: c.uuid })),
    })),
    processes: s.processes.map((p) => ({
      pid: p.pid,
      name: p.name,
      gpuInstanceId: p.gpuInstanceId,
      computeInstanceId: p.computeInstanceId,
      usedMemoryMiB: p.usedMemoryMiB,
    })),
  };
}

/** `# # #` over the slices an instance holds, `.` elsewhere. */
function sliceRow(total: number, from: number, count: number): string {
  return Array.from({ length: total }, (_, k) => (k >= from && k < from + count ? '#' : '.')).join(' ');
}

function renderGpu(s: GpuStatus): string[] {
  const g = s.gpu;
  const mode = g.migMode === null ? 'MIG: not supported' : `MIG: ${g.migMode.current}${g.migMode.pending !== g.migMode.current ? ` (pending ${g.migMode.pending}: reset the GPU to apply)` : ''}`;
  const lines = [`GPU ${g.index}: ${g.name} (${g.uuid})  ${g.memoryMiB} MiB  ${mode}`];
  const model = modelOf(g);
  if (g.migMode?.current === 'enabled' && model) {
    const per = model.placementUnits / model.memorySlices;
    const computeHead = `compute ${Array.from({ length: model.computeSlices }, (_, k) => k).join(' ')}`;
    const memoryHead = `memory ${Array.from({ length: model.memorySlices }, (_, k) => k).join(' ')}`;
    const label = (text: string) => text.padEnd(22);
    lines.push(`  ${label('')}${computeHead}   ${memoryHead}`);
    for (const i of s.instances) {
      const profile = model.giProfiles.find((p) => p.name === i.profile);
      const first = i.start / per;
      const compute = sliceRow(model.computeSlices, first, profile?.computeSlices ?? 0);
      const memory = sliceRow(model.memorySlices, first, i.size / per);
      lines.push(`  ${label(`GI ${String(i.id).padStart(2)} ${i.profile}`)}        ${compute}          ${memory}   placement ${i.start}:${i.size}`);
      for (const c of s.computeInstances.filter((x) => x.gpuInstanceId === i.id)) {
        const procs = s.processes.filter((p) => p.gpuInstanceId === i.id && p.computeInstanceId === c.id);
        const running = procs.map((p) => `pid ${p.pid} ${p.name} ${p.usedMemoryMiB} MiB`).join(', ');
        lines.push(`      CI ${c.id} ${c.profile}  ${c.uuid}${running ? `  ${running}` : ''}`);
      }
    }
    if (s.instances.length === 0) lines.push('  no GPU instances');
  }
  for (const p of s.processes.filter((x) => x.gpuInstanceId === null)) lines.push(`  pid ${p.pid} ${p.name} ${p.usedMemoryMiB} MiB (whole GPU)`);
  return lines;
}

/** `migpool status`: the node's GPUs, their MIG layouts drawn as slices, instances and processes. */
export function registerStatus(program: Command, io: Io): void {
  withDeviceOptions(program.command('status').description('show the GPUs, their MIG mode and layout, instances and processes'))
    .option('--json', 'print JSON')
    .action(async (opts: DeviceOptions & { json?: boolean }) => {
      // A GPU that fell off the bus: the others are shown, then its error line (exit 3).
      let lost: GpuLostError | null = null;
      const status = await readStatus(openGpuPort(opts), (e) => {
        lost = e;
      });
      if (opts.json) writeJson(io, { gpus: status.map(statusJson) });
      else if (status.length === 0) io.out('no GPUs found');
      else io.out(status.flatMap(renderGpu).join('\n'));
      if (lost !== null) throw lost;
    });
}
