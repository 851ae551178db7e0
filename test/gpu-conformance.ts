import { beforeEach, describe, expect, it } from 'vitest';
import { GpuError, type GpuErrorKind, type GpuPort } from '../src/gpu/port.js';
import type { SimulatedMachine } from '../src/gpu/simulated/machine.js';

/**
 * What a conformance run needs from an adapter: the port under test over a fresh simulated box of
 * one A100-SXM4-40GB (GPU 0) and one H100-80GB (GPU 1), and a way to act on the box directly (start
 * a process, inject a fault) the way the world would, behind the port's back.
 */
export interface ConformanceHarness {
  readonly port: GpuPort;
  control(act: (machine: SimulatedMachine) => void): void;
}

async function failure(promise: Promise<unknown>): Promise<GpuError> {
  try {
    await promise;
  } catch (e) {
    if (e instanceof GpuError) return e;
    throw e;
  }
  throw new Error('expected the operation to fail');
}

async function expectKind(promise: Promise<unknown>, kind: GpuErrorKind): Promise<GpuError> {
  const e = await failure(promise);
  expect(e.kind).toBe(kind);
  expect(e.message.split('\n')).toHaveLength(1);
  return e;
}

/**
 * The GPU port contract. Every adapter (the in-memory simulator, nvidia-smi over the fake
 * executable) runs this same file with its own harness factory.
 */
