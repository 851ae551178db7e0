/**
 * Pure formatters of the fake `nvidia-smi`: simulated machine state in, the exact text the real
 * tool prints out. Column widths and padding are copied from the real captures in
 * `test/fixtures/nvidia-smi/` (R510/R550 layouts: 79-column `-lgip`, 57-column `-lgi`, 70-column
 * `-lci` with a Placement column, 88-column `-lcip`, R470+ `-L`). No I/O.
 */
import { ciProfilesOf } from '../../mig/compute-instances.js';
import { freePlacements, type PlacedInstance } from '../../mig/geometry.js';
import type { CiProfile, GiProfile, GpuModel } from '../../mig/types.js';
import type { SimulatedMachine } from '../simulated/machine.js';
import type { GpuErrorKind, GpuInfo } from '../port.js';

/** The driver the fake claims to be: an R550 branch, whose formats the captures show. */
export const DRIVER_VERSION = '550.54.15';
export const CUDA_VERSION = '12.4';

const rj = (v: string | number, width: number): string => String(v).padStart(width);
const lj = (v: string | number, width: number): string => String(v).padEnd(width);
/** nvidia-smi prints GPU, instance and profile IDs in messages at width 2: `GPU  0`, `ID 13`. */
const id2 = (n: number): string => rj(n, 2);

/** The figures a `-lgip` row prints for a profile. */
export interface ProfileFigures {
  memoryGiB: number;
  sms: number;
  copyEngines: number;
  decoders: number;
  encoders: number;
  jpeg: number;
  ofa: number;
}

/**
 * What `-lgip` prints for `profile`. Where the catalogue has no figure (null: no real output
 * gave it) the fake still prints a number so that parsers keep working, and says so here:
 * memory is the GB of the profile's name (`1g.20gb` -> 20.00), SMs the profile's share of the
 * GPU's SMs (0 when the GPU's SM count is unknown too), engines 0. These estimates are not
 * driver output.
 */
export function profileFigures(model: GpuModel, profile: GiProfile): ProfileFigures {
  const namedGb = Number(/\.(\d+)gb/.exec(profile.name)?.[1] ?? 0);
  const smShare = model.sms === null ? 0 : Math.floor((model.sms * profile.computeSlices) / model.computeSlices);
  return {
    memoryGiB: profile.memoryGiB ?? namedGb,
    sms: profile.sms ?? smShare,
    copyEngines: profile.copyEngines ?? 0,
    decoders: profile.decoders ?? 0,
    encoders: profile.encoders ?? 0,
    jpeg: profile.jpeg ?? 0,
    ofa: profile.ofa ?? 0,
  };
}

/** SMs of one compute instance of `ci` inside a GI of `gi`: its share of the GI's SMs. */
export function ciSms(model: GpuModel, gi: GiProfile, ci: CiProfile): number {
  return Math.floor((profileFigures(model, gi).sms * ci.computeSlices) / gi.computeSlices);
}

/** The GI profile of `model` called `name` (as the machine stores it). */
function giProfileNamed(model: GpuModel, name: string): GiProfile {
  const p = model.giProfiles.find((q) => q.name === name);
  if (!p) throw new Error(`fake nvidia-smi: ${model.name} has no profile ${name} (state file from another catalogue?)`);
  return p;
}

function layoutOf(machine: SimulatedMachine, gpu: number): PlacedInstance[] {
  const model = machine.modelOf(gpu);
  return machine.listGpuInstances(gpu).map((i) => ({ profile: giProfileNamed(model, i.profile), start: i.start, size: i.size }));
}

/**
 * How many more instances of `profile` fit beside the GPU's instances: the `Free` of
 * `Free/Total`, counted by placing them one by one at the first free legal placement.
 */
export function freeGiCount(model: GpuModel, layout: readonly PlacedInstance[], profile: GiProfile): number {
  const placed = [...layout];
  let n = 0;
  for (;;) {
    const next = freePlacements(model, placed, profile)[0];
    if (!next) return n;
    placed.push(next);
    n++;
  }
}

/** The GPUs among `gpus` whose MIG mode is on now. */
export function migEnabled(machine: SimulatedMachine, gpus: readonly number[]): number[] {
  const info = machine.listGpus();
  return gpus.filter((g) => info[g]?.migMode?.current === 'enabled');
}

// ---- messages -------------------------------------------------------------------------------

