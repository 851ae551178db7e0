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
  it('count a slice as its compute slices over its GPU\'s, and a shared GPU split among its jobs', () => {
    const v = view();
    expect(heldBy(v, v.running.get('a1')!)).toBeCloseTo(3 / 7, 12);
    expect(heldBy(v, v.running.get('b1')!)).toBe(0.5);
    const usage = usageByUser(v);
    expect(usage.get('alice')).toBeCloseTo(3 / 7 + 0.5, 12);
    expect(usage.get('bob')).toBe(0.5);
  });
});

describe('the quota rule', () => {
  it('lets a user start up to their quota and refuses the start that would pass it, in the decision check', () => {
    const users = new Map<string, UserShare>([['alice', { weight: 1, quotaGpus: 2 }]]);
    const queue = [spec('a3', 'alice'), spec('a4', 'alice', 2), spec('c1', 'carol', 1)];
    const v = view(users, queue);
    // alice holds 3/7 + 1/2; a 4g slice adds 4/7: 1.5 in all, within 2.
    const slice = { kind: 'start-on-instance', job: 'a3', gpu: 0, start: 0 } as const;
    expect(quotaProblem(v, slice, queue[0]!)).toBeNull();
    expect(checkDecision(v, slice, queueLookup(v))).toBeNull();
    // One whole GPU more makes 1.93, within 2; two GPUs more (GPU 2, and a third of GPU 1 where her a2 drops to a third too: +1/6) would make 2.10.
    expect(checkDecision(v, { kind: 'start-on-gpus', job: 'a3', gpus: [2], sharing: 'exclusive' }, queueLookup(v))).toBeNull();
    const two = { kind: 'start-on-gpus', job: 'a4', gpus: [2, 1], sharing: 'timeslice' } as const;
    expect(checkDecision(v, two, queueLookup(v))).toMatch(/^start job 'a4' on GPUs 2,1 \(timeslice\): user 'alice' would hold 2\.10 GPUs, over their quota of 2/);
    // Carol has no quota: anything goes.
    expect(quotaProblem(v, { kind: 'start-on-gpus', job: 'c1', gpus: [2], sharing: 'exclusive' }, queue[2]!)).toBeNull();
  });

  it('counts what a user\'s own sharers give up when their job joins a shared GPU', () => {
    // alice joins GPU 1 (b1, a2): her new job takes 1/3, her a2 drops from 1/2 to 1/3: +1/6.
    const users = new Map<string, UserShare>([['alice', { weight: 1, quotaGpus: 3 / 7 + 0.5 + 1 / 6 }]]);
    const queue = [spec('a3', 'alice')];
    const v = view(users, queue);
    expect(checkDecision(v, { kind: 'start-on-gpus', job: 'a3', gpus: [1], sharing: 'timeslice' }, queueLookup(v))).toBeNull();
    const tighter = view(new Map([['alice', { weight: 1, quotaGpus: 3 / 7 + 0.5 + 0.1 }]]), queue);
    expect(checkDecision(tighter, { kind: 'start-on-gpus', job: 'a3', gpus: [1], sharing: 'timeslice' }, queueLookup(tighter))).toMatch(/over their quota/);
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
