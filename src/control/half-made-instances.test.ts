import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createLocalExecutor } from '../exec/local-executor.js';
import { SimulatedGpuPort } from '../gpu/simulated/driver.js';
import { SimulatedMachine } from '../gpu/simulated/machine.js';
import { parseSimulateSpec } from '../gpu/simulated/spec.js';
import { parsePolicy } from '../sched/registry.js';
import { openSqliteStore } from '../store/sqlite.js';
import type { Store } from '../store/types.js';
import { PoolServiceImpl } from './service.js';
import { closeService, until } from '../../test/service-kit.js';

// The service started on GPUs that a re-partition left half made: killed between creating a GPU
// instance and its compute instance (the crash-consistency attack's finding: the slice was offered
// to jobs, every start on it failed, "GPU 0 has no instance at 4 for job 2", every pass, forever).

const dirs: string[] = [];
const services: { service: PoolServiceImpl; store: Store }[] = [];

afterEach(async () => {
  for (const { service, store } of services.splice(0)) await closeService(service, store);
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('a GPU instance left without its compute instance', () => {
  it('gets its compute instance at the next pass, and a job that fits it runs there', { timeout: 30_000 }, async () => {
    const machine = SimulatedMachine.create(parseSimulateSpec('1xA100-SXM4-40GB'), 1, '1xA100-SXM4-40GB');
    const gpu = new SimulatedGpuPort(machine);
    await gpu.setMigMode(0, true);
    await gpu.resetGpu(0);
    const four = await gpu.createGpuInstance(0, '4g.20gb', 0);
    await gpu.createComputeInstance(0, four.id, '4g.20gb');
    await gpu.createGpuInstance(0, '3g.20gb', 4); // ... and the service was killed here
    const dir = mkdtempSync(join(tmpdir(), 'migpool-half-made-'));
    dirs.push(dir);
    const store = await openSqliteStore(join(dir, 'migpool.db'));
    await store.init();
    const lines: string[] = [];
    const service = new PoolServiceImpl({ store, executor: createLocalExecutor({ pollMs: 50, graceSeconds: 1 }), gpu, policy: parsePolicy('migpool'), dataDir: dir, tickMs: 100, log: (l) => lines.push(l) });
    services.push({ service, store });
    await service.start();
    // The 4g.20gb slice is taken for longer than the test: the 3g.20gb job can only use the half-made slice.
    const big = await service.submit({ name: 'four', command: ['sleep', '60'], resources: { profile: '4g.20gb' }, estimatedSeconds: 60 });
    const small = await service.submit({ name: 'three', command: ['sleep', '0.2'], resources: { profile: '3g.20gb' }, estimatedSeconds: 1 });
    await until('the 3g.20gb job ends', async () => ((await service.getJob(small.id))?.state === 'succeeded' ? true : null)).catch(() => null);
    expect(await service.getJob(small.id)).toMatchObject({ state: 'succeeded', placement: { kind: 'instance', gpu: 0, start: 4, profile: '3g.20gb' } });
    expect(await service.getJob(big.id)).toMatchObject({ state: 'running', placement: { start: 0 } });
    // The layout is the one that was there, now whole: the 4g.20gb instance untouched, the 3g.20gb one with its compute instance.
    const gis = await gpu.listGpuInstances(0);
    expect(gis.map((g) => `${g.profile}@${g.start}`).sort()).toEqual(['3g.20gb@4', '4g.20gb@0']);
    expect(gis.find((g) => g.start === 0)?.id).toBe(four.id);
    expect((await gpu.listComputeInstances(0)).map((c) => c.gpuInstanceId).sort()).toEqual(gis.map((g) => g.id).sort());
    expect(lines.filter((l) => l.includes('has no instance at'))).toEqual([]);
  });

  it("after a compute instance create that failed, is completed once the GPU's back-off ends, and its job runs there", { timeout: 30_000 }, async () => {
    const machine = SimulatedMachine.create(parseSimulateSpec('1xA100-SXM4-40GB'), 1, '1xA100-SXM4-40GB');
    const gpu = new SimulatedGpuPort(machine);
    // The policy's first cut of the GPU creates the first GPU instance, then its compute instance fails.
    machine.injectFault({ operation: 'createComputeInstance', gpu: 0, kind: 'unknown', message: 'Unknown Error' });
    const dir = mkdtempSync(join(tmpdir(), 'migpool-half-made-'));
    dirs.push(dir);
    const store = await openSqliteStore(join(dir, 'migpool.db'));
    await store.init();
    const lines: string[] = [];
    const service = new PoolServiceImpl({ store, executor: createLocalExecutor({ pollMs: 50, graceSeconds: 1 }), gpu, policy: parsePolicy('migpool'), dataDir: dir, tickMs: 100, log: (l) => lines.push(l) });
    services.push({ service, store });
    await service.start();
    const job = await service.submit({ name: 'three', command: ['sleep', '0.2'], resources: { profile: '3g.20gb' }, estimatedSeconds: 1 });
    await until('the 3g.20gb job ends', async () => ((await service.getJob(job.id))?.state === 'succeeded' ? true : null), 20_000).catch(() => null);
    expect(await service.getJob(job.id)).toMatchObject({ state: 'succeeded', placement: { kind: 'instance', gpu: 0, profile: '3g.20gb' } });
    expect((await service.events(0)).map((e) => e.type)).toContain('gpu-reconfigure-failed');
    const gis = await gpu.listGpuInstances(0);
    expect((await gpu.listComputeInstances(0)).map((c) => c.gpuInstanceId).sort()).toEqual(gis.map((g) => g.id).sort());
    expect(lines.filter((l) => l.includes('has no instance at'))).toEqual([]);
    // Said once per try, not at every pass of the back-off.
    expect(lines.filter((l) => l.includes('without a compute instance')).length).toBeLessThanOrEqual(2);
  });
});