/** `nvidia-smi mig` with MIG off on every selected GPU. */
export const NO_MIG_DEVICES = 'No MIG-enabled devices found.';
/** Listing or destroying with no GPU instance to act on (A30 and R510 captures). */
export const NO_GPU_INSTANCES = 'No GPU instances found: Not Found';
/** Listing or destroying with no compute instance to act on (R510 capture, newer `-dci`). */
export const NO_COMPUTE_INSTANCES = 'No compute instances found: Not Found';
/** What nvidia-smi prints when `-i` names no GPU. */
export const NO_DEVICES = 'No devices were found';
/** shine-cluster#50: the driver is not loaded. */
export const DRIVER_NOT_LOADED =
  "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.";
/** What older drivers print for options they do not know (see messages.ts). */
export const INVALID_ARGUMENTS = "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.";

/** The driver's reason text (NVML's error string) for a failure of this kind. */
export function reasonText(kind: GpuErrorKind): string {
  switch (kind) {
    case 'in-use':
    case 'reset-blocked':
      return 'In use by another client';
    case 'insufficient-resources':
      return 'Insufficient Resources';
    case 'not-supported':
    case 'mode-change-pending':
      return 'Not Supported';
    case 'no-permission':
      return 'Insufficient Permissions';
    case 'not-found':
      return 'Not Found';
    case 'invalid-argument':
      return 'Invalid Argument';
    case 'driver-not-loaded':
      return 'Driver Not Loaded';
    case 'timeout':
      return 'Timeout';
    default:
      return 'Unknown Error';
  }
}

/** Exit status per the nvidia-smi man page (RETURN VALUE). */
export function exitCodeFor(kind: GpuErrorKind): number {
  switch (kind) {
    case 'invalid-argument':
      return 2;
    case 'not-supported':
    case 'mode-change-pending':
      return 3;
    case 'no-permission':
      return 4;
    case 'not-found':
      return 6;
    case 'driver-not-loaded':
      return 9;
    default:
      return 255;
  }
}

/**
 * Lines printed before a failure of an operation on a GPU whose MIG mode is pending: the
 * pending-enable warning of the MIG User Guide, so that the text classifies as
 * `mode-change-pending`. (No capture shows what `mig -cgi` prints in that state.)
 */
export function pendingWarning(busId: string, enable: boolean): string[] {
  return [
    `Warning: MIG mode is in pending ${enable ? 'enable' : 'disable'} state for GPU ${busId}:Not Supported`,
    `Reboot the system or try nvidia-smi --gpu-reset to make MIG mode effective on GPU ${busId}`,
  ];
}

export function createdGiLine(gpu: number, id: number, profile: string, profileId: number): string {
  return `Successfully created GPU instance ID ${id2(id)} on GPU ${id2(gpu)} using profile MIG ${profile} (ID ${id2(profileId)})`;
}

export function createdCiLine(gpu: number, gi: number, id: number, profile: string, profileId: number): string {
  return `Successfully created compute instance ID ${id2(id)} on GPU ${id2(gpu)} GPU instance ID ${id2(gi)} using profile MIG ${profile} (ID ${id2(profileId)})`;
}

export function createGiFailure(gpu: number, profile: string, kind: GpuErrorKind): string[] {
  const why = reasonText(kind);
  return [`Unable to create a GPU instance on GPU ${id2(gpu)} using profile ${profile}: ${why}`, `Failed to create GPU instances: ${why}`];
}

export function createCiFailure(gpu: number, gi: number, profile: string, kind: GpuErrorKind): string[] {
  const why = reasonText(kind);
  return [
    `Unable to create a compute instance on GPU ${id2(gpu)} GPU instance ID ${id2(gi)} using profile ${profile}: ${why}`,
    `Failed to create compute instances: ${why}`,
  ];
}

export function destroyedCiLine(gpu: number, gi: number, ci: number): string {
  return `Successfully destroyed compute instance ID ${id2(ci)} from GPU ${id2(gpu)} GPU instance ID ${id2(gi)}`;
}

export function destroyedGiLine(gpu: number, gi: number): string {
  return `Successfully destroyed GPU instance ID ${id2(gi)} from GPU ${id2(gpu)}`;
}

/** NVIDIA/DCGM#95 (there lower-cased by the reporter). */
export function destroyCiFailure(gpu: number, gi: number, ci: number, kind: GpuErrorKind): string[] {
  const why = reasonText(kind);
  return [
    `Unable to destroy compute instance ID ${id2(ci)} from GPU ${id2(gpu)} GPU instance ID ${id2(gi)}: ${why}`,
    `Failed to destroy compute instances: ${why}`,
  ];
}

