import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createLocalExecutor } from '../exec/local-executor.js';
import { SimulatedGpuPort } from '../gpu/simulated/driver.js';
import { SimulatedMachine } from '../gpu/simulated/machine.js';
import { parseSimulateSpec } from '../gpu/simulated/spec.js';
import { migpoolPolicy } from '../sched/policies/migpool.js';
import { openSqliteStore } from '../store/sqlite.js';
import type { Store } from '../store/types.js';
import { PoolServiceImpl } from './service.js';
import { closeService, until } from '../../test/service-kit.js';

/**
 * The live service clears a MIG GPU for a big job that lacks only that GPU, as the simulator does
 * (src/sched/policies/migpool.test.ts, 'clears a MIG GPU for a job of half the fleet ...'): the
 * same policy, with its thresholds and minimum run scaled from hours to seconds so the case fits a
 * test. Four GPUs: X (2 GPUs, not preemptible) and seven small preemptible jobs; the small ones
 * are packed onto a GPU cut into 1g.5gb slices (one may move to the fourth GPU). W (2 GPUs) then
 * lacks one whole GPU: the slice jobs are checkpointed and requeued, the GPU goes back to whole,
 * and W runs and ends; the slice jobs are requeued.
 */

const node = process.execPath;
let cleanup: (() => Promise<void>) | null = null;

afterEach(async () => {
  await cleanup?.();
  cleanup = null;
});


describe('clearing a MIG GPU in the live service', () => {
  it('clears the MIG GPU a big job lacks, runs it, and requeues the slice jobs', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'migpool-clear-'));
    const machine = SimulatedMachine.create(parseSimulateSpec('4xA100-SXM4-40GB'), 1, '4xA100-SXM4-40GB');
    const store: Store = await openSqliteStore(join(dir, 'migpool.db'));
    await store.init();
    // Thresholds of 2 and 4 GPU-seconds and a 1-second minimum run: the slice jobs are past the
    // first threshold and their minimum run within seconds.
    const lines: string[] = [];
    const policy = migpoolPolicy({ thresholds: [2, 4], minRunSeconds: 1 });
    const service = new PoolServiceImpl({ store, executor: createLocalExecutor({ pollMs: 50, graceSeconds: 5 }), gpu: new SimulatedGpuPort(machine), policy, dataDir: dir, tickMs: 100, reconfigureSeconds: 1, minRunBeforePreemptSeconds: 0, log: (l) => lines.push(l) });
    await service.start();
    cleanup = () => closeService(service, store, { queuedToo: true, dir });
    const sleep = (ms: number) => [node, '-e', `setTimeout(() => {}, ${ms})`];
    const x = await service.submit({ name: 'X', command: sleep(60_000), workload: 'large', resources: { gpus: 2 } });
    // The small jobs take 2 s to checkpoint when stopped: W waits that long, long enough for the
    // service's pending reasons (refreshed once a second) to say why.
    const checkpointing = [node, '-e', 'process.on("SIGTERM", () => setTimeout(() => process.exit(0), 2000)); setTimeout(() => {}, 15000)'];
    const smalls = await service.submitMany(Array.from({ length: 7 }, (_, i) => ({ name: `S${i}`, command: checkpointing, workload: 'small', preemptible: true })));
    const ids = new Set(smalls.map((s) => s.id));
    // The small jobs run on slices of a MIG GPU.
    const mig = await until('small jobs on slices', async () => {
      const g = (await service.gpus()).find((gg) => gg.instances.filter((i) => i.job !== null && ids.has(i.job)).length >= 6);
      return g?.index ?? null;
    });
    // Past the first threshold and their minimum run.
    await new Promise((r) => setTimeout(r, 3000));
    const w = await service.submit({ name: 'W', command: sleep(500), workload: 'large', resources: { gpus: 2 } });
    const reasons: string[] = [];
    const done = await until('W ends', async () => {
      const j = await service.getJob(w.id);
      if (j?.pending) reasons.push(j.pending);
      return j && (j.state === 'succeeded' || j.state === 'failed') ? j : null;
    }, 20_000);
    expect(done.state).toBe('succeeded');
    // It ran on two whole GPUs, one of them the GPU that was cut.
    expect(done.placement).toMatchObject({ kind: 'gpus' });
    expect((done.placement as { gpus: readonly number[] }).gpus).toContain(mig);
    // While it waited, its pending reason said so.
    expect(reasons.some((r) => /lacks only one whole GPU has MIG GPUs cleared for it: the slice jobs on GPU \d/.test(r))).toBe(true);
    // The slice jobs were checkpointed and requeued (attempt 2), none failed or was lost.
    const recs = await until('the slice jobs requeued', async () => {
      const rs = await Promise.all(smalls.map(async (s) => (await service.getJob(s.id))!));
      return rs.filter((r) => (r.preemptions ?? 0) >= 1 && r.attempt >= 2).length >= 5 ? rs : null;
    });
    expect(recs.every((r) => ['queued', 'starting', 'running', 'succeeded'].includes(r.state))).toBe(true);
    // Acting on GPUs the preempted jobs still held while they stopped is no policy bug: the
    // service waited for them without logging a skipped decision.
    expect(lines.filter((l) => l.includes('skipped an invalid decision'))).toEqual([]);
    expect((await service.getJob(x.id))!.state).toBe('running');
  }, 90_000);
});
