import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createLocalExecutor } from '../exec/local-executor.js';
import { GpuError, GpuLostError, type ComputeInstanceInfo, type GpuInfo, type GpuInstanceInfo, type GpuPort, type GpuProcess } from '../gpu/port.js';
import { SimulatedGpuPort } from '../gpu/simulated/driver.js';
import { SimulatedMachine } from '../gpu/simulated/machine.js';
import { parseSimulateSpec } from '../gpu/simulated/spec.js';
import { parsePolicy } from '../sched/registry.js';
import { openSqliteStore } from '../store/sqlite.js';
import type { JobPlacement, JobRecord } from '../store/types.js';
import { PoolServiceImpl } from './service.js';

/**
 * The real machine misbehaving under a running service: a GPU that stops answering nvidia-smi
 * (fallen off the bus) and comes back, nvidia-smi that hangs, and a MIG layout changed by hand.
 * The port wraps the simulated GPUs and does what the nvidia-smi adapter does in each case (see
 * test/nvidia-smi-adapter.test.ts for the adapter over real captured output).
 */
class TroubledPort implements GpuPort {
  /** GPUs that fell off the bus: listGpus names them as lost, the listings leave them out. */
  readonly lost = new Set<number>();
  /** While set, every read hangs until nvidia-smi's timeout, then fails as the adapter does. */
  hangMs: number | null = null;
  /** While set, listing the GPUs fails with this (nvidia-smi answers, with an error). */
  listFails: GpuError | null = null;
  reads = 0;

  constructor(readonly sim: SimulatedGpuPort) {}

  private async gate(operation: string): Promise<void> {
    this.reads++;
    if (this.hangMs === null) return;
    await new Promise((r) => setTimeout(r, this.hangMs ?? 0));
    throw new GpuError('timeout', operation, null, `nvidia-smi did not answer within ${this.hangMs} ms (stopped with SIGKILL)`);
  }

  async listGpus(): Promise<GpuInfo[]> {
    await this.gate('list GPUs');
    if (this.listFails) throw this.listFails;
    const all = await this.sim.listGpus();
    if (this.lost.size === 0) return all;
    const lost = all.filter((g) => this.lost.has(g.index)).map((g) => ({ index: g.index, busId: g.busId.replace(/^0000/, ''), reason: 'Unknown Error' }));
    throw new GpuLostError('list GPUs', `nvidia-smi cannot reach GPU ${lost.map((l) => l.index).join(', ')}`, all.filter((g) => !this.lost.has(g.index)), lost);
  }

  async listGpuInstances(gpu?: number): Promise<GpuInstanceInfo[]> {
    await this.gate('list GPU instances');
    return (await this.sim.listGpuInstances(gpu)).filter((g) => !this.lost.has(g.gpu));
  }

  async listComputeInstances(gpu?: number): Promise<ComputeInstanceInfo[]> {
    await this.gate('list compute instances');
    return (await this.sim.listComputeInstances(gpu)).filter((c) => !this.lost.has(c.gpu));
  }

  async listProcesses(): Promise<GpuProcess[]> {
    await this.gate('list processes');
    return (await this.sim.listProcesses()).filter((p) => !this.lost.has(p.gpu));
  }

  setMigMode(gpu: number, enabled: boolean) {
    return this.sim.setMigMode(gpu, enabled);
  }
  resetGpu(gpu: number) {
    return this.sim.resetGpu(gpu);
  }
  createGpuInstance(gpu: number, profile: string, start: number) {
    return this.sim.createGpuInstance(gpu, profile, start);
  }
  createComputeInstance(gpu: number, gi: number, profile: string) {
    return this.sim.createComputeInstance(gpu, gi, profile);
  }
  destroyComputeInstance(gpu: number, gi: number, ci: number) {
    return this.sim.destroyComputeInstance(gpu, gi, ci);
  }
  destroyGpuInstance(gpu: number, gi: number) {
    return this.sim.destroyGpuInstance(gpu, gi);
  }
}

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0)) await c();
});

