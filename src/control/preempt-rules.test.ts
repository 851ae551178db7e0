import { describe, expect, it } from 'vitest';
import { MAX_PREEMPTIONS_PER_JOB, preemptRefusal, repartitionBackoffMs } from './preempt-rules.js';

describe('the preemption contract', () => {
  const started = 1_000_000;
  it('refuses a job that is not preemptible, whatever else holds', () => {
    expect(preemptRefusal({ startedAt: started, preemptions: 0 }, false, started + 3_600_000, null)).toMatch(/does not allow/);
  });
  it('refuses before the minimum run time, allows after it', () => {
    expect(preemptRefusal({ startedAt: started, preemptions: 0 }, true, started + 10_000, null)).toMatch(/run 10 s/);
    expect(preemptRefusal({ startedAt: started, preemptions: 0 }, true, started + 61_000, null)).toBeNull();
  });
  it('caps preemptions per job and refuses while its GPU backs off', () => {
    expect(preemptRefusal({ startedAt: started, preemptions: MAX_PREEMPTIONS_PER_JOB }, true, started + 61_000, null)).toMatch(/preempted 3 times/);
    expect(preemptRefusal({ startedAt: started, preemptions: 0 }, true, started + 61_000, 4000)).toMatch(/failing/);
  });
  it('backs off exponentially, capped', () => {
    expect([1, 2, 3, 4].map(repartitionBackoffMs)).toEqual([5000, 10_000, 20_000, 40_000]);
    expect(repartitionBackoffMs(100)).toBe(600_000);
  });
});
