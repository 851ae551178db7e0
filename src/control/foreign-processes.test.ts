import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createLocalExecutor } from '../exec/local-executor.js';
import { SimulatedGpuPort } from '../gpu/simulated/driver.js';
import { SimulatedMachine } from '../gpu/simulated/machine.js';
import { parseSimulateSpec } from '../gpu/simulated/spec.js';
import { parsePolicy } from '../sched/registry.js';
import type { JobRecord } from '../store/types.js';
import { openSqliteStore } from '../store/sqlite.js';
import { PoolServiceImpl } from './service.js';

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0)) await c();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(what: string, get: () => Promise<T | null>, ms = 10_000): Promise<T> {
  const t0 = Date.now();
  for (;;) {
    const v = await get();
    if (v !== null) return v;
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

describe('a GPU running processes migpool did not start', () => {
  it.each(['exclusive', 'migpool'])('gets no whole-GPU job until they end, and waiting jobs say which GPU and processes (policy %s)', async (policyName) => {
    const dir = mkdtempSync(join(tmpdir(), 'migpool-foreign-'));
    const machine = SimulatedMachine.create(parseSimulateSpec('2xA100-SXM4-40GB'), 1, '2xA100-SXM4-40GB');
    const pid = machine.attachProcess(1, { name: 'someone-elses.py' });
    const store = await openSqliteStore(join(dir, 'migpool.db'));
    await store.init();
    const logs: string[] = [];
    const service = new PoolServiceImpl({
      store,
      executor: createLocalExecutor({ pollMs: 50, graceSeconds: 1 }),
      gpu: new SimulatedGpuPort(machine),
      policy: parsePolicy(policyName),
      dataDir: dir,
      tickMs: 50,
      log: (l) => logs.push(l),
    });
    cleanup.push(async () => {
      for (const j of await service.listJobs()) await service.cancel(j.id);
      await service.stop();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    });
    await service.start();
    const jobs: JobRecord[] = [];
    for (let i = 0; i < 3; i++) jobs.push(await service.submit({ name: `whole-${i}`, command: ['sleep', '30'], resources: { gpus: 1 } }));
    await until('the first job running', async () => ((await service.getJob(jobs[0]!.id))?.state === 'running' ? true : null));
    // Several passes later, GPU 1 still runs no job and the next in line says why.
    await sleep(500);
    const placed = (await service.listJobs()).filter((j) => j.placement !== null && j.state !== 'queued');
    expect(placed.map((j) => j.placement)).toEqual([expect.objectContaining({ kind: 'gpus', gpus: [0] })]);
    const waiting = await until('a pending reason naming GPU 1', async () => {
      const p = (await service.getJob(jobs[1]!.id))?.pending ?? '';
      return p.includes('GPU 1') ? p : null;
    });
    expect(waiting).toContain(`GPU 1 runs process ${pid} that migpool did not start: it starts no job there until it ends`);
    expect(logs.join('\n')).toContain(`GPU 1: process ${pid} that migpool did not start runs on it`);
    // The process ends: the next job starts on GPU 1.
    machine.detachProcess(pid);
    const second = await until('a job on GPU 1', async () => {
      const r = (await service.listJobs()).find((j) => j.state === 'running' && j.placement?.kind === 'gpus' && j.placement.gpus.includes(1));
      return r ?? null;
    });
    expect(second.id).toBe(jobs[1]!.id);
    // Its reason no longer names the process (reasons are refreshed about once a second).
    await until('a pending reason without the process', async () => {
      const p = (await service.getJob(jobs[2]!.id))?.pending ?? 'did not start';
      return p.includes('did not start') ? null : p;
    });
  });

  it('gives a MIG slice running a process migpool did not start to no job until it ends', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'migpool-foreign-'));
    const machine = SimulatedMachine.create(parseSimulateSpec('1xA100-SXM4-40GB'), 1, '1xA100-SXM4-40GB');
    const store = await openSqliteStore(join(dir, 'migpool.db'));
    await store.init();
    const logs: string[] = [];
    const service = new PoolServiceImpl({
      store,
      executor: createLocalExecutor({ pollMs: 50, graceSeconds: 1 }),
      gpu: new SimulatedGpuPort(machine),
      policy: parsePolicy('static:7x1g.5gb'),
      dataDir: dir,
      tickMs: 50,
      log: (l) => logs.push(l),
    });
    cleanup.push(async () => {
      for (const j of await service.listJobs()) await service.cancel(j.id);
      await service.stop();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    });
    await service.start();
    await until('seven 1g.5gb slices', async () => (machine.listComputeInstances(0).length === 7 ? true : null));
    const gi = machine.listGpuInstances(0).find((g) => g.start === 0)!;
    const ci = machine.listComputeInstances(0).find((c) => c.gpuInstanceId === gi.id)!;
    const pid = machine.attachProcess(0, { gpuInstanceId: gi.id, computeInstanceId: ci.id, name: 'someone-elses.py' });
    await until('the process seen', async () => (logs.some((l) => l.includes(`GPU 0 instance at 0: process ${pid} that migpool did not start runs on it`)) ? true : null));
    const jobs: JobRecord[] = [];
    for (let i = 0; i < 7; i++) jobs.push(await service.submit({ name: `slice-${i}`, command: ['sleep', '30'], resources: { profile: '1g.5gb' } }));
    await until('six jobs running', async () => ((await service.listJobs({ states: ['running'] })).length === 6 ? true : null));
    await sleep(300);
    const running = await service.listJobs({ states: ['running'] });
    expect(running).toHaveLength(6);
    expect(running.map((j) => (j.placement?.kind === 'instance' ? j.placement.start : -1)).sort()).toEqual([1, 2, 3, 4, 5, 6]);
    const last = jobs[6]!.id;
    const waiting = await until('a pending reason naming the slice', async () => {
      const p = (await service.getJob(last))?.pending ?? '';
      return p.includes(String(pid)) ? p : null;
    });
    expect(waiting).toContain(`GPU 0's 1g.5gb at 0 runs process ${pid} that migpool did not start: it starts no job there until it ends`);
    machine.detachProcess(pid);
    const started = await until('the last job running', async () => {
      const r = await service.getJob(last);
      return r?.state === 'running' ? r : null;
    });
    expect(started.placement).toMatchObject({ kind: 'instance', start: 0 });
  });

  it("says once, not at every tick, that the GPUs' processes cannot be read, and once when they can again", async () => {
    // Found on the live service: with its simulator file unreadable, the same line every 2 s.
    const dir = mkdtempSync(join(tmpdir(), 'migpool-foreign-'));
    const machine = SimulatedMachine.create(parseSimulateSpec('1xA100-SXM4-40GB'), 1, '1xA100-SXM4-40GB');
    const port = new SimulatedGpuPort(machine);
    let broken = false;
    const gpu = Object.assign(Object.create(Object.getPrototypeOf(port) as object) as SimulatedGpuPort, port, {
      listProcesses: () => (broken ? Promise.reject(new Error('nvidia-smi: Unable to determine the device handle')) : port.listProcesses()),
    });
    const store = await openSqliteStore(join(dir, 'migpool.db'));
    await store.init();
    const logs: string[] = [];
    const service = new PoolServiceImpl({ store, executor: createLocalExecutor({ pollMs: 50, graceSeconds: 1 }), gpu, policy: parsePolicy('exclusive'), dataDir: dir, tickMs: 20, log: (l) => logs.push(l) });
    cleanup.push(async () => {
      await service.stop();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    });
    await service.start();
    broken = true;
    const said = () => logs.filter((l) => l.startsWith("reading the GPUs' processes"));
    await sleep(400);
    expect(said()).toEqual(["reading the GPUs' processes failed (nvidia-smi: Unable to determine the device handle); keeping the last answer, and trying again at every tick"]);
    broken = false;
    await until('the read working again', async () => (said().length === 2 ? true : null));
    await sleep(200);
    expect(said()[1]).toBe("reading the GPUs' processes works again");
    expect(said()).toHaveLength(2);
  });
});
