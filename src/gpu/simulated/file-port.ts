import { statSync } from 'node:fs';
import type { ComputeInstanceInfo, GpuInfo, GpuInstanceInfo, GpuPort, GpuProcess } from '../port.js';
import { SimulatedGpuPort } from './driver.js';
import type { SimulatedMachine } from './machine.js';
import { loadMachine, saveMachine } from './state-file.js';
import { withStateLock } from './state-lock.js';

/**
 * A simulated machine kept in its state file, shared with other processes (`migpool sim attach`,
 * an apply, the fake nvidia-smi that jobs run). A read uses the file's latest state (read again
 * when another process wrote it since). A change reads the file, changes it and writes it back
 * holding the file's lock (state-lock.ts), so that a change another process makes at the same time
 * is never overwritten by a stale copy.
 */
export class FileSimulatedGpuPort implements GpuPort {
  private current: SimulatedMachine;
  private seen: string | null = null;

  constructor(
    readonly path: string,
    machine: SimulatedMachine,
  ) {
    this.current = machine;
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

  /** The machine as the file has it now (read again when someone else wrote it). */
  get machine(): SimulatedMachine {
    const now = this.stamp();
    if (now !== null && now !== this.seen) {
      this.current = loadMachine(this.path) ?? this.current;
      this.seen = now;
    }
    return this.current;
  }

  /**
   * Runs `change` on the file's latest state under its lock and writes the result, also when
   * `change` throws (a consumed injected fault is a change). `change` must be synchronous.
   */
  update<T>(change: (machine: SimulatedMachine) => T): T {
    return withStateLock(this.path, () => {
      // Always read under the lock: a stamp can repeat (an inode freed by one rename is reused).
      this.current = loadMachine(this.path) ?? this.current;
      try {
        return change(this.current);
      } finally {
        saveMachine(this.path, this.current);
        this.seen = this.stamp();
      }
    });
  }

  /** A read on the latest state. */
  private read(): SimulatedGpuPort {
    return new SimulatedGpuPort(this.machine);
  }

  /** A change through SimulatedGpuPort (whose operations run synchronously) under the lock. */
  private change<T>(op: (port: SimulatedGpuPort) => Promise<T>): Promise<T> {
    return this.update((m) => op(new SimulatedGpuPort(m)));
  }

  listGpus(): Promise<GpuInfo[]> {
    return this.read().listGpus();
  }
  listGpuInstances(gpu?: number): Promise<GpuInstanceInfo[]> {
    return this.read().listGpuInstances(gpu);
  }
  listComputeInstances(gpu?: number): Promise<ComputeInstanceInfo[]> {
    return this.read().listComputeInstances(gpu);
  }
  listProcesses(): Promise<GpuProcess[]> {
    return this.read().listProcesses();
  }
  setMigMode(gpu: number, enabled: boolean): Promise<{ pending: boolean }> {
    return this.change((p) => p.setMigMode(gpu, enabled));
  }
  resetGpu(gpu: number): Promise<void> {
    return this.change((p) => p.resetGpu(gpu));
  }
  createGpuInstance(gpu: number, profile: string, start: number): Promise<GpuInstanceInfo> {
    return this.change((p) => p.createGpuInstance(gpu, profile, start));
  }
  createComputeInstance(gpu: number, gpuInstanceId: number, profile: string): Promise<ComputeInstanceInfo> {
    return this.change((p) => p.createComputeInstance(gpu, gpuInstanceId, profile));
  }
  destroyComputeInstance(gpu: number, gpuInstanceId: number, computeInstanceId: number): Promise<void> {
    return this.change((p) => p.destroyComputeInstance(gpu, gpuInstanceId, computeInstanceId));
  }
  destroyGpuInstance(gpu: number, gpuInstanceId: number): Promise<void> {
    return this.change((p) => p.destroyGpuInstance(gpu, gpuInstanceId));
  }
}