export function destroyGiFailure(gpu: number, gi: number, kind: GpuErrorKind): string[] {
  const why = reasonText(kind);
  return [`Unable to destroy GPU instance ID ${id2(gi)} from GPU ${id2(gpu)}: ${why}`, `Failed to destroy GPU instances: ${why}`];
}

/** `-mig 0|1` applied at once (MIG User Guide; "Disabled ..." from user captures). */
export function migModeSetLine(busId: string, enabled: boolean): string {
  return `${enabled ? 'Enabled' : 'Disabled'} MIG Mode for GPU ${busId}`;
}

/** `-mig 0|1` left pending: the two forms of the MIG User Guide. */
export function migModePendingLines(busId: string, enabled: boolean, reason: 'reset-required' | 'in-use'): string[] {
  const state = enabled ? 'enable' : 'disable';
  if (reason === 'reset-required') {
    return [
      `Warning: MIG mode is in pending ${state} state for GPU ${busId}:Not Supported`,
      `Reboot the system or try nvidia-smi --gpu-reset to make MIG mode effective on GPU ${busId}`,
    ];
  }
  return [
    `Warning: MIG mode is in pending ${state} state for GPU ${busId}:In use by another client`,
    `${busId} is currently being used by one or more other processes (e.g. CUDA application or a monitoring application such as another instance of nvidia-smi). Please first kill all processes using the device and retry the command or reboot the system to make MIG mode effective.`,
  ];
}

/** `-mig 0|1` refused outright (RTX A5000 vGPU and RTX PRO 6000 user captures). */
export function migModeFailureLine(busId: string, enabled: boolean, kind: GpuErrorKind): string {
  return `Unable to ${enabled ? 'enable' : 'disable'} MIG Mode for GPU ${busId}: ${reasonText(kind)}`;
}

/** NVIDIA/NVSentinel#1692. */
export function resetLine(busId: string): string {
  return `GPU ${busId} was successfully reset.`;
}

/**
 * NVIDIA/mig-parted#181: the GPUs whose reset was refused, then the explanation. The
 * one-device wording ("1 device is ...") is assumed; the capture shows four devices.
 */
export function resetBlockedLines(blocked: ReadonlyArray<{ busId: string; kind: GpuErrorKind }>): string[] {
  const n = blocked.length;
  return [
    'The following GPUs could not be reset:',
    ...blocked.map((b) => `  GPU ${b.busId}: ${reasonText(b.kind)}`),
    '',
    `${n} ${n === 1 ? 'device is' : 'devices are'} currently being used by one or more other processes (e.g., Fabric Manager, CUDA application, graphics application such as an X server, or a monitoring application such as another instance of nvidia-smi). Please first kill all processes using ${n === 1 ? 'this device' : 'these devices'} and all compute applications running in the system.`,
  ];
}

/** MIG User Guide, GPU reset on a platform that cannot reset. */
export function resetNotSupportedLine(busId: string): string {
  return `Resetting GPU ${busId} is not supported.`;
}

// ---- -L -------------------------------------------------------------------------------------

/** One MIG device: a compute instance, numbered as `-L` and `-q -x` number them. */
export interface MigDevice {
  index: number;
  gpuInstanceId: number;
  computeInstanceId: number;
  /** CI profile name without `MIG `. */
  profile: string;
  uuid: string;
}

/** The MIG devices of a GPU in MIG mode, in (GI ID, CI ID) order; none when MIG is off. */
export function migDevicesOf(machine: SimulatedMachine, gpu: number): MigDevice[] {
  if (migEnabled(machine, [gpu]).length === 0) return [];
  return machine
    .listComputeInstances(gpu)
    .sort((a, b) => a.gpuInstanceId - b.gpuInstanceId || a.id - b.id)
    .map((c, index) => ({ index, gpuInstanceId: c.gpuInstanceId, computeInstanceId: c.id, profile: c.profile, uuid: c.uuid }));
}

