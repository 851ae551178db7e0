import { rmSync } from 'node:fs';
import type { PoolServiceImpl } from '../src/control/service.js';
import type { Policy } from '../src/sched/types.js';
import type { Store } from '../src/store/types.js';

/** Tests of a PoolServiceImpl run in-process: polling, and stopping what a test started. */

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Asks `f` every 50 ms until it answers other than null; throws naming `what` after `timeoutMs`. */
export async function until<T>(what: string, f: () => Promise<T | null>, timeoutMs = 15_000): Promise<T> {
  const t0 = Date.now();
  for (;;) {
    const v = await f();
    if (v !== null) return v;
    if (Date.now() - t0 > timeoutMs) throw new Error(`${what}: not after ${timeoutMs} ms`);
    await sleep(50);
  }
}

/**
 * Stops a service a test started: cancels its jobs (running ones, and queued ones with
 * `queuedToo`), waits up to 5 s for the running ones to end, stops it, closes its store and
 * removes `dir` when given.
 */
export async function closeService(service: PoolServiceImpl, store: Store, opts: { readonly queuedToo?: boolean; readonly dir?: string } = {}): Promise<void> {
  const states = opts.queuedToo === true ? (['running', 'starting', 'queued'] as const) : (['running', 'starting'] as const);
  for (const j of await service.listJobs({ states: [...states] })) await service.cancel(j.id);
  for (let i = 0; i < 100 && (await service.listJobs({ states: ['running', 'starting'] })).length > 0; i++) await sleep(50);
  await service.idle();
  await service.stop();
  await store.close();
  if (opts.dir !== undefined) rmSync(opts.dir, { recursive: true, force: true });
}

/**
 * A policy for one A100-40GB: cuts it into 3g.20gb + 2g.10gb + 1g.5gb + 1g.5gb once a job waits,
 * then starts the first queued job on the smallest idle slice that holds its memory need, as a
 * packing policy would pick (tests of out-of-memory moves and of learning).
 */
export function smallestSlicePolicy(): Policy {
  return {
    name: 'smallest',
    decide(view, ctx) {
      const g = view.gpus[0]!;
      if (!g.migEnabled) return g.wholeGpuJobs.length === 0 && view.queue.length > 0 ? [{ kind: 'repartition', gpu: 0, layout: [{ profile: '3g.20gb', start: 4 }, { profile: '2g.10gb', start: 0 }, { profile: '1g.5gb', start: 2 }, { profile: '1g.5gb', start: 3 }] }] : [];
      const job = view.queue[0];
      if (!job || g.busyUntil !== null) return [];
      const idle = g.instances.filter((i) => i.job === null && ctx.fits(job, { kind: 'instance', model: g.model, profile: i.profile.name })).sort((x, y) => x.profile.computeSlices - y.profile.computeSlices);
      return idle[0] ? [{ kind: 'start-on-instance', job: job.id, gpu: 0, start: idle[0].start }] : [];
    },
  };
}
