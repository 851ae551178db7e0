import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { attemptFiles, createLocalExecutor, readProcessRef } from '../exec/local-executor.js';
import { isSameLiveProcess } from '../exec/proc.js';
import { SimulatedGpuPort } from '../gpu/simulated/driver.js';
import { SimulatedMachine } from '../gpu/simulated/machine.js';
import { parseSimulateSpec } from '../gpu/simulated/spec.js';
import { parsePolicy } from '../sched/registry.js';
import { openSqliteStore } from '../store/sqlite.js';
import type { Store } from '../store/types.js';
import { PoolServiceImpl } from './service.js';
import { closeService, until } from '../../test/service-kit.js';

// A service that died after starting a job's runner but before the runner wrote runner.json: the
// next service finds the job `starting` and no runner.json. It must adopt the runner, found alive
// by its command line, not start the attempt a second time.

const node = process.execPath;
const dirs: string[] = [];
const services: { service: PoolServiceImpl; store: Store }[] = [];
/** Runners a test saw: killed with their job should the test fail before the job ended. */
const runners: { pid: number; startTicks: string }[] = [];

afterEach(async () => {
  for (const { service, store } of services.splice(0)) await closeService(service, store);
  for (const r of runners.splice(0)) if (isSameLiveProcess(r.pid, r.startTicks)) process.kill(-r.pid, 'SIGTERM');
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function open(dataDir: string, machine: SimulatedMachine): Promise<{ service: PoolServiceImpl; store: Store }> {
  const store = await openSqliteStore(join(dataDir, 'migpool.db'));
  await store.init();
  const service = new PoolServiceImpl({
    store,
    executor: createLocalExecutor({ pollMs: 50, graceSeconds: 1 }),
    gpu: new SimulatedGpuPort(machine),
    policy: parsePolicy('exclusive'),
    dataDir,
    tickMs: 100,
  });
  await service.start();
  const opened = { service, store };
  services.push(opened);
  return opened;
}

describe('a restart that finds a job starting whose runner has not recorded itself', () => {
  it('adopts the live runner, found by its command line: the job runs once and its end is recorded', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'migpool-unrecorded-'));
    dirs.push(dir);
    const machine = SimulatedMachine.create(parseSimulateSpec('1xA100-SXM4-40GB'), 1, '1xA100-SXM4-40GB');
    const starts = join(dir, 'starts');
    const go = join(dir, 'go');
    const script = `const fs = require('node:fs'); fs.appendFileSync(${JSON.stringify(starts)}, 'start\\n'); setInterval(() => fs.existsSync(${JSON.stringify(go)}) && process.exit(0), 20)`;
    const first = await open(dir, machine);
    const job = await first.service.submit({ name: 'once', command: [node, '-e', script] });
    const running = await until('the job runs', async () => {
      const j = await first.service.getJob(job.id);
      return j?.state === 'running' && existsSync(starts) ? j : null;
    });
    const ref = running.process!;
    runners.push(ref);
    // The service goes away (its watchers stop, the runner runs on), and the store and the folder
    // are put back as they were before the runner recorded itself: `starting`, no process, no runner.json.
    services.splice(0, 1);
    await first.service.stop();
    expect(await first.store.updateJob(job.id, running.version, { state: 'starting', process: null })).toMatchObject({ state: 'starting', process: null });
    await first.store.close();
    rmSync(attemptFiles(ref.dir).runner);
    expect(readProcessRef(ref.dir)).toBeNull();

    const second = await open(dir, machine);
    const adopted = await second.service.getJob(job.id);
    expect(adopted).toMatchObject({ state: 'running', attempt: 1, process: { pid: ref.pid, startTicks: ref.startTicks, dir: ref.dir } });
    writeFileSync(go, '');
    const done = await until('the job ends', async () => {
      const j = await second.service.getJob(job.id);
      return j && j.state !== 'running' && j.state !== 'starting' && j.state !== 'queued' ? j : null;
    });
    expect(done).toMatchObject({ state: 'succeeded', attempt: 1, exitCode: 0 });
    expect(readFileSync(starts, 'utf8')).toBe('start\n');
  });
});
