import { statSync } from 'node:fs';
import type { ComputeInstanceInfo, GpuInfo, GpuInstanceInfo, GpuPort, GpuProcess } from '../port.js';
import { SimulatedGpuPort } from './driver.js';
import type { SimulatedMachine } from './machine.js';
import { loadMachine, saveMachine } from './state-file.js';

/**
 * A simulated machine kept in its state file, shared with other processes (`migpool sim attach`,
 * the fake nvidia-smi that jobs run): every call first reads the file again when another process
 * changed it since this port last read or wrote it, so that their changes are seen and never
 * overwritten by a stale copy.
 */
export class FileSimulatedGpuPort implements GpuPort {
  private machine: SimulatedMachine;
  private seen: string | null = null;

  constructor(
    private readonly path: string,
    machine: SimulatedMachine,
  ) {
    this.machine = machine;
    this.seen = this.stamp();
  }

  private stamp(): string | null {
    try {
      const s = statSync(this.path);
      return `${s.mtimeMs}|${s.size}|${s.ino}`;
    } catch {
      return null;
    }
  }

  /** The port over the file's current state (read again when someone else wrote it). */
  private port(): SimulatedGpuPort {
    const now = this.stamp();
    if (now !== null && now !== this.seen) {
      this.machine = loadMachine(this.path) ?? this.machine;
      this.seen = now;
    }
    const m = this.machine;
    return new SimulatedGpuPort(m, () => {
      saveMachine(this.path, m);
      this.seen = this.stamp();
    });
  }

  listGpus(): Promise<GpuInfo[]> {
    return this.port().listGpus();
  }
  listGpuInstances(gpu?: number): Promise<GpuInstanceInfo[]> {
    return this.port().listGpuInstances(gpu);
  }
  listComputeInstances(gpu?: number): Promise<ComputeInstanceInfo[]> {
    return this.port().listComputeInstances(gpu);
  }
  listProcesses(): Promise<GpuProcess[]> {
    return this.port().listProcesses();
  }
  setMigMode(gpu: number, enabled: boolean): Promise<{ pending: boolean }> {
    return this.port().setMigMode(gpu, enabled);
  }
  resetGpu(gpu: number): Promise<void> {
    return this.port().resetGpu(gpu);
  }
  createGpuInstance(gpu: number, profile: string, start: number): Promise<GpuInstanceInfo> {
    return this.port().createGpuInstance(gpu, profile, start);
  }
  createComputeInstance(gpu: number, gpuInstanceId: number, profile: string): Promise<ComputeInstanceInfo> {
    return this.port().createComputeInstance(gpu, gpuInstanceId, profile);
  }
  destroyComputeInstance(gpu: number, gpuInstanceId: number, computeInstanceId: number): Promise<void> {
    return this.port().destroyComputeInstance(gpu, gpuInstanceId, computeInstanceId);
  }
  destroyGpuInstance(gpu: number, gpuInstanceId: number): Promise<void> {
    return this.port().destroyGpuInstance(gpu, gpuInstanceId);
  }
}
