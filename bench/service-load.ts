import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PoolServiceImpl } from '../src/control/service.js';
import { createLocalExecutor } from '../src/exec/local-executor.js';
import { SimulatedGpuPort } from '../src/gpu/simulated/driver.js';
import { SimulatedMachine } from '../src/gpu/simulated/machine.js';
import { parseSimulateSpec } from '../src/gpu/simulated/spec.js';
import { parsePolicy } from '../src/sched/registry.js';
import { openSqliteStore } from '../src/store/sqlite.js';

/** The target: 10,000 queued 1-second jobs on 14 slices complete at 600 a minute or more. */
export const LOAD_TARGET_PER_MINUTE = 600;

/**
 * Jobs completed per minute by the live service under load: `queued` jobs of `sleep 1` (real
 * processes, the local executor and its runner), queued at once on 2 simulated A100-40GB cut
 * 7x1g.5gb (policy static:7x1g.5gb unless `policy` names another), counted over `windowSeconds`
 * after the first completion.
 */
export async function serviceLoad(queued = 10_000, windowSeconds = 60, policy = 'static:7x1g.5gb'): Promise<{ perMinute: number; completed: number; seconds: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'migpool-bench-load-'));
  const store = openSqliteStore(join(dir, 'migpool.db'));
  await store.init();
  const machine = SimulatedMachine.create(parseSimulateSpec('2xA100-SXM4-40GB'), 1, '2xA100-SXM4-40GB');
  const service = new PoolServiceImpl({ store, executor: createLocalExecutor({ graceSeconds: 1 }), gpu: new SimulatedGpuPort(machine), policy: parsePolicy(policy), dataDir: dir });
  const done = async () => (await store.countJobs()).filter((c) => c.state === 'succeeded' || c.state === 'failed').reduce((n, c) => n + c.count, 0);
  try {
    await service.start();
    await service.submitMany(Array.from({ length: queued }, (_, i) => ({ name: `load-${i}`, command: ['sleep', '1'], resources: { profile: '1g.5gb' } })));
    const warm = Date.now() + 120_000;
    while ((await done()) === 0 && Date.now() < warm) await new Promise((r) => setTimeout(r, 100));
    const before = await done();
    const t0 = Date.now();
    await new Promise((r) => setTimeout(r, windowSeconds * 1000));
    const completed = (await done()) - before;
    const seconds = (Date.now() - t0) / 1000;
    return { perMinute: (completed * 60) / seconds, completed, seconds };
  } finally {
    for (const j of await service.listJobs({ states: ['running', 'starting'], limit: 1000 })) await service.cancel(j.id).catch(() => null);
    await service.stop();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
