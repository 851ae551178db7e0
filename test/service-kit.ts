import { rmSync } from 'node:fs';
import type { PoolServiceImpl } from '../src/control/service.js';
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
