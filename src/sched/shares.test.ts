import { describe, expect, it } from 'vitest';
import { resolveGpuModel } from '../mig/catalog/index.js';
import { resolveWorkload } from '../perf/workloads.js';
import { checkDecision, queueLookup } from './check.js';
import { fairQueue, heldBy, quotaProblem, sharesActive, usageByUser, weightedDeficitOrder } from './shares.js';
import type { ClusterView, GpuView, JobSpec, RunningJobView, UserShare } from './types.js';

const a100 = resolveGpuModel('A100-SXM4-40GB');
const profile = (name: string) => a100.giProfiles.find((p) => p.name === name)!;
const small = resolveWorkload('small');
const spec = (id: string, user?: string, gpus = 1): JobSpec => ({ id, workload: small, gpus, priority: 'foreground', arrival: 0, estimate: null, memoryGiB: null, profile: null, ...(user ? { user } : {}) });

/** GPU 0: MIG on, a 3g (job a1 of alice) and a 4g idle; GPU 1: MIG off, shared by b1 (bob) and a2 (alice); GPU 2: idle. */
function view(users?: ReadonlyMap<string, UserShare>, queue: JobSpec[] = []): ClusterView {
  const gpus: GpuView[] = [
    {
      id: 0,
      model: a100,
      migEnabled: true,
      instances: [
        { gpu: 0, profile: profile('3g.20gb'), start: 4, size: 4, job: 'a1' },
        { gpu: 0, profile: profile('4g.20gb'), start: 0, size: 4, job: null },
      ],
      wholeGpuJobs: [],
      sharing: 'exclusive',
      busyUntil: null,
    },
    { id: 1, model: a100, migEnabled: false, instances: [], wholeGpuJobs: ['b1', 'a2'], sharing: 'timeslice', busyUntil: null },
    { id: 2, model: a100, migEnabled: false, instances: [], wholeGpuJobs: [], sharing: 'exclusive', busyUntil: null },
  ];
  const run = (s: JobSpec, placement: RunningJobView['placement']): [string, RunningJobView] => [s.id, { spec: s, placement, started: 0, done: 0, speed: 1 }];
  const running = new Map([
    run(spec('a1', 'alice'), { kind: 'instance', gpu: 0, start: 4 }),
    run(spec('b1', 'bob'), { kind: 'gpus', gpus: [1] }),
    run(spec('a2', 'alice'), { kind: 'gpus', gpus: [1] }),
  ]);
  return { now: 0, gpus, queue, running, ...(users ? { users } : {}) };
}

describe('holdings', () => {
  it('count a slice as its compute slices over its GPU\'s, and a whole GPU as 1 for each job on it, shared or not', () => {
    const v = view();
    expect(heldBy(v, v.running.get('a1')!)).toBeCloseTo(3 / 7, 12);
    expect(heldBy(v, v.running.get('b1')!)).toBe(1);
    const usage = usageByUser(v);
    expect(usage.get('alice')).toBeCloseTo(3 / 7 + 1, 12);
    expect(usage.get('bob')).toBe(1);
  });
});

