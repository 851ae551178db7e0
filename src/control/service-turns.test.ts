import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createLocalExecutor } from '../exec/local-executor.js';
import { SimulatedGpuPort } from '../gpu/simulated/driver.js';
import { SimulatedMachine } from '../gpu/simulated/machine.js';
import { parseSimulateSpec } from '../gpu/simulated/spec.js';
import { parsePolicy } from '../sched/registry.js';
import type { Policy } from '../sched/types.js';
import { openSqliteStore } from '../store/sqlite.js';
import type { Store } from '../store/types.js';
import { PoolServiceImpl, type ServiceOptions } from './service.js';

// How the service takes turns under load: the API and signals are served between its turns, passes
// coalesce, and a stop ends scheduling at once. Behaviour, not timings (speed is the bench's).

const node = process.execPath;
const open: { service: PoolServiceImpl; store: Store; dir: string; stopped: boolean }[] = [];

afterEach(async () => {
  for (const o of open.splice(0)) {
    if (!o.stopped) {
      for (const j of await o.service.listJobs({ states: ['running', 'starting'] })) await o.service.cancel(j.id);
      for (let i = 0; i < 100 && (await o.service.listJobs({ states: ['running', 'starting'] })).length > 0; i++) await new Promise((r) => setTimeout(r, 50));
      await o.service.stop();
    }
    await o.store.close();
    rmSync(o.dir, { recursive: true, force: true });
  }
});

async function started(policy: Policy, extra: Partial<ServiceOptions> = {}): Promise<(typeof open)[number]> {
  const dir = mkdtempSync(join(tmpdir(), 'migpool-turns-'));
  const store = openSqliteStore(join(dir, 'migpool.db'));
  await store.init();
  const machine = SimulatedMachine.create(parseSimulateSpec('1xA100-SXM4-40GB'), 1, '1xA100-SXM4-40GB');
  // tickMs: no tick during a test (each pass here is asked for by the test).
  const service = new PoolServiceImpl({ store, executor: createLocalExecutor({ pollMs: 50, graceSeconds: 1 }), gpu: new SimulatedGpuPort(machine), policy, dataDir: dir, tickMs: 3_600_000, ...extra });
  const o = { service, store, dir, stopped: false };
  open.push(o);
  await service.start();
  return o;
}

const seven = Array.from({ length: 7 }, (_, i) => ({ name: `j${i}`, command: [node, '-e', 'setTimeout(() => {}, 200)'], resources: { profile: '1g.5gb' } }));

describe('the service takes turns', () => {
  it('serves callbacks waiting on the event loop between the starts of one pass, not only after it', async () => {
    const inner = parsePolicy('static:7x1g.5gb');
    let rounds = 0;
    let roundsWhenServed: number | null = null;
    let armed = false;
    const watching: Policy = {
      name: 'watching',
      decide: (view, ctx) => {
        const d = inner.decide(view, ctx);
        // The first round that starts jobs: a request arriving now is answered before the pass ends.
        if (!armed && d.some((x) => x.kind === 'start-on-instance')) {
          armed = true;
          setImmediate(() => {
            roundsWhenServed = rounds;
          });
        }
        return d;
      },
    };
    const { service } = await started(watching, { onRound: () => void rounds++ });
    await service.idle();
    const jobs = await service.submitMany(seven);
    await service.idle();
    expect(armed).toBe(true);
    // Served within the round that started the jobs (between its starts), before the round ended.
    const startedInRound = rounds;
    expect(roundsWhenServed).not.toBeNull();
    expect(roundsWhenServed!).toBeLessThan(startedInRound);
    expect((await Promise.all(jobs.map((j) => service.getJob(j.id)))).every((j) => j?.state === 'running' || j?.state === 'succeeded')).toBe(true);
  });

  it('a pass asked for many times while one runs runs at most once more', async () => {
    const inner = parsePolicy('migpool');
    let service: PoolServiceImpl | null = null;
    let asked = false;
    const asking: Policy = {
      name: 'asking',
      decide: (view, ctx) => {
        if (service && !asked) {
          asked = true;
          for (let i = 0; i < 10; i++) service.schedule();
        }
        return inner.decide(view, ctx);
      },
    };
    const o = await started(asking);
    await o.service.idle();
    const before = (await o.service.stats()).passMs.length;
    service = o.service;
    o.service.schedule();
    await o.service.idle();
    expect(asked).toBe(true);
    expect((await o.service.stats()).passMs.length - before).toBe(2);
  });

  it('a stop ends scheduling at once: a pass asked for before it does not run, and the queued job stays queued', async () => {
    const o = await started(parsePolicy('static:7x1g.5gb'));
    await o.service.idle();
    const passes = (await o.service.stats()).passMs.length;
    const [job] = await o.service.submitMany([seven[0]!]);
    // submitMany asked for a pass; the stop comes before it had its turn.
    o.stopped = true;
    await o.service.stop();
    expect((await o.service.stats()).passMs.length).toBe(passes);
    expect((await o.store.getJob(job!.id))?.state).toBe('queued');
  });
});
