import { describe, expect, it } from 'vitest';
import { runChaosSoak } from '../bench/chaos-soak.js';

/**
 * A small chaos soak (bench/chaos-soak.ts) of the built `migpool serve` on simulated GPUs: a mix
 * of jobs, cancels and preemptions, SIGKILLs of the service (one right after a submit, one during
 * a re-partition when one comes), GPU faults injected while it is down, then a drain and the
 * invariants: every job ends once, as expected; no attempt twice or two at once; nothing of a job
 * still runs; the GPUs agree with the store; stderr holds one-line messages only.
 * `node dist/bench/chaos-soak.js --jobs 300 --kills 15 --faults 10` is the long run.
 */
describe('migpool serve under chaos', () => {
  it('keeps every invariant through kills, faults, cancels and preemptions (seed 7)', { timeout: 150_000 }, async () => {
    const report = await runChaosSoak({ seed: 7, jobs: 24, kills: 5, everyKillKind: true, faults: 4, sleepMs: [300, 1500], gapMs: [30, 200], drainMs: 60_000 });
    const summary = JSON.stringify({ ...report, startRssKiB: undefined, endRssKiB: undefined });
    expect(report.violations, `seed ${report.seed}, data and logs kept in ${report.dir}`).toEqual([]);
    expect(report.jobs).toBe(24);
    // Each kind of kill happened: the 5, a second one for the kill at start-up, the last one after
    // every submission and the one at the end (and up to two while the queue drains); faults were met.
    expect(report.kills, summary).toBeGreaterThanOrEqual(8);
    expect(report.killsAfterSubmit, summary).toBe(1);
    expect(report.killsAtStart, summary).toBe(1);
    expect(report.faultsMet, summary).toBeGreaterThan(0);
    expect(Object.values(report.states).reduce((a, b) => a + b, 0)).toBe(24);
  });
});