/** `nvidia-smi -L`, R470+ form: `  MIG 1g.5gb      Device  0: (UUID: MIG-...)`. */
export function formatListGpus(machine: SimulatedMachine, gpus: readonly number[]): string {
  const info = machine.listGpus();
  const out: string[] = [];
  for (const g of gpus) {
    const gpu = info[g];
    if (!gpu) continue;
    out.push(`GPU ${gpu.index}: ${gpu.name} (UUID: ${gpu.uuid})`);
    for (const d of migDevicesOf(machine, g)) out.push(`  ${lj(`MIG ${d.profile}`, 16)}Device ${id2(d.index)}: (UUID: ${d.uuid})`);
  }
  return lines(out);
}

function lines(out: readonly string[]): string {
  return out.length === 0 ? '' : `${out.join('\n')}\n`;
}

// ---- mig listings ---------------------------------------------------------------------------

/** Instances in the order nvidia-smi lists them: by profile (the `-lgip` order), then by ID. */
function giRows(machine: SimulatedMachine, gpu: number): Array<{ id: number; profile: GiProfile; profileId: number; start: number; size: number }> {
  const model = machine.modelOf(gpu);
  const order = (p: GiProfile): number => model.giProfiles.indexOf(p);
  return machine
    .listGpuInstances(gpu)
    .map((i) => ({ id: i.id, profile: giProfileNamed(model, i.profile), profileId: i.profileId, start: i.start, size: i.size }))
    .sort((a, b) => order(a.profile) - order(b.profile) || a.id - b.id);
}

const LGIP_RULE = `+${'-'.repeat(77)}+`;
const LGIP_HEAD = [
  LGIP_RULE,
  '| GPU instance profiles:                                                      |',
  '| GPU   Name             ID    Instances   Memory     P2P    SM    DEC   ENC  |',
  '|                              Free/Total   GiB              CE    JPEG  OFA  |',
  `|${'='.repeat(77)}|`,
];

/**
 * `nvidia-smi mig -lgip` over the MIG-enabled GPUs among `gpus` (the caller prints
 * NO_MIG_DEVICES when there are none). Memory is printed with two decimals as the driver does.
 */
export function formatLgip(machine: SimulatedMachine, gpus: readonly number[]): string {
  const out = [...LGIP_HEAD];
  for (const gpu of gpus) {
    const model = machine.modelOf(gpu);
    const layout = layoutOf(machine, gpu);
    for (const p of model.giProfiles) {
      const f = profileFigures(model, p);
      const free = freeGiCount(model, layout, p);
      out.push(
        `|${rj(gpu, 4)}  ${lj(`MIG ${p.name}`, 16)}${rj(p.id ?? -1, 4)}${rj(free, 6)}/${lj(p.maxCount, 9)}${lj(f.memoryGiB.toFixed(2), 11)}${lj('No', 7)}${lj(f.sms, 5)}${rj(f.decoders, 3)}${rj(f.encoders, 6)}   |`,
        `|${' '.repeat(58)}${rj(f.copyEngines, 4)}${rj(f.jpeg, 6)}${rj(f.ofa, 6)}   |`,
        LGIP_RULE,
      );
    }
  }
  return lines(out);
}

/** `nvidia-smi mig -lgipp`: `GPU  0 Profile ID 19 Placements: {0,1,2,3,4,5,6}:1`. */
export function formatLgipp(machine: SimulatedMachine, gpus: readonly number[]): string {
  const out: string[] = [];
  for (const gpu of gpus) {
    for (const p of machine.modelOf(gpu).giProfiles) {
      const word = p.placements.length > 1 ? 'Placements:' : 'Placement :';
      const size = p.placements[0]?.size ?? 0;
      out.push(`GPU ${id2(gpu)} Profile ID ${id2(p.id ?? -1)} ${word} {${p.placements.map((pl) => pl.start).join(',')}}:${size}`);
    }
  }
  return lines(out);
}

const LGI_RULE = `+${'-'.repeat(55)}+`;
const LGI_HEAD = [
  LGI_RULE,
  '| GPU instances:                                        |',
  '| GPU   Name             Profile  Instance   Placement  |',
  '|                          ID       ID       Start:Size |',
  `|${'='.repeat(55)}|`,
];

/** `nvidia-smi mig -lgi`, 57-column R510+ layout; '' when there is no GPU instance. */
export function formatLgi(machine: SimulatedMachine, gpus: readonly number[]): string {
  const out = [...LGI_HEAD];
  for (const gpu of gpus) {
    for (const i of giRows(machine, gpu)) {
      out.push(`|${rj(gpu, 4)}  ${lj(`MIG ${i.profile.name}`, 16)}${rj(i.profileId, 6)}${rj(i.id, 9)}${rj(i.start, 11)}:${lj(i.size, 6)}|`, LGI_RULE);
    }
  }
  return out.length === LGI_HEAD.length ? '' : lines(out);
}

