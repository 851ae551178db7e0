import { ciProfilesOf } from '../../mig/compute-instances.js';
import { countingViolation, freePlacements, type PlacedInstance } from '../../mig/geometry.js';
import { normalizeProfileName } from '../../mig/catalog/index.js';
import type { GiProfile, GpuModel } from '../../mig/types.js';
import { GpuError, type ComputeInstanceInfo, type GpuErrorKind, type GpuInfo, type GpuInstanceInfo, type GpuProcess, type MigModeState } from '../port.js';
import { modelByName, type SimulatedGpuKind } from './spec.js';

/** Operations of the port, as fault injection names them. */
export type SimOperation =
  | 'setMigMode'
  | 'resetGpu'
  | 'createGpuInstance'
  | 'createComputeInstance'
  | 'destroyComputeInstance'
  | 'destroyGpuInstance';

/** How errors name each operation (as the simulator's own refusals do). */
const OPERATION_LABELS: Readonly<Record<SimOperation, string>> = {
  setMigMode: 'set MIG mode',
  resetGpu: 'reset',
  createGpuInstance: 'create GPU instance',
  createComputeInstance: 'create compute instance',
  destroyComputeInstance: 'destroy compute instance',
  destroyGpuInstance: 'destroy GPU instance',
};

/** A failure to inject: the next matching operation fails with this kind, as the hardware would. */
export interface SimFault {
  readonly operation: SimOperation;
  readonly gpu?: number;
  readonly kind: GpuErrorKind;
  readonly message?: string;
}

interface SimComputeInstance {
  id: number;
  profile: string;
  profileId: number;
  start: number;
  size: number;
  uuid: string;
}

interface SimGpuInstance {
  id: number;
  profile: string;
  profileId: number;
  start: number;
  size: number;
  computeInstances: SimComputeInstance[];
}

interface SimProcess {
  pid: number;
  name: string;
  gpuInstanceId: number | null;
  computeInstanceId: number | null;
  usedMemoryMiB: number;
}

interface SimGpu {
  index: number;
  family: string;
  name: string;
  pciDeviceId: string;
  busId: string;
  uuid: string;
  memoryMiB: number;
  migMode: { current: MigModeState; pending: MigModeState };
  gpuInstances: SimGpuInstance[];
  processes: SimProcess[];
  /**
   * The GPU fell off the bus: the fake nvidia-smi leaves it out of every answer and names it in
   * an "Unable to determine the device handle" line (fake-nvidia-smi/main.ts). The in-process
   * simulated port ignores it.
   */
  lost?: boolean;
  /** The fake nvidia-smi warns that its infoROM is corrupted (exit status 14) after each answer. */
  infoRomCorrupted?: boolean;
}

/** The whole simulated machine as plain JSON: what the state file of the fake nvidia-smi holds. */
export interface SimState {
  version: 1;
  /** The --simulate spec the machine was made from (`2xA100-SXM4-40GB`), when known. */
  spec?: string;
  seed: number;
  counter: number;
  nextPid: number;
  gpus: SimGpu[];
  faults: SimFault[];
}

/** A 32-bit mix of seed and counter (splitmix32): deterministic UUIDs without Math.random. */
function mix32(x: number): number {
  let z = (x + 0x9e3779b9) | 0;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  return (z ^ (z >>> 16)) >>> 0;
}

/**
 * Hardware semantics modelled (see the conformance suite for each as a test):
 * - a new GPU has MIG disabled, as shipped;
 * - on Ampere (A100, A30) a MIG mode change stays pending until a GPU reset; on later parts it
 *   applies at once, unless a process holds the GPU (then it stays pending, "In use by another
 *   client");
 * - a reset is refused while processes hold the GPU, and destroys every instance;
 * - GPU instances only at legal, free placements within the counting limits, else "Insufficient
 *   Resources"; IDs as the driver numbers placements (a heap over memory slices: 7g = 0, halves
 *   1-2, quarters 3-6, eighths 7-14, as in the MIG User Guide's -lgi listings);
 * - a GPU instance cannot be destroyed while it has compute instances, nor a compute instance while
 *   a process runs on it ("In use by another client").
 */
export class SimulatedMachine {
  readonly state: SimState;

  constructor(state: SimState) {
    this.state = state;
  }

