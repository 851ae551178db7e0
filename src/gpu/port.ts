import { MigpoolError } from '../errors.js';

/**
 * The GPU port: one interface for a node's GPUs, implemented by the nvidia-smi adapter (real
 * hardware, or the fake `nvidia-smi` executable) and by the in-memory simulator. Both pass the
 * conformance suite in `conformance.ts`.
 *
 * Deliberately left out: clocks, power, ECC, persistence mode and anything else migpool never
 * changes; compute-instance placement (the driver picks it inside the GPU instance).
 */
export interface GpuPort {
  /** Every GPU of the node, by index. */
  listGpus(): Promise<GpuInfo[]>;
  /** GPU instances, of one GPU or of all. */
  listGpuInstances(gpu?: number): Promise<GpuInstanceInfo[]>;
  /** Compute instances, of one GPU or of all, with their MIG device UUIDs. */
  listComputeInstances(gpu?: number): Promise<ComputeInstanceInfo[]>;
  /** Processes using a GPU, with the MIG device they run on when the GPU is in MIG mode. */
  listProcesses(): Promise<GpuProcess[]>;
  /**
   * Asks for MIG mode on or off. Returns whether the change is still pending (it then takes
   * effect at the next GPU reset: always on A100/A30, or while something holds the GPU).
   */
  setMigMode(gpu: number, enabled: boolean): Promise<{ pending: boolean }>;
  /** Resets a GPU (applies a pending MIG mode; destroys its instances). Refused while in use. */
  resetGpu(gpu: number): Promise<void>;
  /** Creates a GPU instance of `profile` (name such as `3g.20gb`) at placement `start`. */
  createGpuInstance(gpu: number, profile: string, start: number): Promise<GpuInstanceInfo>;
  /** Creates a compute instance of `profile` (`3g.20gb` for the full GI, `1c.3g.20gb`, ...) in a GI. */
  createComputeInstance(gpu: number, gpuInstanceId: number, profile: string): Promise<ComputeInstanceInfo>;
  destroyComputeInstance(gpu: number, gpuInstanceId: number, computeInstanceId: number): Promise<void>;
  /** Destroys a GPU instance; refused while it still holds compute instances. */
  destroyGpuInstance(gpu: number, gpuInstanceId: number): Promise<void>;
}

export type MigModeState = 'enabled' | 'disabled';

export interface GpuInfo {
  readonly index: number;
  readonly uuid: string;
  /** Product name as nvidia-smi prints it: `NVIDIA A100-SXM4-40GB`. */
  readonly name: string;
  /** PCI device ID as mig-parted writes it: `0x20B010DE`. */
  readonly pciDeviceId: string;
  readonly busId: string;
  readonly memoryMiB: number;
  readonly migCapable: boolean;
  /** Null where the GPU is not MIG-capable. */
  readonly migMode: { readonly current: MigModeState; readonly pending: MigModeState } | null;
}

export interface GpuInstanceInfo {
  readonly gpu: number;
  readonly id: number;
  /** Profile name without `MIG `: `3g.20gb`. */
  readonly profile: string;
  readonly profileId: number;
  readonly start: number;
  readonly size: number;
}

export interface ComputeInstanceInfo {
  readonly gpu: number;
  readonly gpuInstanceId: number;
  readonly id: number;
  /** `3g.20gb` for the full-size CI, `1c.3g.20gb` otherwise. */
  readonly profile: string;
  readonly profileId: number;
  /** MIG device UUID (`MIG-...`), what CUDA_VISIBLE_DEVICES takes. */
  readonly uuid: string;
}

export interface GpuProcess {
  readonly pid: number;
  readonly name: string;
  readonly gpu: number;
  /** Null when the GPU is not in MIG mode (the process holds the whole GPU). */
  readonly gpuInstanceId: number | null;
  readonly computeInstanceId: number | null;
  readonly usedMemoryMiB: number;
}

