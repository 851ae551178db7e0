/**
 * The policy contract: what every registered policy owes the simulator and the service, checked
 * on seeded random traces for each example of each entry of the registry (so a policy added to
 * POLICIES is checked here without a line of its own). Every policy:
 * - makes no invalid decision (the simulator throws on one: an instance that is busy or missing,
 *   a GPU over-committed, a re-partition under a running job, ...);
 * - completes every job of a trace the fleet can hold, under every information model (exact,
 *   noisy, overestimate, none, progress: it never sees the true work) and with preemption costed;
 * - is deterministic: the same trace and seed give the same decisions and the same result;
 * - honours requested profiles: a job that asked for a MIG profile never starts on an instance
 *   with fewer compute slices (a whole GPU is never smaller);
 * - never preempts a job that may not be preempted (`preemptible: false`: the simulator's
 *   decision check throws on it);
 * - on a fleet whose GPUs differ in memory, places no job where its memory does not fit (the
 *   check throws) and still completes every job some GPU holds.
 */
import type { Highs } from 'highs';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadHighs } from '../exec/highs.js';
import type { GiProfile } from '../mig/types.js';
import { resolveWorkload } from '../perf/workloads.js';
import { createRandom } from '../random.js';
import { simulate } from '../sim/engine.js';
import { parseFleet } from '../sim/fleet.js';
import { INFO_MODES, type InfoMode } from '../sim/info.js';
import type { Fleet, TraceJob } from '../sim/types.js';
import { parsePolicy, POLICIES } from './registry.js';
import type { ClusterView, Decision, Policy } from './types.js';

/** Small fleets: A100s only, and A100s with one H100 (whose profiles have other names). */
const FLEETS = ['4xA100-40GB', '3xA100-40GB,1xH100-80GB'].map(parseFleet);
/** Seeds per policy and fleet: each a different trace. */
const SEEDS = [1, 2, 3, 4];
const WORKLOADS = ['small', 'medium', 'large', 'bert'].map((n) => resolveWorkload(n));
/** Profiles a job may ask for: the A100-40GB's plain ones (1g.10gb is also an H100-80GB profile). */
const PROFILES = ['1g.5gb', '1g.10gb', '2g.10gb', '3g.20gb', '4g.20gb', '7g.40gb'];

/**
 * A random trace of 10 to 20 jobs on `fleet`: arrivals about two minutes apart (a queue builds),
 * 1, 2 or 4 GPUs, runs of one minute to an hour (log-uniform), a third background, and a third of
 * the single-GPU jobs asking for a MIG profile.
 */
function randomTrace(seed: number): TraceJob[] {
  const random = createRandom(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)] as T;
  const jobs: TraceJob[] = [];
  let arrival = 0;
  const n = 10 + Math.floor(random() * 11);
  for (let i = 0; i < n; i++) {
    arrival += Math.round(-Math.log(1 - random()) * 120);
    const gpus = pick([1, 1, 1, 1, 1, 1, 2, 2, 4]);
    jobs.push({
      id: `j${i}`,
      workload: pick(WORKLOADS),
      gpus,
      priority: random() < 1 / 3 ? 'background' : 'foreground',
      arrival,
      work: Math.round(60 * 60 ** random()),
      memoryGiB: null,
      profile: gpus === 1 && random() < 1 / 3 ? pick(PROFILES) : null,
      // A job that does not checkpoint (the service's default): a fifth of them.
      ...(random() < 1 / 5 ? { preemptible: false } : {}),
    });
  }
  return jobs;
}

/** Compute slices of a profile name on any GPU model of the fleet (the name says them: `3g.` is 3). */
function slicesOf(fleet: Fleet, name: string): number {
  const p = fleet.gpus.flatMap((g) => g.giProfiles).find((q) => q.name === name);
  if (!p) throw new Error(`no GPU of ${fleet.spec} offers ${name}`);
  return p.computeSlices;
}

/** What a run of a policy did: its decisions in order, and the profile floors it broke. */
interface Log {
  readonly decisions: string[];
  readonly belowFloor: string[];
}

/**
 * The policy, watched: records every decision, and each start on an instance smaller than the
 * job's requested profile (the instance as the view shows it, or as a re-partition earlier in the
 * same batch makes it).
 */