  /** A fresh machine: the GPUs of `kinds`, MIG disabled, UUIDs from `seed`. */
  static create(kinds: readonly SimulatedGpuKind[], seed = 1, spec?: string): SimulatedMachine {
    const machine = new SimulatedMachine({ version: 1, ...(spec === undefined ? {} : { spec }), seed, counter: 0, nextPid: 4000, gpus: [], faults: [] });
    kinds.forEach((kind, index) => {
      machine.state.gpus.push({
        index,
        family: kind.model.name,
        name: kind.productName,
        pciDeviceId: kind.model.pciDeviceIds[0] ?? '0x000010DE',
        busId: `00000000:${(0x07 + index * 0x10).toString(16).toUpperCase().padStart(2, '0')}:00.0`,
        uuid: `GPU-${machine.nextUuidBody()}`,
        // Memory as the marketed size; real boards print slightly less (e.g. 40960 or 40536 MiB).
        memoryMiB: kind.model.memoryGB * 1024,
        migMode: { current: 'disabled', pending: 'disabled' },
        gpuInstances: [],
        processes: [],
      });
    });
    return machine;
  }

  private nextUuidBody(): string {
    const words = [0, 1, 2, 3].map((k) => mix32(this.state.seed * 7919 + this.state.counter * 4 + k).toString(16).padStart(8, '0'));
    this.state.counter++;
    const hex = words.join('');
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
  }

  private gpu(index: number, operation: string): SimGpu {
    const gpu = this.state.gpus[index];
    if (!gpu) throw new GpuError('not-found', operation, index, `no GPU with index ${index} (this machine has ${this.state.gpus.length})`);
    return gpu;
  }

  /** The catalogued family of GPU `index`. */
  modelOf(index: number): GpuModel {
    return modelByName(this.gpu(index, 'lookup').family);
  }

  private checkFault(operation: SimOperation, gpu: number): void {
    const at = this.state.faults.findIndex((f) => f.operation === operation && (f.gpu === undefined || f.gpu === gpu));
    if (at < 0) return;
    const [fault] = this.state.faults.splice(at, 1);
    if (fault) throw new GpuError(fault.kind, OPERATION_LABELS[operation], gpu, fault.message ?? `injected ${fault.kind} failure`);
  }

  /** Makes the next `operation` (on `gpu`, or on any GPU) fail with `kind`. */
  /** Marks GPU `index` as fallen off the bus, or back (see SimGpu.lost: the fake nvidia-smi acts on it). */
  setLost(index: number, lost: boolean): void {
    const g = this.gpu(index, 'mark lost');
    if (lost) g.lost = true;
    else delete g.lost;
  }

  /** Marks GPU `index`'s infoROM as corrupted, or sound (see SimGpu.infoRomCorrupted). */
  setInfoRomCorrupted(index: number, corrupted: boolean): void {
    const g = this.gpu(index, 'mark infoROM');
    if (corrupted) g.infoRomCorrupted = true;
    else delete g.infoRomCorrupted;
  }

  /** Whether GPU `index` is marked lost (the fake nvidia-smi does not reach it). */
  isLost(index: number): boolean {
    return this.state.gpus[index]?.lost === true;
  }

  injectFault(fault: SimFault): void {
    this.state.faults.push(fault);
  }

  listGpus(): GpuInfo[] {
    return this.state.gpus.map((g) => ({
      index: g.index,
      uuid: g.uuid,
      name: g.name,
      pciDeviceId: g.pciDeviceId,
      busId: g.busId,
      memoryMiB: g.memoryMiB,
      migCapable: true,
      migMode: { ...g.migMode },
    }));
  }

  listGpuInstances(gpu?: number): GpuInstanceInfo[] {
    return this.state.gpus
      .filter((g) => gpu === undefined || g.index === gpu)
      .flatMap((g) => g.gpuInstances.map((i) => ({ gpu: g.index, id: i.id, profile: i.profile, profileId: i.profileId, start: i.start, size: i.size })));
  }

  listComputeInstances(gpu?: number): ComputeInstanceInfo[] {
    return this.state.gpus
      .filter((g) => gpu === undefined || g.index === gpu)
      .flatMap((g) =>
        g.gpuInstances.flatMap((i) =>
          i.computeInstances.map((c) => ({ gpu: g.index, gpuInstanceId: i.id, id: c.id, profile: c.profile, profileId: c.profileId, uuid: c.uuid })),
        ),
      );
  }

