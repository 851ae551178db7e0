import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PoolServiceImpl } from '../src/control/service.js';
import { SimulatedGpuPort } from '../src/gpu/simulated/driver.js';
import { SimulatedMachine } from '../src/gpu/simulated/machine.js';
import { parseSimulateSpec } from '../src/gpu/simulated/spec.js';
import { parsePolicy } from '../src/sched/registry.js';
import { openSqliteStore } from '../src/store/sqlite.js';
import { idleExecutor, spec } from './service.js';

/**
 * The scheduling-pass figure of `npm run bench`, in a process of its own (so that the benchmarks
 * before it leave no garbage behind, and so that it runs with the V8 flags it is started with):
 * 10,000 queued jobs on 1,000 simulated A100-40GB, policy migpool; the service starts and places
 * what fits, then 200 passes are timed. Prints `{"startMs", "firstPassMs", "running", "steady"}`
 * (steady: the 200 pass times, ms).
 */
const dir = mkdtempSync(join(tmpdir(), 'migpool-bench-'));
const store = openSqliteStore(join(dir, 'migpool.db'));
await store.init();
try {
  await store.insertJobs(Array.from({ length: 10_000 }, (_, i) => spec(i)), Date.now());
  // A simulated machine spec counts at most 64 GPUs per entry: 15 x 64 + 40 = 1,000.
  const fleet = [...Array.from({ length: 15 }, () => '64xA100-SXM4-40GB'), '40xA100-SXM4-40GB'].join(',');
  const machine = SimulatedMachine.create(parseSimulateSpec(fleet), 1, fleet);
  const service = new PoolServiceImpl({ store, executor: idleExecutor(), gpu: new SimulatedGpuPort(machine), policy: parsePolicy('migpool'), dataDir: dir, tickMs: 3_600_000 });
  const t0 = performance.now();
  await service.start();
  await service.idle();
  const startMs = performance.now() - t0;
  const first = (await service.stats()).passMs.slice();
  const running = (await service.listJobs({ states: ['running'], limit: 100_000 })).length;
  for (let i = 0; i < 200; i++) {
    service.schedule();
    await service.idle();
  }
  const steady = (await service.stats()).passMs.slice(first.length);
  await service.stop();
  process.stdout.write(`${JSON.stringify({ startMs, firstPassMs: first[0] ?? null, running, steady })}\n`);
} finally {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