const LCI_RULE = `+${'-'.repeat(68)}+`;
const LCI_HEAD = [
  LCI_RULE,
  '| Compute instances:                                                 |',
  '| GPU     GPU       Name             Profile   Instance   Placement  |',
  '|       Instance                       ID        ID       Start:Size |',
  '|         ID                                                         |',
  `|${'='.repeat(68)}|`,
];

/** Compute instances of a GI in listing order: by CI profile (the `-lcip` order), then by ID. */
function ciRows(machine: SimulatedMachine, gpu: number, giId: number, giProfile: GiProfile) {
  const options = ciProfilesOf(giProfile);
  const order = (name: string): number => options.findIndex((o) => o.name === name);
  return machine
    .listComputeInstances(gpu)
    .filter((c) => c.gpuInstanceId === giId)
    .sort((a, b) => order(a.profile) - order(b.profile) || a.id - b.id);
}

/**
 * `nvidia-smi mig -lci`, the 70-column R510+ layout with a Placement column, over the GIs of
 * `gpus` (all, or those in `gpuInstanceIds`); '' when there is no compute instance.
 */
export function formatLci(machine: SimulatedMachine, gpus: readonly number[], gpuInstanceIds?: readonly number[], computeInstanceIds?: readonly number[]): string {
  const out = [...LCI_HEAD];
  for (const gpu of gpus) {
    for (const gi of giRows(machine, gpu)) {
      if (gpuInstanceIds && !gpuInstanceIds.includes(gi.id)) continue;
      for (const ci of ciRows(machine, gpu, gi.id, gi.profile)) {
        if (computeInstanceIds && !computeInstanceIds.includes(ci.id)) continue;
        const at = machine.computeInstancePlacement(gpu, gi.id, ci.id) ?? { start: 0, size: 0 };
        out.push(
          `|${rj(gpu, 4)}${rj(gi.id, 7)}${' '.repeat(7)}${lj(`MIG ${ci.profile}`, 16)}${rj(ci.profileId, 6)}${rj(ci.id, 10)}${rj(at.start, 11)}:${lj(at.size, 6)}|`,
          LCI_RULE,
        );
      }
    }
  }
  return out.length === LCI_HEAD.length ? '' : lines(out);
}

/**
 * How many more CIs of `ci` a GI takes, as the simulator allocates them: aligned slots of the
 * CI's size, at most `maxCount` of one profile.
 */
function freeCiCount(machine: SimulatedMachine, gpu: number, giId: number, gi: GiProfile, ci: CiProfile): number {
  const existing = machine.listComputeInstances(gpu).filter((c) => c.gpuInstanceId === giId);
  const used = new Set<number>();
  for (const c of existing) {
    const at = machine.computeInstancePlacement(gpu, giId, c.id);
    if (at) for (let k = 0; k < at.size; k++) used.add(at.start + k);
  }
  let same = existing.filter((c) => c.profile === ci.name).length;
  let free = 0;
  for (let s = 0; s + ci.computeSlices <= gi.computeSlices && same < ci.maxCount; s += ci.computeSlices) {
    const slots = Array.from({ length: ci.computeSlices }, (_, k) => s + k);
    if (slots.every((u) => !used.has(u))) {
      slots.forEach((u) => used.add(u));
      same++;
      free++;
    }
  }
  return free;
}

const LCIP_RULE = `+${'-'.repeat(86)}+`;
const LCIP_HEAD = [
  LCIP_RULE,
  '| Compute instance profiles:                                                           |',
  '| GPU     GPU       Name             Profile  Instances   Exclusive       Shared       |',
  '|       Instance                       ID     Free/Total     SM       DEC   ENC   OFA  |',
  '|         ID                                                          CE    JPEG       |',
  `|${'='.repeat(86)}|`,
];

/**
 * `nvidia-smi mig -lcip` (88 columns; the default profile's ID marked `*`; engines are those the
 * CIs of a GI share, SMs a CI's own); '' when there is no GPU instance.
 */