  /** Compute-instance placement inside its GPU instance, as `nvidia-smi mig -lci` prints it. */
  computeInstancePlacement(gpu: number, gpuInstanceId: number, id: number): { start: number; size: number } | null {
    const ci = this.gpu(gpu, 'lookup').gpuInstances.find((i) => i.id === gpuInstanceId)?.computeInstances.find((c) => c.id === id);
    return ci ? { start: ci.start, size: ci.size } : null;
  }

  listProcesses(): GpuProcess[] {
    return this.state.gpus.flatMap((g) => g.processes.map((p) => ({ ...p, gpu: g.index })));
  }

  setMigMode(index: number, enabled: boolean): { pending: boolean; reason: 'reset-required' | 'in-use' | null } {
    const gpu = this.gpu(index, 'set MIG mode');
    this.checkFault('setMigMode', index);
    const wanted: MigModeState = enabled ? 'enabled' : 'disabled';
    gpu.migMode.pending = wanted;
    if (gpu.migMode.current === wanted) return { pending: false, reason: null };
    if (modelByName(gpu.family).architecture === 'Ampere') return { pending: true, reason: 'reset-required' };
    if (gpu.processes.length > 0) return { pending: true, reason: 'in-use' };
    this.applyMode(gpu);
    return { pending: false, reason: null };
  }

  private applyMode(gpu: SimGpu): void {
    gpu.migMode.current = gpu.migMode.pending;
    gpu.gpuInstances = [];
  }

  resetGpu(index: number): void {
    const gpu = this.gpu(index, 'reset');
    this.checkFault('resetGpu', index);
    if (gpu.processes.length > 0) {
      const pids = gpu.processes.map((p) => p.pid).join(', ');
      throw new GpuError('reset-blocked', 'reset', index, `In use by another client (processes ${pids}); stop them first`);
    }
    this.applyMode(gpu);
  }

  private requireMig(gpu: SimGpu, operation: string): void {
    if (gpu.migMode.current === 'enabled') return;
    if (gpu.migMode.pending === 'enabled') {
      throw new GpuError('mode-change-pending', operation, gpu.index, 'MIG mode is pending enable; reset the GPU to apply it');
    }
    throw new GpuError('not-supported', operation, gpu.index, 'MIG mode is disabled on this GPU; enable it first');
  }

  private giProfile(model: GpuModel, profile: string, operation: string, index: number): GiProfile {
    const wanted = normalizeProfileName(profile);
    const found = /^\d+$/.test(wanted) ? model.giProfiles.find((p) => p.id === Number(wanted)) : model.giProfiles.find((p) => p.name === wanted);
    if (!found) throw new GpuError('invalid-argument', operation, index, `${model.name} has no GPU instance profile '${profile}'`);
    return found;
  }

  private placed(gpu: SimGpu, model: GpuModel): PlacedInstance[] {
    return gpu.gpuInstances.map((i) => ({ profile: this.giProfile(model, i.profile, 'lookup', gpu.index), start: i.start, size: i.size }));
  }

  /**
   * GPU instance ID for a new instance. The driver draws IDs from one range per instance size, a
   * heap over the memory slices (8 slices: full = 0, halves 1-2, quarters 3-6, eighths 7-14), as
   * every -lgi capture shows; within the range it usually gives the positional ID (1g at 0 is 7,
   * 2g at 2 is 4) but not always (NVIDIA/DCGM#138 shows 2g at 0 as ID 5). So: the positional ID
   * if free, else the lowest free one in the range.
   */
  private static gpuInstanceId(model: GpuModel, taken: readonly number[], start: number, size: number): number {
    const per = model.placementUnits / model.memorySlices;
    const slices = Math.max(1, size / per);
    const levelSize = 2 ** Math.ceil(Math.log2(slices));
    const leaves = 2 ** Math.ceil(Math.log2(model.memorySlices));
    const first = leaves / levelSize - 1;
    const positional = first + Math.floor(start / per / levelSize);
    if (!taken.includes(positional)) return positional;
    for (let id = first; id < first * 2 + 1; id++) if (!taken.includes(id)) return id;
    return Math.max(...taken) + 1;
  }

