import { describe, expect, it } from 'vitest';
import { MigpoolError } from '../../errors.js';
import { resolveWorkload } from '../../perf/workloads.js';
import { createRandom } from '../../random.js';
import { simulate } from '../../sim/engine.js';
import { parseFleet } from '../../sim/fleet.js';
import { parsePolicies, parsePolicy, splitPolicyList } from '../registry.js';
import type { ClusterView, Policy, RunningJobView } from '../types.js';
import type { TraceJob } from '../../sim/types.js';
import type { JobSpec } from '../types.js';
import { tiresiasPolicy, TIRESIAS_THRESHOLDS } from './tiresias.js';

const small = resolveWorkload('small');
const job = (id: string, arrival: number, work: number, gpus = 1): TraceJob => ({ id, workload: small, gpus, priority: 'foreground', arrival, work, memoryGiB: null, profile: null });
const run = (fleet: string, jobs: TraceJob[], policy: Policy) => simulate({ fleet: parseFleet(fleet), jobs, policy, seed: 1 });

/** The policy seeing jobs whose length it may not read: reading `work` or `estimate` throws. */
function blindfolded(policy: Policy): Policy {
  const blind = (spec: JobSpec): JobSpec =>
    new Proxy(spec, {
      get(target, key, receiver) {
        if (key === 'work' || key === 'estimate') throw new Error(`tiresias read ${String(key)} of ${target.id}`);
        return Reflect.get(target, key, receiver) as unknown;
      },
    });
  const plainView = (view: ClusterView): ClusterView => {
    const running = new Map<string, RunningJobView>();
    for (const [id, r] of view.running) running.set(id, { spec: blind(r.spec), placement: r.placement, started: r.started, done: NaN, speed: NaN });
    return { now: view.now, gpus: view.gpus, queue: view.queue.map(blind), running, ...(view.history ? { history: view.history } : {}) };
  };
  return { name: policy.name, decide: (view, ctx) => policy.decide(plainView(view), ctx), wakeAt: (view) => policy.wakeAt?.(plainView(view)) ?? null };
}

describe('tiresias', () => {
  it('keeps a Q0 job running when a newcomer arrives, and preempts it for one once it crossed the threshold', () => {
    // One GPU, threshold 100 GPU-s. b arrives while a (Q0) runs: it waits behind a until a reaches
    // 100 GPU-s at t=100 (the policy asks to be called then), moves to Q1 and yields to b.
    const before = run('1xA100-40GB', [job('a', 0, 300), job('b', 50, 50)], tiresiasPolicy([100]));
    expect(before.jcts).toEqual([350, 100]);
    // With a threshold a never reaches, b waits for a to end.
    expect(run('1xA100-40GB', [job('a', 0, 300), job('b', 50, 50)], tiresiasPolicy([1000])).jcts).toEqual([300, 300]);
    // b arrives after a attained 150 GPU-s: a is in Q1, b (Q0) takes its GPU; a resumes after b.
    const after = run('1xA100-40GB', [job('a', 0, 300), job('b', 150, 50)], tiresiasPolicy([100]));
    expect(after.jcts).toEqual([350, 50]);
  });

  it('measures attained service in GPU-seconds: a 2-GPU job crosses at half the time', () => {
    // 3 GPUs, threshold 100. a (2 GPUs) and c (1 GPU) run from 0; at 60 a attained 120 GPU-s (Q1),
    // c 60 (Q0). b (2 GPUs) arrives at 60: c keeps its GPU, b takes two, a is preempted.
    const r = run('3xA100-40GB', [job('a', 0, 100, 2), job('c', 0, 100), job('b', 60, 10, 2)], tiresiasPolicy([100]));
    expect(r.jcts).toEqual([110, 100, 10]);
  });

  it('fits greedily in queue order: a small job behind a big one that does not fit runs now', () => {
    // 2 GPUs: a holds one; b (2 GPUs) waits; c (1 GPU) arrives later and takes the free GPU.
    const r = run('2xA100-40GB', [job('a', 0, 100), job('b', 1, 50, 2), job('c', 2, 20)], tiresiasPolicy());
    expect(r.jcts).toEqual([100, 149, 20]);
  });

  it('orders queues by thresholds: the lowest queue waits for the higher ones', () => {
    // 1 GPU, thresholds 100,200. a runs to 250 GPU-s (Q2) before b arrives; b runs, crosses 100 at
    // 350 (Q1); c arrives at 400 (Q0) and preempts b; b (Q1) then runs before a (Q2).
    const r = run('1xA100-40GB', [job('a', 0, 400), job('b', 250, 200), job('c', 400, 10)], tiresiasPolicy([100, 200]));
    // c: 400-410; b: 250-400 then 410-460; a: 0-250 then 460-610.
    expect(r.jcts).toEqual([610, 210, 10]);
  });

  it('never reads a job\'s length and decides the same blindfolded', () => {
    const random = createRandom(3);
    const jobs = Array.from({ length: 200 }, (_, i) => job(`j${i}`, Math.floor(random() * 5000), 1 + Math.floor(random() * 3000), random() < 0.2 ? 1 + Math.floor(random() * 4) : 1));
    const open = run('6xA100-40GB', jobs, tiresiasPolicy([500, 1500]));
    const blind = run('6xA100-40GB', jobs, blindfolded(tiresiasPolicy([500, 1500])));
    expect(blind.metrics.completed).toBe(jobs.length);
    expect(blind.jcts).toEqual(open.jcts);
  });

  it('parses tiresias and tiresias:T1,T2,... and rejects bad thresholds', () => {
    expect(TIRESIAS_THRESHOLDS).toEqual([3250, 7200]);
    expect(parsePolicy('tiresias').name).toBe('tiresias');
    expect(parsePolicy('Tiresias:100,200').name).toBe('Tiresias:100,200');
    expect(splitPolicyList('tiresias:3250,7200, exclusive,static:7x1g.5gb')).toEqual(['tiresias:3250,7200', 'exclusive', 'static:7x1g.5gb']);
    expect(parsePolicies('exclusive,tiresias:100,200').map((p) => p.name)).toEqual(['exclusive', 'tiresias:100,200']);
    // The thresholds given are the ones used: with 100 the second job preempts the first, with 1000 not.
    const jobs = [job('a', 0, 300), job('b', 150, 50)];
    expect(run('1xA100-40GB', jobs, parsePolicy('tiresias:100')).jcts).toEqual([350, 50]);
    expect(run('1xA100-40GB', jobs, parsePolicy('tiresias:1000')).jcts).toEqual([300, 200]);
    for (const bad of ['tiresias:', 'tiresias:200,100', 'tiresias:0', 'tiresias:abc', 'tiresias:100,100']) {
      let err: unknown;
      try {
        parsePolicy(bad);
      } catch (e) {
        err = e;
      }
      expect(err, bad).toBeInstanceOf(MigpoolError);
      expect((err as MigpoolError).code).toBe('BAD_INPUT');
      expect((err as Error).message, bad).toContain('tiresias:3250,7200');
    }
  });
});