export function formatLcip(machine: SimulatedMachine, gpus: readonly number[], gpuInstanceIds?: readonly number[]): string {
  const out = [...LCIP_HEAD];
  for (const gpu of gpus) {
    const model = machine.modelOf(gpu);
    for (const gi of giRows(machine, gpu)) {
      if (gpuInstanceIds && !gpuInstanceIds.includes(gi.id)) continue;
      const f = profileFigures(model, gi.profile);
      for (const ci of ciProfilesOf(gi.profile)) {
        const free = freeCiCount(machine, gpu, gi.id, gi.profile, ci);
        out.push(
          `|${rj(gpu, 4)}${rj(gi.id, 7)}${' '.repeat(7)}${lj(`MIG ${ci.name}`, 16)}${rj(ci.id, 6)}${ci.isDefault ? '*' : ' '}${rj(free, 6)}/${lj(ci.maxCount, 9)}${rj(ciSms(model, gi.profile, ci), 5)}${rj(f.decoders, 9)}${rj(f.encoders, 6)}${rj(f.ofa, 6)}   |`,
          `|${' '.repeat(62)}${rj(f.copyEngines, 9)}${rj(f.jpeg, 6)}${' '.repeat(9)}|`,
          LCIP_RULE,
        );
      }
    }
  }
  return out.length === LCIP_HEAD.length ? '' : lines(out);
}

// ---- CSV queries ----------------------------------------------------------------------------

/** `--format=csv[,noheader][,nounits]`. */
export interface CsvFormat {
  noheader: boolean;
  nounits: boolean;
}

type Cell = { value: string; unit?: string };

/** Fields `--query-gpu` knows, as the real tool names them (aliases included). */
export const GPU_QUERY_FIELDS: readonly string[] = [
  'index',
  'uuid',
  'gpu_uuid',
  'name',
  'gpu_name',
  'pci.device_id',
  'pci.bus_id',
  'gpu_bus_id',
  'memory.total',
  'mig.mode.current',
  'mig.mode.pending',
  'driver_version',
  'count',
];

function gpuCell(field: string, gpu: GpuInfo, count: number): Cell {
  const mode = (m: 'enabled' | 'disabled' | undefined): string => (m === undefined ? '[N/A]' : m === 'enabled' ? 'Enabled' : 'Disabled');
  switch (field) {
    case 'index':
      return { value: String(gpu.index) };
    case 'uuid':
    case 'gpu_uuid':
      return { value: gpu.uuid };
    case 'name':
    case 'gpu_name':
      return { value: gpu.name };
    case 'pci.device_id':
      return { value: gpu.pciDeviceId };
    case 'pci.bus_id':
    case 'gpu_bus_id':
      return { value: gpu.busId };
    case 'memory.total':
      return { value: String(gpu.memoryMiB), unit: 'MiB' };
    case 'mig.mode.current':
      return { value: mode(gpu.migMode?.current) };
    case 'mig.mode.pending':
      return { value: mode(gpu.migMode?.pending) };
    case 'driver_version':
      return { value: DRIVER_VERSION };
    default:
      return { value: String(count) };
  }
}

function csv(header: readonly string[], rows: ReadonlyArray<readonly Cell[]>, format: CsvFormat): string {
  const out: string[] = [];
  if (!format.noheader) out.push(header.join(', '));
  for (const row of rows) out.push(row.map((c) => (c.unit && !format.nounits ? `${c.value} ${c.unit}` : c.value)).join(', '));
  return lines(out);
}

/**
 * `--query-gpu=<fields> --format=csv...`: header `index, name, memory.total [MiB]` (units stay
 * in the header with `nounits`, as real captures show), values `40960 MiB` or `40960`.
 * Returns the first unknown field instead when there is one.
 */
export function formatQueryGpu(machine: SimulatedMachine, gpus: readonly number[], fields: readonly string[], format: CsvFormat): { text: string } | { unknownField: string } {
  const unknown = fields.find((f) => !GPU_QUERY_FIELDS.includes(f));
  if (unknown !== undefined) return { unknownField: unknown };
  const info = machine.listGpus();
  const header = fields.map((f) => (f === 'memory.total' ? `${f} [MiB]` : f));
  const rows: Cell[][] = [];
  for (const g of gpus) {
    const gpu = info[g];
    if (gpu) rows.push(fields.map((f) => gpuCell(f, gpu, info.length)));
  }
  return { text: csv(header, rows, format) };
}