  /**
   * Where the driver puts an instance created without a placement. NVIDIA documents no rule; this
   * one reproduces the MIG User Guide's three captures: a position that covers slices no smaller
   * instance could use (the A100's 8th memory slice) first, else the one in the smallest free
   * aligned block, lowest first. (`-cgi 14,19,19,19,19,19`: 2g at 4, then 1g at 6, 0, 1, 2, 3;
   * `-cgi 9,19,14,19`: 3g at 4, 1g at 0, 2g at 2, 1g at 1; `-cgi 19,19,14` then 9: 1g at 6 and 4,
   * 2g at 0, then Insufficient Resources for the 3g.)
   */
  private static driverPlacement(model: GpuModel, layout: readonly PlacedInstance[], profile: GiProfile): number | null {
    const candidates = freePlacements(model, layout, profile);
    if (candidates.length === 0) return null;
    const smallest = model.giProfiles.reduce((a, b) => ((a.placements[0]?.size ?? 0) <= (b.placements[0]?.size ?? 0) ? a : b));
    const usable = new Set(smallest.placements.flatMap((p) => Array.from({ length: p.size }, (_, k) => p.start + k)));
    const busy = new Set(layout.flatMap((i) => Array.from({ length: i.size }, (_, k) => i.start + k)));
    const blockOf = (start: number, size: number): number => {
      let best = size;
      for (let block = size * 2; block <= model.placementUnits; block *= 2) {
        const from = Math.floor(start / block) * block;
        let ok = from + block <= model.placementUnits;
        for (let u = from; u < from + block && ok; u++) {
          const inside = u >= start && u < start + size;
          if (!inside && (busy.has(u) || !usable.has(u))) ok = false;
        }
        if (!ok) break;
        best = block;
      }
      return best;
    };
    const scored = candidates.map((c) => ({
      start: c.start,
      spare: Array.from({ length: c.size }, (_, k) => c.start + k).filter((u) => !usable.has(u)).length,
      block: blockOf(c.start, c.size),
    }));
    scored.sort((a, b) => b.spare - a.spare || a.block - b.block || a.start - b.start);
    return scored[0]?.start ?? null;
  }

  createGpuInstance(index: number, profile: string, start?: number): GpuInstanceInfo {
    const op = 'create GPU instance';
    const gpu = this.gpu(index, op);
    this.checkFault('createGpuInstance', index);
    this.requireMig(gpu, op);
    const model = modelByName(gpu.family);
    const gi = this.giProfile(model, profile, op, index);
    const layout = this.placed(gpu, model);
    let at = start;
    if (at === undefined) {
      const chosen = SimulatedMachine.driverPlacement(model, layout, gi);
      if (chosen === null) throw new GpuError('insufficient-resources', op, index, `Insufficient Resources for ${gi.name}`);
      at = chosen;
    }
    const placement = gi.placements.find((p) => p.start === at);
    if (!placement) {
      throw new GpuError('invalid-argument', op, index, `${gi.name} cannot start at ${at}; legal starts: ${gi.placements.map((p) => p.start).join(',')}`);
    }
    const limit = countingViolation(model, [...layout.map((l) => l.profile), gi]);
    const clash = layout.find((l) => l.start < placement.start + placement.size && placement.start < l.start + l.size);
    if (limit || clash) {
      const why = limit ?? `slices ${placement.start}:${placement.size} are taken by ${clash?.profile.name} at ${clash?.start}:${clash?.size}`;
      throw new GpuError('insufficient-resources', op, index, `Insufficient Resources (${why})`);
    }
    const id = SimulatedMachine.gpuInstanceId(model, gpu.gpuInstances.map((i) => i.id), placement.start, placement.size);
    const record: SimGpuInstance = { id, profile: gi.name, profileId: gi.id ?? -1, start: placement.start, size: placement.size, computeInstances: [] };
    gpu.gpuInstances.push(record);
    gpu.gpuInstances.sort((a, b) => a.id - b.id);
    return { gpu: index, id, profile: gi.name, profileId: record.profileId, start: record.start, size: record.size };
  }