/** Why a GPU operation failed, as the driver says it. */
export type GpuErrorKind =
  | 'in-use'
  | 'insufficient-resources'
  | 'not-supported'
  | 'mode-change-pending'
  | 'reset-blocked'
  | 'no-permission'
  | 'driver-not-loaded'
  | 'not-found'
  | 'invalid-argument'
  | 'nvidia-smi-missing'
  /** A GPU no longer answers the driver (fallen off the bus: "Unable to determine the device handle"). */
  | 'gpu-lost'
  | 'unparseable'
  | 'timeout'
  | 'unknown';

/** A failed GPU operation: which GPU, which operation, and the driver's reason, typed. */
export class GpuError extends MigpoolError {
  readonly kind: GpuErrorKind;
  readonly gpu: number | null;
  readonly operation: string;
  /** The reason alone, without the GPU and operation the message starts with. */
  readonly reason: string;

  constructor(kind: GpuErrorKind, operation: string, gpu: number | null, message: string) {
    super('DEVICE', gpu === null ? `${operation}: ${message}` : `GPU ${gpu}: ${operation}: ${message}`, { kind, gpu, operation });
    this.name = 'GpuError';
    this.kind = kind;
    this.gpu = gpu;
    this.operation = operation;
    this.reason = message;
  }
}

/** A GPU the driver names as not answering: its index and PCI bus ID as far as known, and why. */
export interface UnreachableGpu {
  readonly index: number | null;
  readonly busId: string | null;
  readonly reason: string;
}

/**
 * What to do about GPUs that do not answer. The kernel log says why ("NVRM: Xid (PCI:0000:2b:00):
 * 79, GPU has fallen off the bus.": NVIDIA/open-gpu-kernel-modules#1151, #387); nvidia-smi's own
 * text for it is "GPU is lost. Reboot the system to recover this GPU" (JosephKJ/OWOD#81), and
 * NVML's NVML_ERROR_GPU_IS_LOST reads "The GPU has fallen off the bus or has otherwise become
 * inaccessible".
 */
export function unreachableAdvice(lost: readonly UnreachableGpu[]): string {
  const bus = lost.find((l) => l.busId !== null)?.busId ?? 'BUS_ID';
  return `fallen off the bus? look for Xid 79 in dmesg; reset it with nvidia-smi -r -i ${bus} or reboot the node, and reseat it if it comes back lost`;
}

/** `GPU 3 (0000:04:00.0)`, `GPU 0000:0B:00.0` or `GPU 2`: how a GPU that does not answer is named in messages. */
export function unreachableGpuName(g: UnreachableGpu): string {
  if (g.index !== null && g.busId !== null) return `GPU ${g.index} (${g.busId})`;
  return `GPU ${g.busId ?? g.index ?? '?'}`;
}

/**
 * Whether two PCI bus IDs name the same device, in the forms nvidia-smi prints them: listings
 * (`--query-gpu=pci.bus_id`) write an 8-digit domain and capitals (`00000000:3B:00.0`), the
 * lost-GPU lines a 4-digit one (`0000:3b:00.0`; see nvidia-smi/notices.ts).
 */
export function sameBusId(a: string, b: string): boolean {
  const norm = (x: string): string => {
    const m = /^([0-9a-f]+):([0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f])$/i.exec(x.trim());
    return m ? `${Number.parseInt(m[1] ?? '0', 16)}:${(m[2] ?? '').toLowerCase()}` : x.trim().toLowerCase();
  };
  return norm(a) === norm(b);
}

/**
 * `listGpus` found GPUs that no longer answer the driver (one fell off the bus) beside others
 * that do. Commands that change GPUs stop on it (kind `gpu-lost`, exit 3, the message names the
 * GPUs and what to do); a caller that can go on with the rest (the service, `status`) takes
 * `answered`, the GPUs that were listed.
 */
export class GpuLostError extends GpuError {
  readonly answered: readonly GpuInfo[];
  readonly lost: readonly UnreachableGpu[];

  constructor(operation: string, message: string, answered: readonly GpuInfo[], lost: readonly UnreachableGpu[]) {
    super('gpu-lost', operation, null, message);
    this.name = 'GpuLostError';
    this.answered = answered;
    this.lost = lost;
  }
}