export function gpuPortConformance(name: string, makeHarness: () => Promise<ConformanceHarness>): void {
  describe(`GPU port conformance: ${name}`, () => {
    let h: ConformanceHarness;
    beforeEach(async () => {
      h = await makeHarness();
    });

    /** Enables MIG on GPU 0 (A100: pending until reset). */
    async function migOnA100(): Promise<void> {
      await h.port.setMigMode(0, true);
      await h.port.resetGpu(0);
    }

    it('lists GPUs as shipped: MIG-capable, MIG disabled', async () => {
      const gpus = await h.port.listGpus();
      expect(gpus.map((g) => [g.index, g.name, g.pciDeviceId, g.migCapable])).toEqual([
        [0, 'NVIDIA A100-SXM4-40GB', '0x20B010DE', true],
        [1, 'NVIDIA H100 80GB HBM3', '0x233010DE', true],
      ]);
      for (const g of gpus) {
        expect(g.uuid).toMatch(/^GPU-[0-9a-f-]{36}$/);
        expect(g.migMode).toEqual({ current: 'disabled', pending: 'disabled' });
        expect(g.memoryMiB).toBeGreaterThan(0);
      }
      expect(await h.port.listGpuInstances()).toEqual([]);
      expect(await h.port.listComputeInstances()).toEqual([]);
      expect(await h.port.listProcesses()).toEqual([]);
    });

    it('on an A100 a MIG mode change stays pending until a reset', async () => {
      expect(await h.port.setMigMode(0, true)).toEqual({ pending: true });
      expect((await h.port.listGpus())[0]?.migMode).toEqual({ current: 'disabled', pending: 'enabled' });
      await expectKind(h.port.createGpuInstance(0, '1g.5gb', 0), 'mode-change-pending');
      await h.port.resetGpu(0);
      expect((await h.port.listGpus())[0]?.migMode).toEqual({ current: 'enabled', pending: 'enabled' });
    });

    it('on an H100 it applies at once', async () => {
      expect(await h.port.setMigMode(1, true)).toEqual({ pending: false });
      expect((await h.port.listGpus())[1]?.migMode).toEqual({ current: 'enabled', pending: 'enabled' });
      const gi = await h.port.createGpuInstance(1, '3g.40gb', 4);
      expect(gi).toMatchObject({ gpu: 1, profile: '3g.40gb', profileId: 9, start: 4, size: 4 });
    });

    it('creates GPU instances at explicit placements and lists them', async () => {
      await migOnA100();
      const made = [];
      for (const [profile, start] of [['3g.20gb', 4], ['2g.10gb', 0], ['1g.5gb', 2], ['1g.5gb', 3]] as const) {
        made.push(await h.port.createGpuInstance(0, profile, start));
      }
      expect(made.map((g) => `${g.profile}@${g.start}:${g.size}`)).toEqual(['3g.20gb@4:4', '2g.10gb@0:2', '1g.5gb@2:1', '1g.5gb@3:1']);
      const listed = await h.port.listGpuInstances(0);
      expect(listed.map((g) => `${g.id}:${g.profile}:${g.profileId}@${g.start}:${g.size}`).sort()).toEqual(
        made.map((g) => `${g.id}:${g.profile}:${g.profileId}@${g.start}:${g.size}`).sort(),
      );
      expect(new Set(listed.map((g) => g.id)).size).toBe(4);
      expect(await h.port.listGpuInstances(1)).toEqual([]);
    });

    it('refuses taken or illegal placements, and instances beyond the GPU', async () => {
      await migOnA100();
      await h.port.createGpuInstance(0, '4g.20gb', 0);
      await expectKind(h.port.createGpuInstance(0, '3g.20gb', 0), 'insufficient-resources');
      await expectKind(h.port.createGpuInstance(0, '1g.5gb', 7), 'invalid-argument');
      await h.port.createGpuInstance(0, '3g.20gb', 4);
      await expectKind(h.port.createGpuInstance(0, '1g.5gb', 6), 'insufficient-resources');
      expect(await h.port.listGpuInstances(0)).toHaveLength(2);
    });

    it('creates compute instances with MIG device UUIDs', async () => {
      await migOnA100();
      const whole = await h.port.createGpuInstance(0, '2g.10gb', 0);
      const split = await h.port.createGpuInstance(0, '3g.20gb', 4);
      const full = await h.port.createComputeInstance(0, whole.id, '2g.10gb');
      expect(full).toMatchObject({ gpu: 0, gpuInstanceId: whole.id, id: 0, profile: '2g.10gb', profileId: 1 });
      expect(full.uuid).toMatch(/^MIG-[0-9a-f-]{36}$/);
      const a = await h.port.createComputeInstance(0, split.id, '1c.3g.20gb');
      const b = await h.port.createComputeInstance(0, split.id, '1c.3g.20gb');
      expect([a.id, b.id]).toEqual([0, 1]);
      const cis = await h.port.listComputeInstances(0);
      expect(cis).toHaveLength(3);
      expect(new Set(cis.map((c) => c.uuid)).size).toBe(3);
      expect(cis.find((c) => c.gpuInstanceId === split.id && c.id === 1)?.uuid).toBe(b.uuid);
      await expectKind(h.port.createComputeInstance(0, whole.id, '2g.10gb'), 'insufficient-resources');
    });

    it('shows processes on their MIG device and refuses to destroy or reset under them', async () => {
      await migOnA100();
      const gi = await h.port.createGpuInstance(0, '3g.20gb', 0);
      const ci = await h.port.createComputeInstance(0, gi.id, '3g.20gb');
      let pid = 0;
      h.control((m) => {
        pid = m.attachProcess(0, { gpuInstanceId: gi.id, computeInstanceId: ci.id, usedMemoryMiB: 1234, name: 'train.py' });
      });
      expect(await h.port.listProcesses()).toEqual([
        { pid, name: 'train.py', gpu: 0, gpuInstanceId: gi.id, computeInstanceId: ci.id, usedMemoryMiB: 1234 },
      ]);
      await expectKind(h.port.destroyComputeInstance(0, gi.id, ci.id), 'in-use');
      await expectKind(h.port.destroyGpuInstance(0, gi.id), 'in-use');
      await expectKind(h.port.resetGpu(0), 'reset-blocked');
      h.control((m) => m.detachProcess(pid));
      await h.port.destroyComputeInstance(0, gi.id, ci.id);
      await h.port.destroyGpuInstance(0, gi.id);
      expect(await h.port.listGpuInstances(0)).toEqual([]);
    });

    it('a reset applies a pending disable and clears the instances', async () => {
      await migOnA100();
      await h.port.createGpuInstance(0, '7g.40gb', 0);
      expect(await h.port.setMigMode(0, false)).toEqual({ pending: true });
      await h.port.resetGpu(0);
      expect((await h.port.listGpus())[0]?.migMode).toEqual({ current: 'disabled', pending: 'disabled' });
      expect(await h.port.listGpuInstances()).toEqual([]);
    });

    it('reports unknown instances and GPUs as not found', async () => {
      await migOnA100();
      await expectKind(h.port.destroyGpuInstance(0, 9), 'not-found');
      await expectKind(h.port.destroyComputeInstance(0, 9, 0), 'not-found');
      await expectKind(h.port.setMigMode(5, true), 'not-found');
    });

    it('fails the way the hardware does when a fault is injected, then recovers', async () => {
      await migOnA100();
      h.control((m) => m.injectFault({ operation: 'createGpuInstance', kind: 'no-permission' }));
      await expectKind(h.port.createGpuInstance(0, '1g.5gb', 0), 'no-permission');
      const gi = await h.port.createGpuInstance(0, '1g.5gb', 0);
      h.control((m) => m.injectFault({ operation: 'destroyGpuInstance', kind: 'in-use' }));
      await expectKind(h.port.destroyGpuInstance(0, gi.id), 'in-use');
      await h.port.destroyGpuInstance(0, gi.id);
    });
  });
}