function watched(policy: Policy, fleet: Fleet, log: Log): Policy {
  return {
    name: policy.name,
    decide(view: ClusterView, ctx) {
      const decisions = policy.decide(view, ctx);
      const repartitioned = new Map<number, Extract<Decision, { kind: 'repartition' }>['layout']>();
      for (const d of decisions) {
        log.decisions.push(`${view.now} ${JSON.stringify(d)}`);
        if (d.kind === 'repartition') repartitioned.set(d.gpu, d.layout);
        if (d.kind !== 'start-on-instance') continue;
        const job = view.queue.find((j) => j.id === d.job);
        if (job?.profile == null) continue;
        const gpu = view.gpus[d.gpu];
        const layout = repartitioned.get(d.gpu);
        const profile: GiProfile | undefined = layout
          ? gpu?.model.giProfiles.find((p) => p.name === layout.find((e) => e.start === d.start)?.profile)
          : gpu?.instances.find((i) => i.start === d.start)?.profile;
        if (!profile || profile.computeSlices < slicesOf(fleet, job.profile)) {
          log.belowFloor.push(`${view.now}: job ${job.id} asked for ${job.profile}, started on ${profile?.name ?? 'no instance'} of GPU ${d.gpu} (${gpu?.model.name})`);
        }
      }
      return decisions;
    },
  };
}

/** Seconds a preempted job loses, as the CLI's default: policies that preempt pay for it. */
const PREEMPTION_COST_SECONDS = 60;

function run(name: string, fleet: Fleet, jobs: readonly TraceJob[], seed: number, mode: InfoMode) {
  const log: Log = { decisions: [], belowFloor: [] };
  const policy = watched(parsePolicy(name, highs ? { highs } : {}), fleet, log);
  const result = simulate({ fleet, jobs, seed, policy, info: { mode, seed }, preemptionCostSeconds: PREEMPTION_COST_SECONDS, sampleEverySeconds: 600 });
  return { result, log };
}

const EXAMPLES = POLICIES.flatMap((e) => e.examples);

/** HiGHS, for the policies that solve LPs on fleets of several GPU models (gavel), as the CLI passes it. */
let highs: Highs | undefined;
beforeAll(async () => {
  highs = await loadHighs();
});

describe('policy contract', () => {
  it('covers every registered policy', () => {
    expect(POLICIES.every((e) => e.examples.length > 0)).toBe(true);
    expect(new Set(EXAMPLES.map((x) => x.split(':')[0]))).toEqual(new Set(POLICIES.map((e) => e.name)));
  });

  it('draws traces that exercise profiles, priorities and multi-GPU jobs', () => {
    const all = SEEDS.flatMap(randomTrace);
    expect(all.filter((j) => j.profile !== null).length).toBeGreaterThan(5);
    expect(new Set(all.map((j) => j.gpus))).toEqual(new Set([1, 2, 4]));
    expect(new Set(all.map((j) => j.priority)).size).toBe(2);
  });

  describe.each(EXAMPLES)('%s', (name) => {
    // Static layouts name A100 profiles, which an A30 does not have.
    it.skipIf(name.startsWith('static:'))('on a fleet whose GPUs differ in memory: places no job where its memory does not fit, and completes every job', () => {
      // Found with `simulate --trace synthetic --fleet 4xA30-24GB --policies miso`: miso started a 2-GPU job of
      // 24.46 GiB on two A30-24GB, and the simulator stopped on the invalid decision.
      const fleet = parseFleet('2xA30-24GB,2xA100-40GB');
      for (const seed of SEEDS) {
        // At most 2 GPUs (there are two of each model); every third job needs 30 GiB (only an A100-40GB holds it), the others 8 GiB.
        const jobs = randomTrace(seed).map((j, k) => ({ ...j, gpus: Math.min(j.gpus, 2), ...(k % 3 === 0 ? { memoryGiB: 30, profile: null } : { memoryGiB: 8 }) }));
        const { result } = run(name, fleet, jobs, seed, 'noisy');
        expect(result.metrics.completed, `seed ${seed}: jobs completed`).toBe(jobs.length);
      }
    });

    it.each(FLEETS.map((f, i) => [f.spec, f, i] as const))('on %s: valid decisions, every job done, deterministic, profiles honoured', (_, fleet, i) => {
      for (const seed of SEEDS) {
        // Every information model in turn (across seeds and fleets): the policy never sees the true work.
        const mode = INFO_MODES[(seed + i) % INFO_MODES.length] as InfoMode;
        const jobs = randomTrace(seed);
        const first = run(name, fleet, jobs, seed, mode);
        const where = `seed ${seed}, info ${mode}`;
        expect(first.result.metrics.completed, `${where}: jobs completed`).toBe(jobs.length);
        expect(first.log.belowFloor, where).toEqual([]);
        const again = run(name, fleet, jobs, seed, mode);
        expect(again.log.decisions, `${where}: the same decisions`).toEqual(first.log.decisions);
        expect(again.result, `${where}: the same result`).toEqual(first.result);
      }
    });
  });
});