/** Fields `--query-compute-apps` knows; `used_memory` is printed as `used_gpu_memory [MiB]`. */
const APP_HEADER: Readonly<Record<string, string>> = {
  pid: 'pid',
  process_name: 'process_name',
  name: 'process_name',
  gpu_uuid: 'gpu_uuid',
  gpu_name: 'gpu_name',
  gpu_bus_id: 'gpu_bus_id',
  used_memory: 'used_gpu_memory',
  used_gpu_memory: 'used_gpu_memory',
};

/**
 * `--query-compute-apps=pid,process_name,gpu_uuid,used_memory --format=csv...`: header
 * `pid, process_name, gpu_uuid, used_gpu_memory [MiB]`; with no process just the header (no
 * "No running processes found" in CSV). `gpu_uuid` is the parent GPU's UUID also in MIG mode.
 */
export function formatQueryComputeApps(machine: SimulatedMachine, gpus: readonly number[], fields: readonly string[], format: CsvFormat): { text: string } | { unknownField: string } {
  const header: string[] = [];
  for (const f of fields) {
    const h = APP_HEADER[f];
    if (h === undefined) return { unknownField: f };
    header.push(h === 'used_gpu_memory' ? `${h} [MiB]` : h);
  }
  const info = machine.listGpus();
  const rows = machine
    .listProcesses()
    .filter((p) => gpus.includes(p.gpu))
    .map((p) =>
      fields.map((f): Cell => {
        const gpu = info[p.gpu];
        switch (APP_HEADER[f]) {
          case 'pid':
            return { value: String(p.pid) };
          case 'process_name':
            return { value: p.name };
          case 'gpu_uuid':
            return { value: gpu?.uuid ?? '' };
          case 'gpu_name':
            return { value: gpu?.name ?? '' };
          case 'gpu_bus_id':
            return { value: gpu?.busId ?? '' };
          default:
            return { value: String(p.usedMemoryMiB), unit: 'MiB' };
        }
      }),
    );
  return { text: csv(header, rows, format) };
}

// ---- -q -x ----------------------------------------------------------------------------------

const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** A time as nvidia-smi's `<timestamp>` writes it (C `ctime`): `Fri Oct  2 19:30:00 2026`. */
export function ctime(d: Date): string {
  const p2 = (n: number): string => String(n).padStart(2, '0');
  return `${DAYS[d.getDay()]} ${MONTHS[d.getMonth()]} ${rj(d.getDate(), 2)} ${p2(d.getHours())}:${p2(d.getMinutes())}:${p2(d.getSeconds())} ${d.getFullYear()}`;
}

function xmlEscape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** MiB of a GI as `fb_memory_usage/total` of its MIG devices: the `-lgip` GiB times 1024. */
function giMemoryMiB(model: GpuModel, gi: GiProfile): number {
  return Math.round(profileFigures(model, gi).memoryGiB * 1024);
}

/**
 * `nvidia-smi -q -x` in the nvsmi structure of the real capture
 * (test/fixtures/nvidia-smi/a100-sxm4-40gb_q-x-mig-2-devices_*: four-space indentation), cut to
 * what migpool reads: product name and architecture, MIG mode, MIG devices (index as `-L`
 * numbers them, GI and CI IDs, shared engines, memory), UUID, PCI, memory and processes
 * (`N/A` GI/CI IDs when MIG is off). `attached_gpus` counts every GPU, as the real tool does
 * with `-i`. With MIG off `<mig_devices>` holds `None` (unconfirmed).
 */
