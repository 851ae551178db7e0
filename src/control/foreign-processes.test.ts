import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLocalExecutor } from '../exec/local-executor.js';
import type { GpuProcess } from '../gpu/port.js';
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
  vi.useRealTimers();
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

/**
 * The simulated GPU port, counting its reads of the processes; `beforeNextList`, when set, runs
 * once just before the next read (e.g. attaches a process: one that appears just before that
 * read); `extra` processes are listed besides the machine's (e.g. a job's real process).
 */
class WatchedGpuPort extends SimulatedGpuPort {
  lists = 0;
  beforeNextList: (() => void) | null = null;
  extra: GpuProcess[] = [];

  override async listProcesses(): Promise<GpuProcess[]> {
    this.lists++;
    const hook = this.beforeNextList;
    this.beforeNextList = null;
    hook?.();
    return [...(await super.listProcesses()), ...this.extra];
  }
}

/**
 * A service on simulated GPUs (`spec`) with `policyName`, its store and data dir in a temporary
 * directory removed after the test (its jobs cancelled first), started after `before` has set
 * the machine up (e.g. attached a foreign process), on the clock `now` [Date.now]. Its log lines
 * are kept in `logs`; `gpu` counts its reads of the GPUs' processes.
 */
async function startService(spec: string, policyName: string, before?: (machine: SimulatedMachine) => void, now?: () => number): Promise<{ machine: SimulatedMachine; service: PoolServiceImpl; logs: string[]; gpu: WatchedGpuPort }> {
  const dir = mkdtempSync(join(tmpdir(), 'migpool-foreign-'));
  const machine = SimulatedMachine.create(parseSimulateSpec(spec), 1, spec);
  before?.(machine);
  const gpu = new WatchedGpuPort(machine);
  const store = await openSqliteStore(join(dir, 'migpool.db'));
  await store.init();
  const logs: string[] = [];
  const service = new PoolServiceImpl({
    store,
    executor: createLocalExecutor({ pollMs: 50, graceSeconds: 1 }),
    gpu,
    policy: parsePolicy(policyName),
    dataDir: dir,
    tickMs: 50,
    ...(now ? { now } : {}),
    log: (l) => logs.push(l),
  });
  cleanup.push(async () => {
    for (const j of await service.listJobs()) await service.cancel(j.id);
    // Their runners write exit.json and close the logs as they end: wait for that before removing the directory.
    await until('the cancelled jobs ended', async () => ((await service.listJobs({ states: ['running', 'starting'] })).length === 0 ? true : null));
    await service.stop();
    await store.close();
    // Jobs cancelled just now may still be closing their logs: retry a directory not yet empty.
    rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
  });
  await service.start();
  return { machine, service, logs, gpu };
}

/** Waits for job `id` to run on a MIG slice of GPU 0; returns its record, the slice's start and its GPU and compute instances. */
async function runningOnSlice(service: PoolServiceImpl, machine: SimulatedMachine, id: string) {
  const running = await until('the job running', async () => {
    const r = await service.getJob(id);
    return r?.state === 'running' ? r : null;
  });
  const start = running.placement?.kind === 'instance' ? running.placement.start : -1;
  const gi = machine.listGpuInstances(0).find((g) => g.start === start)!;
  const ci = machine.listComputeInstances(0).find((c) => c.gpuInstanceId === gi.id)!;
  return { running, start, gi, ci };
}