describe('the quota rule', () => {
  it('lets a user start up to their quota and refuses the start that would pass it, in the decision check', () => {
    const users = new Map<string, UserShare>([['alice', { weight: 1, quotaGpus: 2 }]]);
    const queue = [spec('a3', 'alice'), spec('a4', 'alice', 2), spec('c1', 'carol', 1)];
    const v = view(users, queue);
    // alice holds 3/7 + 1; a 4g slice adds 4/7: 2 in all, just within 2.
    const slice = { kind: 'start-on-instance', job: 'a3', gpu: 0, start: 0 } as const;
    expect(quotaProblem(v, slice, queue[0]!)).toBeNull();
    expect(checkDecision(v, slice, queueLookup(v))).toBeNull();
    // A whole GPU more, or a share of the time-sliced one, makes 2.43: over.
    expect(checkDecision(v, { kind: 'start-on-gpus', job: 'a3', gpus: [2], sharing: 'exclusive' }, queueLookup(v))).toMatch(
      /^start job 'a3' on GPUs 2 \(exclusive\): user 'alice' would hold 2\.43 GPUs, over their quota of 2 \(they hold 1\.43\)$/,
    );
    expect(checkDecision(v, { kind: 'start-on-gpus', job: 'a3', gpus: [1], sharing: 'timeslice' }, queueLookup(v))).toMatch(/over their quota of 2/);
    // Carol has no quota: anything goes.
    expect(quotaProblem(v, { kind: 'start-on-gpus', job: 'c1', gpus: [2], sharing: 'exclusive' }, queue[2]!)).toBeNull();
  });

  it('counts a job sharing a GPU as holding all of it: a sharer leaving can never take a user past their quota', () => {
    const users = new Map<string, UserShare>([['bob', { weight: 1, quotaGpus: 1.5 }]]);
    const queue = [spec('b2', 'bob')];
    const v = view(users, queue);
    // bob holds GPU 1 (shared with alice's a2) as 1: another whole GPU would make 2.
    expect(checkDecision(v, { kind: 'start-on-gpus', job: 'b2', gpus: [2], sharing: 'exclusive' }, queueLookup(v))).toMatch(/would hold 2 GPUs, over their quota of 1\.50/);
    expect(checkDecision(v, { kind: 'start-on-instance', job: 'b2', gpu: 0, start: 0 }, queueLookup(v))).toMatch(/would hold 1\.57 GPUs/);
    const fourSevenths = view(new Map([['bob', { weight: 1, quotaGpus: 1 + 4 / 7 }]]), queue);
    expect(checkDecision(fourSevenths, { kind: 'start-on-instance', job: 'b2', gpu: 0, start: 0 }, queueLookup(fourSevenths))).toBeNull();
  });
});

describe('the weighted-deficit order', () => {
  const items = ['a1', 'a2', 'a3', 'a4', 'b1', 'b2', 'b3', 'b4'];
  const user = (id: string) => id[0]!;
  it('interleaves users by weight: a of weight 2 gets two places for each of b\'s', () => {
    const order = weightedDeficitOrder(items, user, () => 1, (u) => (u === 'a' ? 2 : 1));
    expect(order).toEqual(['a1', 'b1', 'a2', 'a3', 'b2', 'a4', 'b3', 'b4']);
  });

  it('serves first the user furthest below their share, counting what they hold', () => {
    const order = weightedDeficitOrder(items, user, () => 1, () => 1, new Map([['a', 3]]));
    expect(order.slice(0, 4)).toEqual(['b1', 'b2', 'b3', 'a1']);
  });

  it('keeps the order of one user\'s items, and of items with no users', () => {
    expect(weightedDeficitOrder(['x', 'y', 'z'], () => '', () => 1, () => 1)).toEqual(['x', 'y', 'z']);
    const v = view(undefined, [spec('q1'), spec('q2')]);
    const plain: ClusterView = { ...v, running: new Map() };
    expect(sharesActive(plain)).toBe(false);
    expect(fairQueue(plain)).toBe(plain.queue);
  });
});

describe('moves under a quota', () => {
  it("drops a running job's move (preempt, then start elsewhere) whole when the new place would pass the quota, and keeps one that fits", async () => {
    const { withinQuotas } = await import('./share-policy.js');
    // alice holds a1's 3g (3/7) and a share of GPU 1 (1): 1.43. Moving a1 to whole GPU 2 makes 2.
    const move = [{ kind: 'preempt', job: 'a1' }, { kind: 'start-on-gpus', job: 'a1', gpus: [2], sharing: 'exclusive' }] as const;
    const tight = view(new Map<string, UserShare>([['alice', { weight: 1, quotaGpus: 1.5 }]]));
    expect(withinQuotas(tight, move)).toEqual([]);
    const roomy = view(new Map<string, UserShare>([['alice', { weight: 1, quotaGpus: 2 }]]));
    expect(withinQuotas(roomy, move)).toEqual(move);
  });
});
