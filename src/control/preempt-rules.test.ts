import { describe, expect, it } from 'vitest';
import { failuresInARow, MAX_PREEMPTIONS_PER_JOB, preemptRefusal, REPARTITION_STREAK_MS, repartitionBackoffMs } from './preempt-rules.js';

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
  it('counts failures in a row through successes between them, and starts again after a quiet spell', () => {
    expect(failuresInARow(undefined, 50_000)).toBe(1);
    // The GPU's third failure backed off until t = 100 s; a success at 101 s does not reset the run.
    expect(failuresInARow({ count: 3, until: 100_000 }, 106_000)).toBe(4);
    expect(failuresInARow({ count: 3, until: 100_000 }, 100_000 + REPARTITION_STREAK_MS)).toBe(4);
    expect(failuresInARow({ count: 3, until: 100_000 }, 100_001 + REPARTITION_STREAK_MS)).toBe(1);
  });
});