  createComputeInstance(index: number, gpuInstanceId: number, profile?: string): ComputeInstanceInfo {
    const op = 'create compute instance';
    const gpu = this.gpu(index, op);
    this.checkFault('createComputeInstance', index);
    this.requireMig(gpu, op);
    const gi = gpu.gpuInstances.find((i) => i.id === gpuInstanceId);
    if (!gi) throw new GpuError('not-found', op, index, `no GPU instance with ID ${gpuInstanceId}`);
    const model = modelByName(gpu.family);
    const giProfile = this.giProfile(model, gi.profile, op, index);
    const options = ciProfilesOf(giProfile);
    const wanted = profile === undefined ? giProfile.name : normalizeProfileName(profile);
    const ci = /^\d+$/.test(wanted) ? options.find((c) => c.id === Number(wanted)) : options.find((c) => c.name === wanted);
    if (!ci) {
      throw new GpuError('invalid-argument', op, index, `GPU instance ${gpuInstanceId} (${gi.profile}) has no compute instance profile '${profile}'; it offers ${options.map((o) => o.name).join(', ')}`);
    }
    const used = new Set(gi.computeInstances.flatMap((c) => Array.from({ length: c.size }, (_, k) => c.start + k)));
    const sameProfile = gi.computeInstances.filter((c) => c.profile === ci.name).length;
    let start: number | null = null;
    for (let s = 0; s + ci.computeSlices <= giProfile.computeSlices && sameProfile < ci.maxCount; s++) {
      if (Array.from({ length: ci.computeSlices }, (_, k) => s + k).every((u) => !used.has(u))) {
        start = s;
        break;
      }
    }
    if (start === null) throw new GpuError('insufficient-resources', op, index, `Insufficient Resources in GPU instance ${gpuInstanceId} for ${ci.name}`);
    let id = 0;
    while (gi.computeInstances.some((c) => c.id === id)) id++;
    const record: SimComputeInstance = { id, profile: ci.name, profileId: ci.id, start, size: ci.computeSlices, uuid: `MIG-${this.nextUuidBody()}` };
    gi.computeInstances.push(record);
    gi.computeInstances.sort((a, b) => a.id - b.id);
    return { gpu: index, gpuInstanceId, id, profile: ci.name, profileId: ci.id, uuid: record.uuid };
  }

  destroyComputeInstance(index: number, gpuInstanceId: number, computeInstanceId: number): void {
    const op = 'destroy compute instance';
    const gpu = this.gpu(index, op);
    this.checkFault('destroyComputeInstance', index);
    const gi = gpu.gpuInstances.find((i) => i.id === gpuInstanceId);
    const at = gi?.computeInstances.findIndex((c) => c.id === computeInstanceId) ?? -1;
    if (!gi || at < 0) throw new GpuError('not-found', op, index, `no compute instance ${computeInstanceId} in GPU instance ${gpuInstanceId}`);
    const users = gpu.processes.filter((p) => p.gpuInstanceId === gpuInstanceId && p.computeInstanceId === computeInstanceId);
    if (users.length > 0) {
      throw new GpuError('in-use', op, index, `In use by another client (processes ${users.map((p) => p.pid).join(', ')})`);
    }
    gi.computeInstances.splice(at, 1);
  }

  destroyGpuInstance(index: number, gpuInstanceId: number): void {
    const op = 'destroy GPU instance';
    const gpu = this.gpu(index, op);
    this.checkFault('destroyGpuInstance', index);
    const at = gpu.gpuInstances.findIndex((i) => i.id === gpuInstanceId);
    const gi = gpu.gpuInstances[at];
    if (!gi) throw new GpuError('not-found', op, index, `no GPU instance with ID ${gpuInstanceId}`);
    if (gi.computeInstances.length > 0) {
      throw new GpuError('in-use', op, index, `In use by another client (GPU instance ${gpuInstanceId} still has compute instances ${gi.computeInstances.map((c) => c.id).join(', ')})`);
    }
    gpu.gpuInstances.splice(at, 1);
  }

  /**
   * Starts a pretend process on a GPU (whole GPU when MIG is off) or on a MIG device, for tests
   * and demos. Returns its pid.
   */
  attachProcess(index: number, target: { gpuInstanceId?: number; computeInstanceId?: number; usedMemoryMiB?: number; name?: string } = {}): number {
    const gpu = this.gpu(index, 'attach process');
    const gi = target.gpuInstanceId ?? null;
    const ci = target.computeInstanceId ?? null;
    if (gpu.migMode.current === 'enabled') {
      const exists = gpu.gpuInstances.find((i) => i.id === gi)?.computeInstances.some((c) => c.id === ci);
      if (!exists) throw new GpuError('not-found', 'attach process', index, `no MIG device GI ${gi} CI ${ci} to run on`);
    }
    const pid = this.state.nextPid++;
    gpu.processes.push({ pid, name: target.name ?? 'python', gpuInstanceId: gi, computeInstanceId: ci, usedMemoryMiB: target.usedMemoryMiB ?? 500 });
    return pid;
  }

  /** Ends a pretend process. */
  detachProcess(pid: number): void {
    for (const gpu of this.state.gpus) gpu.processes = gpu.processes.filter((p) => p.pid !== pid);
  }
}