export function formatXml(machine: SimulatedMachine, gpus: readonly number[], timestamp: string): string {
  const info = machine.listGpus();
  const out: string[] = [
    '<?xml version="1.0" ?>',
    '<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">',
    '<nvidia_smi_log>',
    `    <timestamp>${timestamp}</timestamp>`,
    `    <driver_version>${DRIVER_VERSION}</driver_version>`,
    `    <cuda_version>${CUDA_VERSION}</cuda_version>`,
    `    <attached_gpus>${info.length}</attached_gpus>`,
  ];
  const on = (m: 'enabled' | 'disabled' | undefined): string => (m === 'enabled' ? 'Enabled' : m === 'disabled' ? 'Disabled' : 'N/A');
  for (const g of gpus) {
    const gpu = info[g];
    if (!gpu) continue;
    const model = machine.modelOf(g);
    const processes = machine.listProcesses().filter((p) => p.gpu === g);
    const devices = migDevicesOf(machine, g);
    const gis = machine.listGpuInstances(g);
    const [domain = '00000000', bus = '00', devFn = '00.0'] = gpu.busId.split(':');
    out.push(
      `    <gpu id="${gpu.busId}">`,
      `        <product_name>${xmlEscape(gpu.name)}</product_name>`,
      '        <product_brand>NVIDIA</product_brand>',
      `        <product_architecture>${model.architecture}</product_architecture>`,
      '        <mig_mode>',
      `            <current_mig>${on(gpu.migMode?.current)}</current_mig>`,
      `            <pending_mig>${on(gpu.migMode?.pending)}</pending_mig>`,
      '        </mig_mode>',
    );
    if (devices.length === 0) out.push('        <mig_devices>None</mig_devices>');
    else {
      out.push('        <mig_devices>');
      for (const d of devices) {
        const gi = gis.find((i) => i.id === d.gpuInstanceId);
        const giProfile = giProfileNamed(model, gi?.profile ?? '');
        const ci = ciProfilesOf(giProfile).find((c) => c.name === d.profile) ?? ciProfilesOf(giProfile)[0];
        const f = profileFigures(model, giProfile);
        const total = giMemoryMiB(model, giProfile);
        const used = processes.filter((p) => p.gpuInstanceId === d.gpuInstanceId).reduce((s, p) => s + p.usedMemoryMiB, 0);
        out.push(
          '            <mig_device>',
          `                <index>${d.index}</index>`,
          `                <gpu_instance_id>${d.gpuInstanceId}</gpu_instance_id>`,
          `                <compute_instance_id>${d.computeInstanceId}</compute_instance_id>`,
          '                <device_attributes>',
          '                    <shared>',
          `                        <multiprocessor_count>${ci ? ciSms(model, giProfile, ci) : f.sms}</multiprocessor_count>`,
          `                        <copy_engine_count>${f.copyEngines}</copy_engine_count>`,
          `                        <encoder_count>${f.encoders}</encoder_count>`,
          `                        <decoder_count>${f.decoders}</decoder_count>`,
          `                        <ofa_count>${f.ofa}</ofa_count>`,
          `                        <jpg_count>${f.jpeg}</jpg_count>`,
          '                    </shared>',
          '                </device_attributes>',
          '                <fb_memory_usage>',
          `                    <total>${total} MiB</total>`,
          '                    <reserved>0 MiB</reserved>',
          `                    <used>${used} MiB</used>`,
          `                    <free>${Math.max(0, total - used)} MiB</free>`,
          '                </fb_memory_usage>',
          '            </mig_device>',
        );
      }
      out.push('        </mig_devices>');
    }
    const used = processes.reduce((s, p) => s + p.usedMemoryMiB, 0);
    const na = (v: number | null): string => (v === null ? 'N/A' : String(v));
    out.push(
      `        <uuid>${gpu.uuid}</uuid>`,
      `        <minor_number>${gpu.index}</minor_number>`,
      '        <pci>',
      `            <pci_bus>${bus}</pci_bus>`,
      `            <pci_device>${devFn.split('.')[0] ?? '00'}</pci_device>`,
      `            <pci_domain>${domain.slice(-4)}</pci_domain>`,
      `            <pci_device_id>${gpu.pciDeviceId.replace(/^0x/i, '')}</pci_device_id>`,
      `            <pci_bus_id>${gpu.busId}</pci_bus_id>`,
      '        </pci>',
      '        <fb_memory_usage>',
      `            <total>${gpu.memoryMiB} MiB</total>`,
      '            <reserved>0 MiB</reserved>',
      `            <used>${used} MiB</used>`,
      `            <free>${Math.max(0, gpu.memoryMiB - used)} MiB</free>`,
      '        </fb_memory_usage>',
      '        <compute_mode>Default</compute_mode>',
      '        <processes>',
    );
    for (const p of processes) {
      out.push(
        '            <process_info>',
        `                <gpu_instance_id>${na(p.gpuInstanceId)}</gpu_instance_id>`,
        `                <compute_instance_id>${na(p.computeInstanceId)}</compute_instance_id>`,
        `                <pid>${p.pid}</pid>`,
        '                <type>C</type>',
        `                <process_name>${xmlEscape(p.name)}</process_name>`,
        `                <used_memory>${p.usedMemoryMiB} MiB</used_memory>`,
        '            </process_info>',
      );
    }
    out.push('        </processes>', '        <accounted_processes>', '        </accounted_processes>', '    </gpu>');
  }
  out.push('', '</nvidia_smi_log>');
  return lines(out);
}
