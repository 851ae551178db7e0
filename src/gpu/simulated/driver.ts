import type { ComputeInstanceInfo, GpuInfo, GpuInstanceInfo, GpuPort, GpuProcess } from '../port.js';
import type { SimulatedMachine } from './machine.js';

/**
 * The GPU port over an in-memory simulated machine. `onChange` runs after every operation that
 * changed the machine (the CLI uses it to write the state file).
 */
export class SimulatedGpuPort implements GpuPort {
  readonly machine: SimulatedMachine;
  private readonly onChange: () => void;

  constructor(machine: SimulatedMachine, onChange: () => void = () => undefined) {
    this.machine = machine;
    this.onChange = onChange;
  }

  /** Writes the machine's state now (after changing it directly, e.g. attaching a process). */
  persist(): void {
    this.onChange();
  }

  /** Runs a mutation, persisting the state whether it succeeded or not (a fault is consumed). */
  private mutate<T>(op: () => T): Promise<T> {
    try {
      return Promise.resolve(op());
    } catch (e) {
      return Promise.reject(e);
    } finally {
      this.onChange();
    }
  }

  listGpus(): Promise<GpuInfo[]> {
    return Promise.resolve(this.machine.listGpus());
  }

  listGpuInstances(gpu?: number): Promise<GpuInstanceInfo[]> {
    return Promise.resolve(this.machine.listGpuInstances(gpu));
  }

  listComputeInstances(gpu?: number): Promise<ComputeInstanceInfo[]> {
    return Promise.resolve(this.machine.listComputeInstances(gpu));
  }

  listProcesses(): Promise<GpuProcess[]> {
    return Promise.resolve(this.machine.listProcesses());
  }

  setMigMode(gpu: number, enabled: boolean): Promise<{ pending: boolean }> {
    return this.mutate(() => ({ pending: this.machine.setMigMode(gpu, enabled).pending }));
  }

  resetGpu(gpu: number): Promise<void> {
    return this.mutate(() => this.machine.resetGpu(gpu));
  }

  createGpuInstance(gpu: number, profile: string, start: number): Promise<GpuInstanceInfo> {
    return this.mutate(() => this.machine.createGpuInstance(gpu, profile, start));
  }

  createComputeInstance(gpu: number, gpuInstanceId: number, profile: string): Promise<ComputeInstanceInfo> {
    return this.mutate(() => this.machine.createComputeInstance(gpu, gpuInstanceId, profile));
  }

  destroyComputeInstance(gpu: number, gpuInstanceId: number, computeInstanceId: number): Promise<void> {
    return this.mutate(() => this.machine.destroyComputeInstance(gpu, gpuInstanceId, computeInstanceId));
  }

  destroyGpuInstance(gpu: number, gpuInstanceId: number): Promise<void> {
    return this.mutate(() => this.machine.destroyGpuInstance(gpu, gpuInstanceId));
  }
}