async function until(what: string, test: () => boolean | Promise<boolean>, ms = 15_000): Promise<void> {
  const t0 = Date.now();
  while (!(await test())) {
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function serviceOn(spec: string, policy: string, options: { gpuCheckMs?: number; migOn?: boolean; lostAtStart?: number } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'migpool-gpu-trouble-'));
  const machine = SimulatedMachine.create(parseSimulateSpec(spec), 1, spec);
  if (options.migOn === true) {
    for (const g of machine.listGpus()) {
      machine.setMigMode(g.index, true);
      machine.resetGpu(g.index);
    }
  }
  const port = new TroubledPort(new SimulatedGpuPort(machine));
  if (options.lostAtStart !== undefined) port.lost.add(options.lostAtStart);
  const store = await openSqliteStore(join(dir, 'migpool.db'));
  await store.init();
  const lines: string[] = [];
  const service = new PoolServiceImpl({
    store,
    executor: createLocalExecutor({ pollMs: 50, graceSeconds: 1 }),
    gpu: port,
    policy: parsePolicy(policy),
    dataDir: dir,
    tickMs: 50,
    gpuCheckMs: options.gpuCheckMs ?? 100,
    log: (l) => lines.push(l),
  });
  cleanup.push(async () => {
    port.hangMs = null;
    await service.stop();
    for (const r of await store.listJobs({ states: ['running', 'starting'] })) await service.cancel(r.id);
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  await service.start();
  return { machine, port, service, lines };
}

const devicesOf = (p: JobPlacement | null): readonly string[] => (p ? p.devices : []);

describe('the service when the GPUs misbehave', () => {
  it('plans from a MIG layout changed by hand, and never gives a job a MIG device that is gone', { timeout: 30_000 }, async () => {
    const { machine, service, lines } = await serviceOn('1xA100-SXM4-40GB', 'static:7x1g.5gb', { migOn: true });
    await until('seven slices', async () => (await service.gpus())[0]?.instances.filter((i) => i.uuid !== null).length === 7);
    // Someone destroys the slice at 6 by hand (nvidia-smi mig -dci, then -dgi).
    const gi = machine.listGpuInstances(0).find((g) => g.start === 6)!;
    const gone = machine.listComputeInstances(0).find((c) => c.gpuInstanceId === gi.id)!;
    machine.destroyComputeInstance(0, gi.id, gone.id);
    machine.destroyGpuInstance(0, gi.id);
    // A few full reads later (gpuCheckMs is 100 ms here), seven jobs come.
    await new Promise((r) => setTimeout(r, 500));
    const jobs: JobRecord[] = [];
    for (let i = 0; i < 7; i++) jobs.push(await service.submit({ name: `j${i}`, command: ['sleep', '20'], resources: { profile: '1g.5gb' } }));
    await until('seven jobs running', async () => (await Promise.all(jobs.map((j) => service.getJob(j.id)))).every((r) => r?.state === 'running'));
    const listed = new Set(machine.listComputeInstances(0).map((c) => c.uuid));
    for (const j of jobs) {
      const rec = await service.getJob(j.id);
      expect(listed, `job ${j.id} runs on ${devicesOf(rec?.placement ?? null).join(',')}`).toContain(devicesOf(rec?.placement ?? null)[0]);
    }
    expect(listed).not.toContain(gone.uuid);
    expect(lines.some((l) => /GPU 0: its MIG layout changed outside migpool \(was 1g\.5gb@0\+.*1g\.5gb@6, now 1g\.5gb@0\+.*1g\.5gb@5; nvidia-smi mig or mig-parted run by hand\?\)/.test(l))).toBe(true);
  });

  it('starts nothing on a GPU that fell off the bus, says why in the queue, and uses it again once it answers', { timeout: 30_000 }, async () => {
    const { port, service, lines } = await serviceOn('2xA100-SXM4-40GB', 'exclusive');
    const first = await service.submit({ name: 'on-1', command: ['sleep', '20'], resources: { gpus: 1 } });
    const second = await service.submit({ name: 'on-2', command: ['sleep', '20'], resources: { gpus: 1 } });
    await until('both running', async () => (await service.getJob(first.id))?.state === 'running' && (await service.getJob(second.id))?.state === 'running');
    const placed = (await service.getJob(first.id))?.placement;
    const onGpu1 = placed?.kind === 'gpus' && placed.gpus[0] === 1 ? first : second;
    port.lost.add(1);
    await new Promise((r) => setTimeout(r, 500));
    // Its job ends (its CUDA calls fail); a queued job does not go to the lost GPU.
    await service.cancel(onGpu1.id);
    await until('the end', async () => (await service.getJob(onGpu1.id))?.state === 'cancelled');
    const waiting = await service.submit({ name: 'waits', command: ['sleep', '20'], resources: { gpus: 1 } });
    await new Promise((r) => setTimeout(r, 500));
    expect((await service.getJob(waiting.id))?.state).toBe('queued');
    expect(lines.some((l) => l.startsWith('GPU 1 (') && l.includes('does not answer nvidia-smi (Unknown Error)') && l.includes(`job ${onGpu1.id} ran there and is left to end`))).toBe(true);
    await until('the reason', async () => /does not answer nvidia-smi \(Unknown Error\).*no job starts there until it answers/.test((await service.getJob(waiting.id))?.pending ?? ''));
    // Not said to be "re-partitioning GPU 1" (the lost GPU is held in the view as one being re-partitioned).
    expect((await service.getJob(waiting.id))?.pending).not.toMatch(/re-partitioning/);
    // GET /v1/gpus (and the dashboard's card) say it too.
    expect((await service.gpus()).map((g) => g.unreachable)).toEqual([null, expect.stringMatching(/^GPU 1 \(.*\) does not answer nvidia-smi \(Unknown Error\)/)]);
    // It comes back (reset): the next read frees it and the job starts there.
    port.lost.delete(1);
    await until('the waiting job to start', async () => (await service.getJob(waiting.id))?.state === 'running');
    expect((await service.getJob(waiting.id))?.placement).toMatchObject({ kind: 'gpus', gpus: [1] });
    expect((await service.gpus()).map((g) => g.unreachable)).toEqual([null, null]);
    expect(lines.some((l) => /^GPU 1 \(GPU-[0-9a-f-]+\) answers nvidia-smi again: jobs may start there$/.test(l))).toBe(true);
  });

  it('starts with the GPUs that answer when one is lost at its start, and takes it once it answers', { timeout: 30_000 }, async () => {
    const { port, service, lines } = await serviceOn('2xA100-SXM4-40GB', 'exclusive', { lostAtStart: 0 });
    const bus = (await port.sim.listGpus())[0]!.busId.replace(/^0000/, '');
    expect(lines).toContain(`GPU 0 (${bus}) does not answer nvidia-smi (Unknown Error): the service starts without it (fallen off the bus? look for Xid 79 in dmesg; reset it with nvidia-smi -r -i ${bus} or reboot the node, and reseat it if it comes back lost)`);
    expect((await service.gpus()).map((g) => g.index)).toEqual([1]);
    port.lost.delete(0);
    await until('GPU 0 to be taken', async () => (await service.gpus()).length === 2);
    expect(lines.some((l) => /^GPU 0 \(NVIDIA A100-SXM4-40GB, GPU-[0-9a-f-]+\) is listed by nvidia-smi: the service uses it from now on$/.test(l))).toBe(true);
  });

  it('starts nothing while nvidia-smi lists no GPU at all ("No devices were found"), and recovers', { timeout: 30_000 }, async () => {
    const { port, service, lines } = await serviceOn('1xA100-SXM4-40GB', 'exclusive');
    // What the adapter throws for nvidia-smi's "No devices were found" (exit 6).
    port.listFails = new GpuError('not-found', 'list GPUs', null, 'No devices were found (nvidia-smi --query-gpu=index,uuid --format=csv,noheader,nounits)');
    await new Promise((r) => setTimeout(r, 500));
    const job = await service.submit({ name: 'waits', command: ['sleep', '20'], resources: { gpus: 1 } });
    await new Promise((r) => setTimeout(r, 500));
    expect((await service.getJob(job.id))?.state).toBe('queued');
    await until('the reason', async () => /GPU 0 \(GPU-[0-9a-f-]+\) is not listed: No devices were found .*: no job starts there until it answers/.test((await service.getJob(job.id))?.pending ?? ''));
    expect((await service.getJob(job.id))?.pending).toMatch(/^GPU 0 \(GPU-[0-9a-f-]+\) is not listed: No devices were found/);
    port.listFails = null;
    await until('the job to start', async () => (await service.getJob(job.id))?.state === 'running');
    expect(lines.filter((l) => l.includes('is not listed: No devices were found'))).toHaveLength(1);
  });

  it('restarted while a GPU is lost under a running job: keeps the job, schedules on the other GPU, and no policy trips on the missing GPU', { timeout: 30_000 }, async () => {
    for (const policy of ['exclusive', 'migpool']) {
      const dir = mkdtempSync(join(tmpdir(), 'migpool-gpu-trouble-restart-'));
      const machine = SimulatedMachine.create(parseSimulateSpec('2xA100-SXM4-40GB'), 1, '2xA100-SXM4-40GB');
      const port = new TroubledPort(new SimulatedGpuPort(machine));
      const store = await openSqliteStore(join(dir, 'migpool.db'));
      await store.init();
      const lines: string[] = [];
      const make = () =>
        new PoolServiceImpl({ store, executor: createLocalExecutor({ pollMs: 50, graceSeconds: 1 }), gpu: port, policy: parsePolicy(policy), dataDir: dir, tickMs: 50, gpuCheckMs: 100, log: (l) => lines.push(l) });
      const first = make();
      await first.start();
      const a = await first.submit({ name: 'a', command: ['sleep', '30'], resources: { gpus: 1 } });
      await until('a running', async () => (await first.getJob(a.id))?.state === 'running');
      const placed = (await first.getJob(a.id))?.placement;
      const gpu = placed?.kind === 'gpus' ? (placed.gpus[0] ?? 0) : 0;
      await first.stop();
      port.lost.add(gpu);
      const second = make();
      cleanup.push(async () => {
        for (const r of await store.listJobs({ states: ['running', 'starting', 'queued'] })) await second.cancel(r.id);
        await until('the jobs to end', async () => (await store.listJobs({ states: ['running', 'starting', 'queued'] })).length === 0);
        await second.stop();
        await store.close();
        rmSync(dir, { recursive: true, force: true });
      });
      await second.start();
      expect((await second.getJob(a.id))?.state).toBe('running');
      const b = await second.submit({ name: 'b', command: ['sleep', '30'], resources: { gpus: 1 } });
      await until(`b running (${policy})`, async () => (await second.getJob(b.id))?.state === 'running');
      expect((await second.getJob(b.id))?.placement).toMatchObject({ kind: 'gpus', gpus: [1 - gpu] });
      expect(lines.filter((l) => /policy .* failed|internal|invalid decision/.test(l))).toEqual([]);
    }
  });

  it('keeps serving while nvidia-smi hangs: ends are recorded, jobs start, cancels answer at once, the queue says why, and it recovers', { timeout: 30_000 }, async () => {
    const { port, service, lines } = await serviceOn('1xA100-SXM4-40GB', 'exclusive', { gpuCheckMs: 100 });
    const short = await service.submit({ name: 'short', command: ['sleep', '2'], resources: { gpus: 1 } });
    await until('running', async () => (await service.getJob(short.id))?.state === 'running');
    // Every read now takes 3 s and fails, as the adapter's timeout ends a hung nvidia-smi.
    port.hangMs = 3000;
    await until('the hang to be seen', () => lines.some((l) => l.startsWith("reading the GPUs' processes failed (") && l.includes('did not answer within 3000 ms')), 8000);
    const next = await service.submit({ name: 'next', command: ['sleep', '20'], resources: { gpus: 1 } });
    const waits = await service.submit({ name: 'waits', command: ['sleep', '20'], resources: { gpus: 1 } });
    // The running job's end is recorded and the next job starts without a pass waiting on nvidia-smi.
    await until('the end recorded', async () => (await service.getJob(short.id))?.state === 'succeeded', 8000);
    await until('the next job to start', async () => (await service.getJob(next.id))?.state === 'running', 2000);
    const t0 = Date.now();
    expect((await service.cancel(waits.id))?.state).toBe('cancelled');
    expect(Date.now() - t0).toBeLessThan(1000);
    const third = await service.submit({ name: 'third', command: ['sleep', '20'], resources: { gpus: 1 } });
    await until('the queue to say why', async () => /the GPUs cannot be read \(.*did not answer within 3000 ms.*\): jobs are placed on what was last read/.test((await service.getJob(third.id))?.pending ?? ''), 10_000);
    port.hangMs = null;
    await until('the recovery logged', () => lines.includes('reading the GPUs works again'), 10_000);
    await until('the reason to go', async () => !/cannot be read/.test((await service.getJob(third.id))?.pending ?? ''), 5000);
    expect(lines.filter((l) => l.startsWith('reading the GPUs failed'))).toHaveLength(1);
  });
});
