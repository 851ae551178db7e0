import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createLocalExecutor } from '../exec/local-executor.js';
import { SimulatedGpuPort } from '../gpu/simulated/driver.js';
import { SimulatedMachine } from '../gpu/simulated/machine.js';
import { parseSimulateSpec } from '../gpu/simulated/spec.js';
import { createRandom } from '../random.js';
import { checkDecision, queueLookup } from '../sched/check.js';
import { createPolicyContext } from '../sched/context.js';
import { parsePolicy } from '../sched/registry.js';
import { openSqliteStore } from '../store/sqlite.js';
import { MAX_PREEMPTIONS_PER_JOB, MIN_RUN_BEFORE_PREEMPT_SECONDS } from './preempt-rules.js';
import { PoolServiceImpl, type RecordedRound } from './service.js';

/**
 * One core, two clocks: what the service decided, a replay through the simulator's checker and a
 * fresh copy of the same policy decides again. The service records every round of its passes
 * (the view the policy saw, its decisions, and each decision's check against the view it was
 * applied to); the replay feeds the same views, in order, to a new policy with the same seed.
 */

const node = process.execPath;
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const SEED = 5;
const RECONFIGURE_SECONDS = 5;

async function runLive(policyName: string, slices: boolean): Promise<RecordedRound[]> {
  const dataDir = mkdtempSync(join(tmpdir(), 'migpool-replay-'));
  dirs.push(dataDir);
  const machine = SimulatedMachine.create(parseSimulateSpec('2xA100-SXM4-40GB'), 1, '2xA100-SXM4-40GB');
  const store = await openSqliteStore(join(dataDir, 'migpool.db'));
  await store.init();
  const rounds: RecordedRound[] = [];
  const service = new PoolServiceImpl({
    store,
    executor: createLocalExecutor({ pollMs: 50, graceSeconds: 1 }),
    gpu: new SimulatedGpuPort(machine),
    policy: parsePolicy(policyName),
    dataDir,
    tickMs: 100,
    seed: SEED,
    reconfigureSeconds: RECONFIGURE_SECONDS,
    onRound: (r) => rounds.push(r),
  });
  await service.start();
  const sleep = (ms: number) => [node, '-e', `setTimeout(() => {}, ${ms})`];
  const specs = [
    ...Array.from({ length: 6 }, (_, i) => ({ name: `small-${i}`, command: sleep(300 + 100 * i), workload: 'small', resources: { memory: '4GiB' } })),
    // A job bound to exactly one slice, for the policies that cut GPUs.
    ...(slices ? [{ name: 'exact', command: sleep(400), workload: 'small', resources: { profile: '1g.5gb' } }] : []),
    { name: 'whole', command: sleep(500), workload: 'large', resources: { gpus: 1 } },
    { name: 'background', command: sleep(300), workload: 'small', priority: 'background' },
  ];
  const recs = await service.submitMany(specs);
  const t0 = Date.now();
  for (;;) {
    const open = await service.listJobs({ states: ['queued', 'starting', 'running'] });
    if (open.length === 0) break;
    if (Date.now() - t0 > 60_000) throw new Error(`jobs still open after 60 s: ${open.map((j) => `${j.id}:${j.state}`).join(', ')}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  await service.idle();
  await service.stop();
  const final = await Promise.all(recs.map((r) => service.getJob(r.id)));
  expect(final.map((j) => j?.state)).toEqual(recs.map(() => 'succeeded'));
  await store.close();
  return rounds;
}

describe('replay: the simulator reproduces what the service decided', () => {
  for (const [policyName, slices] of [['migpool', true], ['tiresias', false]] as const) {
    it(`${policyName}: the same views give the same decisions, and the same checks the same verdicts`, async () => {
      const rounds = await runLive(policyName, slices);
      const acted = rounds.filter((r) => r.decisions.length > 0);
      expect(acted.length).toBeGreaterThan(2);
      const policy = parsePolicy(policyName);
      // The same context as the service's: its seed, re-partition time and preemption rules.
      const ctx = createPolicyContext({ random: createRandom(SEED), reconfigureSeconds: RECONFIGURE_SECONDS, preemptionRules: { minRunSeconds: MIN_RUN_BEFORE_PREEMPT_SECONDS, maxPreemptions: MAX_PREEMPTIONS_PER_JOB } });
      for (const [i, round] of rounds.entries()) {
        expect(policy.decide(round.view, ctx), `round ${i} at t=${round.view.now}`).toEqual(round.decisions);
        for (const [k, c] of round.checks.entries()) {
          const d = round.decisions[k];
          if (!d) continue;
          expect(checkDecision(c.view, d, queueLookup(c.view))).toBe(c.problem);
        }
      }
      // The live service never had to skip a decision: the policy made none the checker refuses.
      expect(rounds.flatMap((r) => r.checks.filter((c) => c.problem !== null).map((c) => c.problem))).toEqual([]);
    }, 120_000);
  }
});
