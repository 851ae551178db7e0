import { describe, expect, it } from 'vitest';
import { resolveWorkload } from '../perf/workloads.js';
import { simulate } from '../sim/engine.js';
import { parseFleet } from '../sim/fleet.js';
import type { TraceJob } from '../sim/types.js';
import { exclusivePolicy } from './policies/exclusive.js';
import { createRandom } from '../random.js';
import { parsePolicy, POLICIES } from './registry.js';
import { withShares } from './share-policy.js';
import type { ClusterView, Decision, Policy, UserShare } from './types.js';

const small = resolveWorkload('small');
const job = (id: string, user: string | undefined, arrival: number, work: number, gpus = 1): TraceJob => ({
  id,
  workload: small,
  gpus,
  priority: 'foreground',
  arrival,
  work,
  memoryGiB: null,
  profile: null,
  ...(user === undefined ? {} : { user }),
});

/** Records, at every call, what each user holds in whole GPUs (exclusive policies only) and who waits. */
function watching(policy: Policy, seen: { held: Map<string, number>; waiting: Set<string> }[]): Policy {
  return {
    name: policy.name,
    decide(view: ClusterView, ctx): Decision[] {
      const held = new Map<string, number>();
      for (const r of view.running.values()) held.set(r.spec.user ?? '', (held.get(r.spec.user ?? '') ?? 0) + (r.placement.kind === 'gpus' ? r.placement.gpus.length : 0));
      seen.push({ held, waiting: new Set(view.queue.map((j) => j.user ?? '')) });
      return policy.decide(view, ctx);
    },
  };
}

describe('quotas for any policy', () => {
  // alice floods 4 GPUs first; bob comes a little later.
  const jobs = [...[0, 1, 2, 3, 4, 5].map((i) => job(`a${i}`, 'alice', 0, 1000)), job('b0', 'bob', 10, 100), job('b1', 'bob', 10, 100)];
  const users = new Map<string, UserShare>([
    ['alice', { weight: 1, quotaGpus: 2 }],
    ['bob', { weight: 1, quotaGpus: null }],
  ]);

  for (const name of ['exclusive', 'tiresias', 'gavel', 'timeslice:2', 'migpool']) {
    it(`${name}: a user never holds more than their quota, and the others' jobs do not wait behind theirs`, () => {
      const r = simulate({ fleet: parseFleet('4xA100-40GB'), jobs, policy: parsePolicy(name), seed: 1, users });
      expect(r.metrics.completed).toBe(jobs.length);
      const alice = r.byUser?.find((u) => u.user === 'alice');
      expect(alice?.peakGpus).toBeLessThanOrEqual(2 + 1e-9);
      // bob's two short jobs find GPUs that alice's quota leaves free (gavel: at its next round,
      // t=360; migpool: while jobs wait it may start one at once on a 1g.5gb slice it cut earlier,
      // where `small` runs at about 0.45x a whole GPU: 100 s of work take about 222 s).
      const bob = r.byUser?.find((u) => u.user === 'bob');
      expect(bob?.avgJctSeconds).toBeLessThan(name === 'gavel' ? 360 + 110 : name === 'migpool' ? 250 : 120);
    });
  }

  it('without the shares, a policy that ignores quotas is refused by the decision check', () => {
    expect(() => simulate({ fleet: parseFleet('4xA100-40GB'), jobs, policy: exclusivePolicy(), seed: 1, users })).toThrow(/user 'alice' would hold 3 GPUs, over their quota of 2/);
  });

  it('shows the policy only the jobs the quota can take, and says why the others wait', () => {
    const seen: { held: Map<string, number>; waiting: Set<string> }[] = [];
    const policy = withShares(watching(exclusivePolicy(), seen));
    simulate({ fleet: parseFleet('4xA100-40GB'), jobs, policy, seed: 1, users });
    // Once alice holds 2, none of her jobs is offered to the policy.
    expect(seen.some((s) => s.held.get('alice') === 2)).toBe(true);
    for (const s of seen) if ((s.held.get('alice') ?? 0) >= 2) expect(s.waiting.has('alice')).toBe(false);
  });
});

describe('fair share', () => {
  // Two users flood 3 GPUs with equal one-GPU jobs; alice weighs 2, bob 1.
  const flood = (user: string) => Array.from({ length: 60 }, (_, i) => job(`${user}${i}`, user, 0, 300 + 7 * (i % 5)));
  const jobs = [...flood('alice'), ...flood('bob')];
  const users = new Map<string, UserShare>([
    ['alice', { weight: 2, quotaGpus: null }],
    ['bob', { weight: 1, quotaGpus: null }],
  ]);

  for (const name of ['exclusive', 'tiresias', 'static:7x1g.5gb']) {
    it(`${name}: each user's share of the pool under contention tends to their weight`, () => {
      const r = simulate({ fleet: parseFleet('3xA100-40GB'), jobs, policy: parsePolicy(name), seed: 1, users });
      const share = new Map(r.byUser?.map((u) => [u.user, u.contendedShare]));
      expect(share.get('alice')).toBeGreaterThan(0.6);
      expect(share.get('alice')).toBeLessThan(0.72);
      expect(share.get('bob')).toBeCloseTo(1 - (share.get('alice') ?? 0), 9);
    });
  }

  it('changes nothing when no user is named: the same decisions as the bare policy', () => {
    const plain = jobs.map(({ user: _user, ...rest }) => rest);
    const a = simulate({ fleet: parseFleet('3xA100-40GB'), jobs: plain, policy: parsePolicy('exclusive'), seed: 1 });
    const b = simulate({ fleet: parseFleet('3xA100-40GB'), jobs: plain, policy: exclusivePolicy(), seed: 1 });
    expect(a.jcts).toEqual(b.jcts);
    expect(a.byUser).toBeUndefined();
  });
});

describe('every registered policy under quotas', () => {
  // Three users on 4 GPUs: alice may hold 2 GPUs' worth, bob 1.5, carol any; 24 jobs, a third of
  // the single-GPU ones asking for a MIG profile, arriving a minute apart on average.
  const users = new Map<string, UserShare>([
    ['alice', { weight: 2, quotaGpus: 2 }],
    ['bob', { weight: 1, quotaGpus: 1.5 }],
    ['carol', { weight: 1, quotaGpus: null }],
  ]);
  const names = ['alice', 'bob', 'carol'];
  const trace = (seed: number): TraceJob[] => {
    const random = createRandom(seed);
    let arrival = 0;
    return Array.from({ length: 24 }, (_, i) => {
      arrival += Math.round(-Math.log(1 - random()) * 60);
      const user = names[i % 3] as string;
      const gpus = user === 'bob' ? 1 : random() < 0.3 ? 2 : 1;
      return { ...job(`j${i}`, user, arrival, Math.round(60 * 30 ** random()), gpus), profile: gpus === 1 && random() < 1 / 3 ? '1g.5gb' : null };
    });
  };
  for (const entry of POLICIES) {
    it(`${entry.examples[0]}: completes every job and no start passes a quota (the simulator's check would throw)`, () => {
      for (const seed of [1, 2]) {
        const jobs = trace(seed);
        const r = simulate({ fleet: parseFleet('4xA100-40GB'), jobs, policy: parsePolicy(entry.examples[0]), seed, users });
        expect(r.metrics.completed).toBe(jobs.length);
        const peak = new Map(r.byUser?.map((u) => [u.user, u.peakGpus]));
        expect(peak.get('alice')).toBeLessThanOrEqual(2 + 1e-9);
        expect(peak.get('bob')).toBeLessThanOrEqual(1.5 + 1e-9);
      }
    });
  }
});
