import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createLocalExecutor } from '../exec/local-executor.js';
import type { Executor } from '../exec/executor.js';
import { SimulatedGpuPort } from '../gpu/simulated/driver.js';
import { SimulatedMachine } from '../gpu/simulated/machine.js';
import { parseSimulateSpec } from '../gpu/simulated/spec.js';
import { parsePolicy } from '../sched/registry.js';
import { openSqliteStore } from '../store/sqlite.js';
import type { ProcessRef } from '../store/types.js';
import { closeService, until } from '../../test/service-kit.js';
import { PoolServiceImpl } from './service.js';

/** What a long-running service keeps of its jobs once they have ended: nothing (see PoolServiceImpl.retained). */

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function serviceWith(executor: (local: Executor) => Executor = (e) => e): Promise<{ service: PoolServiceImpl; dir: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'migpool-retained-'));
  const store = openSqliteStore(join(dir, 'migpool.db'));
  await store.init();
  const machine = SimulatedMachine.create(parseSimulateSpec('1xA100-SXM4-40GB'), 1, '1xA100-SXM4-40GB');
  const service = new PoolServiceImpl({
    store,
    executor: executor(createLocalExecutor({ pollMs: 50, graceSeconds: 1 })),
    gpu: new SimulatedGpuPort(machine),
    policy: parsePolicy('static:7x1g.5gb'),
    dataDir: dir,
    tickMs: 100,
    minRunBeforePreemptSeconds: 0,
  });
  await service.start();
  cleanups.push(() => closeService(service, store, { queuedToo: true, dir }));
  return { service, dir };
}

describe('what the service keeps of ended jobs', () => {
  it('nothing, once they have ended: done, failed after a retry, cancelled queued or running, preempted then cancelled', async () => {
    const { service, dir } = await serviceWith();
    const slice = { workdir: dir, resources: { profile: '1g.5gb' } };
    const done = await service.submitMany(Array.from({ length: 12 }, (_, i) => ({ ...slice, name: `ok-${i}`, command: ['true'] })));
    const failing = await service.submit({ ...slice, name: 'fails', command: ['false'], retries: 1 });
    const long = await service.submitMany(Array.from({ length: 9 }, (_, i) => ({ ...slice, name: `long-${i}`, command: ['sleep', '30'], preemptible: true })));
    // Seven slices: some of the long ones wait in the queue.
    const running = await until('a long job running', async () => (await service.listJobs({ states: ['running'] })).find((j) => j.spec.name.startsWith('long-')) ?? null);
    await service.preempt(running.id);
    for (const j of long) if (j.id !== running.id) await service.cancel(j.id);
    await until('the preempted job running again', async () => {
      const j = await service.getJob(running.id);
      return j?.state === 'running' && j.attempt === 2 ? true : null;
    });
    await service.cancel(running.id);
    await until('every job ended', async () => ((await service.listJobs({ states: ['queued', 'starting', 'running'] })).length === 0 ? true : null));
    // Its runners' ends are reported a moment after the store says so.
    await until('the executor holds no attempt', async () => (service.retained().executor === 0 ? true : null));
    expect((await service.getJob(done[11]!.id))?.state).toBe('succeeded');
    expect(await service.getJob(failing.id)).toMatchObject({ state: 'failed', attempt: 2 });
    expect(await service.getJob(running.id)).toMatchObject({ state: 'cancelled', attempt: 2, preemptions: 1 });
    const held = service.retained();
    expect(Object.entries(held).filter(([, n]) => n !== 0)).toEqual([]);
  });

  it('a job that ends while the progress of the jobs before it is read is not tracked again', async () => {
    // The progress of running jobs is read one job after the other; job B ends while job A's log
    // is read (a FIFO holds that read until B has ended), then B's turn comes with its stale record.
    let fifo: string | null = null;
    let aRead: () => void = () => undefined;
    const aBeingRead = new Promise<void>((resolve) => (aRead = resolve));
    let aId = '';
    let aReadsAfter = 0;
    const { service, dir } = await serviceWith((local) => ({
      ...local,
      logPaths(ref: ProcessRef) {
        const paths = local.logPaths(ref);
        if (fifo === null && aId !== '' && ref.dir.includes(`/jobs/${aId}/`)) aReadsAfter++;
        if (fifo !== null && ref.dir.includes(`/jobs/${aId}/`)) {
          aRead();
          return { ...paths, stdout: fifo };
        }
        return paths;
      },
    }));
    const progress = `echo '{"migpool_samples": 1, "migpool_total": 10}'`;
    const a = await service.submit({ name: 'a', command: ['/bin/sh', '-c', `${progress}; exec sleep 60`], workdir: dir, resources: { profile: '1g.5gb' } });
    aId = a.id;
    const b = await service.submit({ name: 'b', command: ['/bin/sh', '-c', `${progress}; while [ ! -e go ]; do sleep 0.05; done`], workdir: dir, resources: { profile: '1g.5gb' } });
    await until('both running and their progress read', async () => {
      const [ja, jb] = [await service.getJob(a.id), await service.getJob(b.id)];
      return ja?.progress && jb?.progress ? true : null;
    });
    fifo = join(dir, 'a-stdout.fifo');
    execFileSync('mkfifo', [fifo]);
    await aBeingRead;
    writeFileSync(join(dir, 'go'), '');
    await until('b ended', async () => ((await service.getJob(b.id))?.state === 'succeeded' && service.retained().specs === 1 ? true : null));
    // Let A's read go on (a writer opens the FIFO and closes it: the read sees its end), then B's turn.
    const path = fifo;
    aReadsAfter = 0;
    fifo = null;
    closeSync(openSync(path, 'w'));
    // One read at a time: once A's log is read again, the read that held it (and B's turn) is over.
    await until('a later read of the progress', async () => (aReadsAfter > 0 ? true : null));
    expect(service.retained()).toMatchObject({ open: 1, progress: 1 });
    rmSync(path, { force: true });
  });
});
