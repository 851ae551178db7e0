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
 * One memory figure for `npm run bench`, in a process of its own (run with --expose-gc): a service
 * over a store holding HISTORY finished jobs, after start, a page of the history and stats.
 * Prints `{"heap", "rss"}` in bytes.
 */
const history = Number(process.argv[2] ?? 'NaN');
if (!Number.isInteger(history) || history < 0) throw new Error('usage: memory-child.js HISTORY (a whole number of finished jobs)');
const dir = mkdtempSync(join(tmpdir(), 'migpool-bench-'));
const store = openSqliteStore(join(dir, 'migpool.db'));
await store.init();
try {
  const recs = await store.insertJobs(Array.from({ length: history }, (_, i) => spec(i)), Date.now());
  for (const r of recs) await store.updateJob(r.id, r.version, { state: 'succeeded', attempt: 1, startedAt: r.submittedAt, endedAt: r.submittedAt + 1000, exitCode: 0 });
  const service = new PoolServiceImpl({ store, executor: idleExecutor(), gpu: new SimulatedGpuPort(SimulatedMachine.create(parseSimulateSpec('8xA100-SXM4-40GB'), 1, '8xA100-SXM4-40GB')), policy: parsePolicy('migpool'), dataDir: dir, hold: true });
  await service.start();
  await service.listJobs({ limit: 100, order: 'desc' });
  await service.stats();
  global.gc?.();
  const after = process.memoryUsage();
  await service.stop();
  process.stdout.write(`${JSON.stringify({ heap: after.heapUsed, rss: after.rss })}\n`);
} finally {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