describe('a GPU running processes migpool did not start', () => {
  it.each(['exclusive', 'migpool'])('gets no whole-GPU job until they end, and waiting jobs say which GPU and processes (policy %s)', async (policyName) => {
    const { machine, service, logs } = await startService('2xA100-SXM4-40GB', policyName, (m) => m.attachProcess(1, { name: 'someone-elses.py' }));
    const pid = machine.listProcesses()[0]!.pid;
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
    // GET /v1/gpus (and the dashboard) list it on its GPU.
    expect((await service.gpus()).map((g) => g.foreignPids)).toEqual([[], [pid]]);
    // The process ends: the next job starts on GPU 1.
    machine.detachProcess(pid);
    const second = await until('a job on GPU 1', async () => {
      const r = (await service.listJobs()).find((j) => j.state === 'running' && j.placement?.kind === 'gpus' && j.placement.gpus.includes(1));
      return r ?? null;
    });
    expect(second.id).toBe(jobs[1]!.id);
    expect((await service.gpus()).map((g) => g.foreignPids)).toEqual([[], []]);
    // Its reason no longer names the process (reasons are refreshed about once a second).
    await until('a pending reason without the process', async () => {
      const p = (await service.getJob(jobs[2]!.id))?.pending ?? 'did not start';
      return p.includes('did not start') ? null : p;
    });
  });

  it('gives a MIG slice running a process migpool did not start to no job until it ends', async () => {
    const { machine, service, logs } = await startService('1xA100-SXM4-40GB', 'static:7x1g.5gb');
    await until('seven 1g.5gb slices', async () => (machine.listComputeInstances(0).length === 7 ? true : null));
    const gi = machine.listGpuInstances(0).find((g) => g.start === 0)!;
    const ci = machine.listComputeInstances(0).find((c) => c.gpuInstanceId === gi.id)!;
    const pid = machine.attachProcess(0, { gpuInstanceId: gi.id, computeInstanceId: ci.id, name: 'someone-elses.py' });
    await until('the process seen', async () => (logs.some((l) => l.includes(`GPU 0 instance at 0: process ${pid} that migpool did not start runs on it`)) ? true : null));
    const [gpu] = await service.gpus();
    expect(gpu!.instances.map((i) => [i.start, i.foreignPids])).toEqual([[0, [pid]], ...[1, 2, 3, 4, 5, 6].map((start) => [start, []])]);
    expect(gpu!.foreignPids).toEqual([]);
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

  describe('appearing after the last read, just before a pass starts a job', () => {
    /** The service's ticks (a read of the processes and a pass every tickMs) run only when the test advances them. */
    const manualTicks = () => vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    /** One tick: its read of the processes, and the passes it and what the read found ask for. */
    const tick = async (service: PoolServiceImpl) => {
      vi.advanceTimersByTime(50);
      await sleep(20);
      await service.idle();
    };

    it('keeps the job off the GPU and queued, and starts it there once the process ends; one read per pass that starts something', async () => {
      manualTicks();
      const { machine, service, logs, gpu } = await startService('1xA100-SXM4-40GB', 'exclusive');
      await service.idle();
      // A pass with nothing to start reads no processes.
      const atStart = gpu.lists;
      service.schedule();
      await service.idle();
      expect(gpu.lists).toBe(atStart);
      // Someone starts a process on GPU 0 after the last read; the pass the submission asks for reads once, before its start.
      let pid = 0;
      gpu.beforeNextList = () => (pid = machine.attachProcess(0, { name: 'someone-elses.py' }));
      const job = await service.submit({ name: 'whole', command: ['sleep', '30'], resources: { gpus: 1 } });
      await service.idle();
      const held = await service.getJob(job.id);
      expect(held).toMatchObject({ state: 'queued', attempt: 0, placement: null });
      expect(pid).toBeGreaterThan(0);
      expect(gpu.lists).toBe(atStart + 1);
      expect(logs.filter((l) => l.includes(`process ${pid}`))).toEqual([`GPU 0: process ${pid} that migpool did not start runs on it; no job starts there until it ends (seen as job ${job.id} was about to start there: it stays queued)`]);
      expect(logs.join('\n')).not.toContain('skipped an invalid decision');
      expect(held!.pending).toContain(`GPU 0 runs process ${pid} that migpool did not start`);
      expect((await service.gpus()).map((g) => g.foreignPids)).toEqual([[pid]]);
      // Later passes (a tick's) leave it queued, and read the processes only in the tick.
      const before = gpu.lists;
      await tick(service);
      expect(gpu.lists).toBe(before + 1);
      expect((await service.getJob(job.id))?.state).toBe('queued');
      // The process ends: the next tick's read frees the GPU, and its pass starts the job there after one more read.
      machine.detachProcess(pid);
      const detached = gpu.lists;
      await tick(service);
      const started = await until('the job running', async () => {
        const r = await service.getJob(job.id);
        return r?.state === 'running' ? r : null;
      });
      expect(started).toMatchObject({ attempt: 1, placement: expect.objectContaining({ kind: 'gpus', gpus: [0] }) });
      expect(gpu.lists).toBe(detached + 2);
      expect(logs).toContain('GPU 0: the processes migpool did not start have ended; it takes jobs again');
    });

    it('leaves a GPU as it is when a process appears on it just before its re-partition', async () => {
      manualTicks();
      const { machine, service, logs, gpu } = await startService('1xA100-SXM4-40GB', 'static:7x1g.5gb', (m) => {
        m.attachProcess(0, { name: 'first.py' });
      });
      await service.idle();
      // The process at start keeps the GPU as it is; it ends, and a second one appears before the re-partition's read.
      const first = machine.listProcesses()[0]!.pid;
      expect(machine.listGpus()[0]!.migMode?.current).toBe('disabled');
      machine.detachProcess(first);
      let second = 0;
      let reads = 0;
      // The tick's read sees the GPU free; the pass it asks for reads again before re-partitioning.
      gpu.beforeNextList = () => {
        reads++;
        gpu.beforeNextList = () => {
          reads++;
          second = machine.attachProcess(0, { name: 'second.py' });
        };
      };
      await tick(service);
      await until('the second process seen', async () => (second > 0 && logs.some((l) => l.includes(`process ${second}`)) ? true : null));
      await service.idle();
      expect(reads).toBe(2);
      expect(logs.filter((l) => l.includes(`process ${second}`))).toEqual([
        `GPU 0: process ${second} that migpool did not start runs on it; no job starts there until it ends (seen as GPU 0 was about to be re-partitioned: it keeps its layout for now)`,
      ]);
      expect(machine.listGpus()[0]!.migMode?.current).toBe('disabled');
      expect((await service.stats()).reconfigurations).toBe(0);
      // It ends: the GPU is cut into its seven slices.
      machine.detachProcess(second);
      await tick(service);
      await until('seven 1g.5gb slices', async () => (machine.listComputeInstances(0).length === 7 ? true : null));
    });

    it("does not take a job's own process, still listed just after the job ended, for someone else's; one still there a tick later is", async () => {
      manualTicks();
      // The service's clock stands still unless the test moves it.
      let clock = Date.now();
      const { machine, service, logs, gpu } = await startService('1xA100-SXM4-40GB', 'static:7x1g.5gb', undefined, () => clock);
      await until('seven 1g.5gb slices', async () => (machine.listComputeInstances(0).length === 7 ? true : null));
      const job = await service.submit({ name: 'slice', command: ['sleep', '30'], resources: { profile: '1g.5gb' } });
      const { running, start, gi, ci } = await runningOnSlice(service, machine, job.id);
      // nvidia-smi lists the job's process (the real `sleep`, in the job's session) on its slice,
      // and one someone else started there while the job ran; a tick's read sees both.
      const jobPid = await until('the runner recording the job', async () => {
        try {
          return (JSON.parse(readFileSync(join(running.process!.dir, 'runner.json'), 'utf8')) as { jobPid?: number }).jobPid ?? null;
        } catch {
          return null; // not written yet
        }
      });
      gpu.extra = [{ pid: jobPid, name: 'sleep', gpu: 0, gpuInstanceId: gi.id, computeInstanceId: ci.id, usedMemoryMiB: 500 }];
      const other = machine.attachProcess(0, { gpuInstanceId: gi.id, computeInstanceId: ci.id, name: 'someone-elses.py' });
      await tick(service);
      expect(logs.filter((l) => l.includes('did not start'))).toEqual([]);
      // The job ends; the reads after its end still list its process: only the other one is someone else's.
      await service.cancel(job.id);
      await until('the job cancelled', async () => ((await service.getJob(job.id))?.state === 'cancelled' ? true : null));
      await service.idle();
      await tick(service);
      const slice = async () => (await service.gpus())[0]!.instances.find((i) => i.start === start)?.foreignPids;
      expect(logs.filter((l) => l.includes('did not start'))).toEqual([`GPU 0 instance at ${start}: process ${other} that migpool did not start runs on it; no job starts there until it ends`]);
      expect(await slice()).toEqual([other]);
      // A tick later the job's process is still listed: no longer its job ending, it keeps jobs off the slice too.
      clock += 50;
      await tick(service);
      expect(logs.filter((l) => l.includes(`process ${jobPid}`) || l.includes(`, ${jobPid}`))).toEqual([`GPU 0 instance at ${start}: processes ${other}, ${jobPid} that migpool did not start run on it; no job starts there until they end`]);
      expect(await slice()).toEqual([other, jobPid]);
    });

    it("does not take a process the job started in a session of its own (setsid), still listed just after the job ended, for someone else's", async () => {
      manualTicks();
      let clock = Date.now();
      const { machine, service, logs, gpu } = await startService('1xA100-SXM4-40GB', 'static:7x1g.5gb', undefined, () => clock);
      await until('seven 1g.5gb slices', async () => (machine.listComputeInstances(0).length === 7 ? true : null));
      const pidFile = join(mkdtempSync(join(tmpdir(), 'migpool-setsid-')), 'pid');
      // The job starts a helper in a session of its own (as a daemonizing tool does) and waits.
      const job = await service.submit({ name: 'slice', command: ['sh', '-c', `setsid sleep 30 & echo $! > ${pidFile}; sleep 30`], resources: { profile: '1g.5gb' } });
      const { running, start, gi, ci } = await runningOnSlice(service, machine, job.id);
      const helper = await until('the helper started', async () => {
        try {
          const pid = Number(readFileSync(pidFile, 'utf8'));
          return pid > 0 ? pid : null;
        } catch {
          return null;
        }
      });
      const jobPid = await until('the runner recording the job', async () => {
        try {
          return (JSON.parse(readFileSync(join(running.process!.dir, 'runner.json'), 'utf8')) as { jobPid?: number }).jobPid ?? null;
        } catch {
          return null;
        }
      });
      const session = (pid: number) => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[3];
      expect(session(helper)).not.toBe(session(jobPid));
      // nvidia-smi lists the helper on the job's slice, beside a process someone else started there; a tick's read sees both.
      gpu.extra = [{ pid: helper, name: 'sleep', gpu: 0, gpuInstanceId: gi.id, computeInstanceId: ci.id, usedMemoryMiB: 500 }];
      const other = machine.attachProcess(0, { gpuInstanceId: gi.id, computeInstanceId: ci.id, name: 'someone-elses.py' });
      await tick(service);
      // The job ends; the reads just after its end still list the helper: only the other process is someone else's.
      await service.cancel(job.id);
      await until('the job cancelled', async () => ((await service.getJob(job.id))?.state === 'cancelled' ? true : null));
      await service.idle();
      await tick(service);
      expect(logs.filter((l) => l.includes('did not start'))).toEqual([`GPU 0 instance at ${start}: process ${other} that migpool did not start runs on it; no job starts there until it ends`]);
      // A tick later it is still listed: it keeps jobs off the slice too.
      clock += 50;
      await tick(service);
      expect((await service.gpus())[0]!.instances.find((i) => i.start === start)?.foreignPids).toEqual([other, helper]);
    });

    it('starts the job when that read fails, as the last read allowed, and says so once', async () => {
      manualTicks();
      const { service, logs, gpu } = await startService('1xA100-SXM4-40GB', 'exclusive');
      await service.idle();
      gpu.beforeNextList = () => {
        throw new Error('nvidia-smi timed out');
      };
      const job = await service.submit({ name: 'whole', command: ['sleep', '30'], resources: { gpus: 1 } });
      await service.idle();
      expect(await service.getJob(job.id)).toMatchObject({ state: 'running', placement: expect.objectContaining({ gpus: [0] }) });
      expect(logs.filter((l) => l.includes('failed'))).toEqual(["reading the GPUs' processes before starting jobs failed (nvidia-smi timed out); going on with the last answer until a read succeeds"]);
    });
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
