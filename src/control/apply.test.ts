import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GpuError, type GpuPort } from '../gpu/port.js';
import { SimulatedGpuPort } from '../gpu/simulated/driver.js';
import { SimulatedMachine } from '../gpu/simulated/machine.js';
import { parseSimulateSpec } from '../gpu/simulated/spec.js';
import { GPU_MODELS } from '../mig/catalog/index.js';
import { enumerateLayouts } from '../mig/geometry.js';
import { resolveMigDevices } from '../partition/desired.js';
import { migDeviceCounts, type DesiredGpu } from '../partition/state.js';
import { exportMigPartedConfig } from '../partition/export.js';
import { dryRunLines, executePlans, planAll } from './apply.js';
import { assertDifferences, exportGpusOf } from './mig-config.js';
import { JournalFile } from './journal.js';
import { readCurrentState } from './state-reader.js';

function journal(): JournalFile {
  return new JournalFile(join(mkdtempSync(join(tmpdir(), 'migpool-journal-')), 'apply-journal.json'));
}

/** Plans and applies `devices` on every GPU of the port. */
async function apply(port: GpuPort, devices: Record<string, number>, j = journal(), options: { force?: boolean; skipReset?: boolean } = {}) {
  const found = await readCurrentState(port);
  const desired = new Map<number, DesiredGpu>();
  for (const g of found) if (g.current) desired.set(g.info.index, { migEnabled: true, groups: resolveMigDevices(g.current.model, devices, 'test') });
  const { plans, refusals } = planAll(found, desired, options);
  if (refusals.length > 0) throw new Error(refusals.join('; '));
  const report = await executePlans(port, plans, 'test', j, options);
  return { plans, report };
}

async function countsOf(port: GpuPort): Promise<Record<string, number>> {
  const found = await readCurrentState(port);
  return migDeviceCounts(found[0]?.current?.instances ?? []);
}

function countsOfLayout(instances: readonly { profile: { name: string } }[]): Record<string, number> {
  const c: Record<string, number> = {};
  for (const i of instances) c[i.profile.name] = (c[i.profile.name] ?? 0) + 1;
  return c;
}

describe('apply on the simulator', () => {
  it('every catalogued GPU, every legal layout: apply, assert, export gives the layout back, apply again does nothing', async () => {
    let layouts = 0;
    for (const model of GPU_MODELS) {
      const machine = SimulatedMachine.create(parseSimulateSpec(model.name));
      const port = new SimulatedGpuPort(machine);
      for (const layout of enumerateLayouts(model)) {
        const want = countsOfLayout(layout.instances);
        await apply(port, want);
        const found = await readCurrentState(port);
        const desired = new Map<number, DesiredGpu>([[0, { migEnabled: true, groups: resolveMigDevices(model, want, 'test') }]]);
        expect(assertDifferences(found, desired, false)).toEqual([]);
        const exported = exportMigPartedConfig(exportGpusOf(found));
        expect(exported['mig-configs']['current']?.[0]?.['mig-devices']).toEqual(want);
        const again = await apply(port, want);
        expect(again.plans.flatMap((p) => p.operations)).toEqual([]);
        layouts++;
      }
    }
    expect(layouts).toBeGreaterThan(1500);
  }, 120_000);

  it('changing layout keeps the instances that match, with their IDs and MIG device UUIDs', async () => {
    const model = GPU_MODELS.find((m) => m.name === 'A100-40GB');
    if (!model) throw new Error('no A100');
    const all = enumerateLayouts(model);
    await fc.assert(
      fc.asyncProperty(fc.nat(), fc.nat(), async (i, j) => {
        const port = new SimulatedGpuPort(SimulatedMachine.create(parseSimulateSpec('A100-40GB')));
        const from = all[i % all.length];
        const to = all[j % all.length];
        if (!from || !to) return;
        await apply(port, countsOfLayout(from.instances));
        const before = await port.listComputeInstances(0);
        const { plans } = await apply(port, countsOfLayout(to.instances));
        const after = await port.listComputeInstances(0);
        const kept = plans[0]?.kept ?? [];
        for (const k of kept) {
          const uuid = before.find((c) => c.gpuInstanceId === k.id)?.uuid;
          expect(after.find((c) => c.gpuInstanceId === k.id)?.uuid).toBe(uuid);
        }
        expect(await countsOf(port)).toEqual(countsOfLayout(to.instances));
      }),
      { numRuns: 60, seed: 5 },
    );
  });

  it('resets only the GPUs whose mode change is pending (A100 yes, H100 no)', async () => {
    const machine = SimulatedMachine.create(parseSimulateSpec('1xA100-SXM4-40GB,1xH100-80GB'));
    const calls: string[] = [];
    const port = new SimulatedGpuPort(machine);
    const spy: GpuPort = Object.assign(Object.create(port) as GpuPort, {
      resetGpu: async (gpu: number) => {
        calls.push(`reset ${gpu}`);
        return port.resetGpu(gpu);
      },
    });
    const found = await readCurrentState(spy);
    const desired = new Map<number, DesiredGpu>(found.map((g) => [g.info.index, { migEnabled: true, groups: [] }]));
    await executePlans(spy, planAll(found, desired, {}).plans, 'test', journal());
    expect(calls).toEqual(['reset 0']);
    expect((await port.listGpus()).map((g) => g.migMode?.current)).toEqual(['enabled', 'enabled']);
  });

  it('turning MIG off destroys the instances, then changes the mode and resets', async () => {
    const port = new SimulatedGpuPort(SimulatedMachine.create(parseSimulateSpec('2xA100-SXM4-40GB')));
    await apply(port, { '3g.20gb': 2 });
    const found = await readCurrentState(port);
    const off = new Map<number, DesiredGpu>(found.map((g) => [g.info.index, { migEnabled: false, groups: [] }]));
    await executePlans(port, planAll(found, off, {}).plans, 'test', journal());
    expect((await port.listGpus()).map((g) => g.migMode)).toEqual([
      { current: 'disabled', pending: 'disabled' },
      { current: 'disabled', pending: 'disabled' },
    ]);
    expect(await port.listGpuInstances()).toEqual([]);
  });

  it('--skip-reset leaves the change pending and creates nothing on that GPU', async () => {
    const port = new SimulatedGpuPort(SimulatedMachine.create(parseSimulateSpec('A100-40GB')));
    const { report } = await apply(port, { '7g.40gb': 1 }, journal(), { skipReset: true });
    expect(report.notes[0]).toMatch(/GPU 0: MIG mode change pending; reset skipped/);
    expect((await port.listGpus())[0]?.migMode).toEqual({ current: 'disabled', pending: 'enabled' });
  });
});

