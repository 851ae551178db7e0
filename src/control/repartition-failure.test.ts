import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createLocalExecutor } from '../exec/local-executor.js';
import { SimulatedGpuPort } from '../gpu/simulated/driver.js';
import { SimulatedMachine } from '../gpu/simulated/machine.js';
import { parseSimulateSpec } from '../gpu/simulated/spec.js';
import type { Policy } from '../sched/types.js';
import { openSqliteStore } from '../store/sqlite.js';
import { PoolServiceImpl } from './service.js';

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0)) await c();
});

describe('a re-partition the driver refuses', () => {
  it("is reported in the service's words (back-off, what holds the GPU), not the apply command's", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'migpool-repart-'));
    const machine = SimulatedMachine.create(parseSimulateSpec('1xA100-SXM4-40GB'), 1, '1xA100-SXM4-40GB');
    // The driver refuses the change (as nvidia-smi does when a client it cannot name holds the GPU);
    // a process the service can see would keep the policy from asking at all (sched/check.ts).
    for (let i = 0; i < 5; i++) machine.injectFault({ operation: 'setMigMode', gpu: 0, kind: 'in-use', message: 'Unable to enable MIG mode: In use by another client' });
    const store = await openSqliteStore(join(dir, 'migpool.db'));
    await store.init();
    // A policy that wants GPU 0 cut into seven 1g.5gb slices.
    const policy: Policy = {
      name: 'cut-once',
      decide: (view) => (view.gpus[0]?.migEnabled ? [] : [{ kind: 'repartition', gpu: 0, layout: [0, 1, 2, 3, 4, 5, 6].map((start) => ({ profile: '1g.5gb', start })) }]),
    };
    const service = new PoolServiceImpl({ store, executor: createLocalExecutor({ pollMs: 50, graceSeconds: 1 }), gpu: new SimulatedGpuPort(machine), policy, dataDir: dir, tickMs: 50, log: () => {} });
    cleanup.push(async () => {
      await service.stop();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    });
    await service.start();
    let failed: { error?: string; retryInSeconds?: number } | undefined;
    for (let i = 0; i < 200 && !failed; i++) {
      failed = (await service.events(0)).find((e) => e.type === 'gpu-reconfigure-failed')?.data as typeof failed;
      if (!failed) await new Promise((r) => setTimeout(r, 25));
    }
    expect(failed?.error).toMatch(/In use by another client; 0 of \d+ operations done, \d+ not started; the service plans this GPU afresh after a back-off/);
    expect(failed?.error).not.toMatch(/apply again|--force/);
    expect(failed?.retryInSeconds).toBeGreaterThan(0);
    expect(machine.listGpus()[0]?.migMode?.current).toBe('disabled');
    // A job waiting meanwhile hears why the GPU is not cut for it.
    const job = await service.submit({ name: 'waits', command: ['true'], resources: { profile: '1g.5gb' } });
    let pending = '';
    for (let i = 0; i < 200 && !/re-partitioned/.test(pending); i++) {
      await new Promise((r) => setTimeout(r, 25));
      pending = (await service.getJob(job.id))?.pending ?? '';
    }
    expect(pending).toMatch(/GPU 0 is not re-partitioned for \d+ s more: its last try failed \(.*In use by another client/);
  });

  it('backs off longer at every failure in a row, even when the GPU goes back to MIG off in between', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'migpool-repart-'));
    const machine = SimulatedMachine.create(parseSimulateSpec('1xA100-SXM4-40GB'), 1, '1xA100-SXM4-40GB');
    // GPU instance creation fails three times (a faulty GPU); MIG mode changes still work.
    for (let i = 0; i < 3; i++) machine.injectFault({ operation: 'createGpuInstance', gpu: 0, kind: 'unknown', message: 'injected fault' });
    const store = await openSqliteStore(join(dir, 'migpool.db'));
    await store.init();
    // As the live service's policy did (seen on 2xA100 with a fault injected): a MIG GPU without
    // instances goes back to MIG off, a MIG-off one is cut into seven slices; a failed cut leaves
    // MIG on, so every other re-partition succeeds.
    const seven = [0, 1, 2, 3, 4, 5, 6].map((start) => ({ profile: '1g.5gb', start }));
    const policy: Policy = {
      name: 'flip',
      decide: (view) => {
        const g = view.gpus[0]!;
        if (!g.migEnabled) return [{ kind: 'repartition', gpu: 0, layout: seven }];
        return g.instances.length === 0 ? [{ kind: 'repartition', gpu: 0, layout: null }] : [];
      },
    };
    let now = 1_000_000;
    const service = new PoolServiceImpl({ store, executor: createLocalExecutor({ pollMs: 50, graceSeconds: 1 }), gpu: new SimulatedGpuPort(machine), policy, dataDir: dir, tickMs: 20, now: () => now, log: () => {} });
    cleanup.push(async () => {
      await service.stop();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    });
    await service.start();
    const failures = async (n: number) => {
      for (let i = 0; i < 400; i++) {
        const seen = (await service.events(0)).filter((e) => e.type === 'gpu-reconfigure-failed').map((e) => e.data as { failures: number; retryInSeconds: number });
        if (seen.length >= n) return seen;
        await new Promise((r) => setTimeout(r, 10));
      }
      throw new Error(`fewer than ${n} failed re-partitions`);
    };
    expect((await failures(1))[0]).toMatchObject({ failures: 1, retryInSeconds: 5 });
    now += 5_001;
    expect((await failures(2))[1]).toMatchObject({ failures: 2, retryInSeconds: 10 });
    now += 10_001;
    expect((await failures(3))[2]).toMatchObject({ failures: 3, retryInSeconds: 20 });
    // MIG off succeeded between the failures each time (the run of failures was not reset by it).
    expect((await service.events(0)).filter((e) => e.type === 'gpu-reconfigured' && (e.data as { layout: unknown }).layout === null).length).toBeGreaterThanOrEqual(2);
    now += 20_001;
    for (let i = 0; i < 400 && machine.listGpuInstances(0).length < 7; i++) await new Promise((r) => setTimeout(r, 10));
    expect(machine.listGpuInstances(0)).toHaveLength(7);
  });
});
