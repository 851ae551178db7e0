import { describe, expect, it } from 'vitest';
import { resolveWorkload } from '../perf/workloads.js';
import type { Decision, Policy } from '../sched/types.js';
import type { TraceJob } from './types.js';
import { simulate } from './engine.js';
import { parseFleet } from './fleet.js';

const small = resolveWorkload('small');
const job = (id: string, arrival: number, work: number): TraceJob => ({ id, workload: small, gpus: 1, priority: 'foreground', arrival, work, memoryGiB: null, profile: null });

describe('policy wake-ups (Policy.wakeAt)', () => {
  it('calls the policy at the time it asked for, though nothing happens then', () => {
    // Starts nothing before t=40: it asks to be woken then; with no wake-up the job would never run.
    const calls: number[] = [];
    const policy: Policy = {
      name: 'late',
      decide(view): Decision[] {
        calls.push(view.now);
        const j = view.queue[0];
        return view.now >= 40 && j ? [{ kind: 'start-on-gpus', job: j.id, gpus: [0], sharing: 'exclusive' }] : [];
      },
      wakeAt: (view) => (view.now < 40 ? 40 : null),
    };
    const r = simulate({ fleet: parseFleet('1xA100-40GB'), jobs: [job('a', 5, 10)], policy, seed: 1 });
    expect(r.jcts).toEqual([45]);
    expect(calls).toEqual([0, 5, 40, 50]);
  });

  it('ends when nothing is queued or running, whatever the policy asks', () => {
    const policy: Policy = {
      name: 'restless',
      decide: (view) => (view.queue[0] ? [{ kind: 'start-on-gpus', job: view.queue[0].id, gpus: [0], sharing: 'exclusive' }] : []),
      wakeAt: (view) => view.now + 1,
    };
    const r = simulate({ fleet: parseFleet('1xA100-40GB'), jobs: [job('a', 0, 10)], policy, seed: 1 });
    expect(r.jcts).toEqual([10]);
    expect(r.metrics.makespanSeconds).toBe(10);
  });
});