describe('apply when things go wrong', () => {
  async function a100WithLayout(devices: Record<string, number>) {
    const machine = SimulatedMachine.create(parseSimulateSpec('A100-40GB'));
    const port = new SimulatedGpuPort(machine);
    await apply(port, devices);
    return { machine, port };
  }

  it('a busy instance in the way: refuses, says which, changes nothing', async () => {
    const { machine, port } = await a100WithLayout({ '3g.20gb': 2 });
    const [first] = await port.listComputeInstances(0);
    if (!first) throw new Error('no CI');
    machine.attachProcess(0, { gpuInstanceId: first.gpuInstanceId, computeInstanceId: first.id, name: 'train.py' });
    const before = await port.listGpuInstances(0);
    await expect(apply(port, { '7g.40gb': 1 })).rejects.toThrow(/runs processes 4000; nothing changed \(use --force to destroy them\)/);
    expect(await port.listGpuInstances(0)).toEqual(before);
    // A target that keeps the busy instance goes ahead around it.
    await apply(port, { '3g.20gb': 1, '1g.5gb': 3 });
    expect((await port.listGpuInstances(0)).some((g) => g.id === first.gpuInstanceId)).toBe(true);
  });

  it('--force with a busy instance and no way to stop its process: refuses before the first operation, changes nothing', async () => {
    const { machine, port } = await a100WithLayout({ '1g.5gb': 7 });
    const cis = await port.listComputeInstances(0);
    const busy = cis[3];
    if (!busy) throw new Error('no CI');
    const pid = machine.attachProcess(0, { gpuInstanceId: busy.gpuInstanceId, computeInstanceId: busy.id });
    const before = await port.listComputeInstances(0);
    const j = journal();
    // Before the check, this destroyed the idle instances and then failed on the busy one ("In use by another client").
    await expect(apply(port, { '7g.40gb': 1 }, j, { force: true })).rejects.toThrow(new RegExp(`GPU 0: processes ${pid} run on instances the target destroys .*; nothing changed`));
    expect(await port.listComputeInstances(0)).toEqual(before);
    expect(j.read()).toBeNull();
  });

  it('--force with a way to stop the processes: stops them first, then applies in full', async () => {
    const { machine, port } = await a100WithLayout({ '3g.20gb': 2 });
    const [first] = await port.listComputeInstances(0);
    if (!first) throw new Error('no CI');
    const pid = machine.attachProcess(0, { gpuInstanceId: first.gpuInstanceId, computeInstanceId: first.id });
    const found = await readCurrentState(port);
    const desired = new Map<number, DesiredGpu>([[0, { migEnabled: true, groups: resolveMigDevices(found[0]?.current?.model ?? GPU_MODELS[0]!, { '7g.40gb': 1 }, 'test') }]]);
    const { plans } = planAll(found, desired, { force: true });
    expect(plans[0]?.forcedPids).toEqual([pid]);
    const stopped: number[] = [];
    await executePlans(port, plans, 'test', journal(), {
      stopProcesses: (ps) => {
        for (const p of ps) {
          stopped.push(p.pid);
          machine.detachProcess(p.pid);
        }
        return Promise.resolve();
      },
    });
    expect(stopped).toEqual([pid]);
    expect(await countsOf(port)).toEqual({ '7g.40gb': 1 });
  });

  it('dry-run lines under skip-reset: no reset, and no instance changes held back by the pending mode', async () => {
    const machine = SimulatedMachine.create(parseSimulateSpec('A100-40GB'));
    const found = await readCurrentState(new SimulatedGpuPort(machine));
    const model = found[0]?.current?.model ?? GPU_MODELS[0]!;
    const { plans } = planAll(found, new Map([[0, { migEnabled: true, groups: resolveMigDevices(model, { '3g.20gb': 2 }, 'test') }]]), {});
    expect(dryRunLines(plans, false).some((l) => l.startsWith('nvidia-smi -i 0 -r'))).toBe(true);
    expect(dryRunLines(plans, true)).toEqual(['nvidia-smi -i 0 -mig 1', expect.stringMatching(/^# GPU 0: the MIG mode change stays pending \(--skip-reset\)/)]);
  });

  it('insufficient resources from the driver: the error names GPU, operation and reason; the next apply finishes', async () => {
    const { machine, port } = await a100WithLayout({ '1g.5gb': 7 });
    machine.injectFault({ operation: 'createGpuInstance', kind: 'insufficient-resources', message: 'Insufficient Resources' });
    const j = journal();
    const e = await apply(port, { '3g.20gb': 1, '1g.5gb': 4 }, j).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(GpuError);
    expect((e as GpuError).message).toMatch(/^GPU 0: create GPU instance: Insufficient Resources; \d+ of \d+ operations done, \d+ not started; run apply again to finish \(journal: /);
    expect(j.read()?.failure).toMatch(/Insufficient Resources/);
    const { report } = await apply(port, { '3g.20gb': 1, '1g.5gb': 4 }, j);
    expect(report.resumed).toMatch(/an earlier apply of test .* stopped after \d+ of \d+ operations, stopping at create-gi on GPU 0/);
    expect(await countsOf(port)).toEqual({ '3g.20gb': 1, '1g.5gb': 4 });
    expect(j.read()).toBeNull();
  });

  it('reset blocked by a client: a typed error, MIG left pending, nothing else touched', async () => {
    const machine = SimulatedMachine.create(parseSimulateSpec('A100-40GB'));
    const port = new SimulatedGpuPort(machine);
    machine.injectFault({ operation: 'resetGpu', kind: 'reset-blocked', message: 'In use by another client' });
    const e = (await apply(port, { '7g.40gb': 1 }).catch((x: unknown) => x)) as GpuError;
    expect(e.kind).toBe('reset-blocked');
    expect(e.message).toMatch(/^GPU 0: reset: In use by another client; 1 of 4 operations done/);
    expect((await port.listGpus())[0]?.migMode).toEqual({ current: 'disabled', pending: 'enabled' });
    await apply(port, { '7g.40gb': 1 });
    expect(await countsOf(port)).toEqual({ '7g.40gb': 1 });
  });

  it('a crash between two operations: the journal says where, and a new apply ends in the target state', async () => {
    const { port } = await a100WithLayout({ '1g.5gb': 7 });
    const j = journal();
    let calls = 0;
    const crashing: GpuPort = Object.assign(Object.create(port) as GpuPort, {
      createGpuInstance: async (gpu: number, profile: string, start: number) => {
        if (++calls === 2) throw new Error('killed');
        return port.createGpuInstance(gpu, profile, start);
      },
    });
    await expect(apply(crashing, { '2g.10gb': 3, '1g.5gb': 1 }, j)).rejects.toThrow('killed');
    expect(j.read()?.operations.some((o) => o.status === 'failed')).toBe(true);
    const { report } = await apply(port, { '2g.10gb': 3, '1g.5gb': 1 }, j);
    expect(report.resumed).toMatch(/stopped after/);
    expect(await countsOf(port)).toEqual({ '2g.10gb': 3, '1g.5gb': 1 });
  });
});
