import { describe, expect, it } from 'vitest';
import { MigpoolError } from '../../errors.js';
import { resolveWorkload } from '../../perf/workloads.js';
import { simulate } from '../../sim/engine.js';
import { parseFleet } from '../../sim/fleet.js';
import { parsePolicy, POLICY_NAMES } from '../registry.js';
import type { Decision, Policy, ScalingModel } from '../types.js';
import type { TraceJob } from '../../sim/types.js';
import { deeppoolPolicy } from './deeppool.js';
import { dpPolicy } from './dp.js';

const small = resolveWorkload('small');

/**
 * A scaling model with round numbers: data-parallel on N GPUs does N/2 GPUs' worth of work; burst
 * does 1.5 alone and 1.4 beside background jobs, and offers every GPU but the first half a GPU.
 */
export const STUB_SCALING: ScalingModel = {
  run: (_job, gpus, parallelism) =>
    parallelism === 'data-parallel'
      ? { soloSpeed: gpus / 2, sharedSpeed: gpus / 2, backgroundShare: () => 0 }
      : { soloSpeed: 1.5, sharedSpeed: 1.4, backgroundShare: (rank) => (rank === 0 ? 0 : 0.5) },
};

export function fg(id: string, gpus: number, work: number, arrival = 0): TraceJob {
  return { id, workload: small, gpus, priority: 'foreground', arrival, work, memoryGiB: null, profile: null, strongScaling: { model: 'm', globalBatch: 64 } };
}

export function bg(id: string, work: number, arrival = 0): TraceJob {
  return { id, workload: small, gpus: 1, priority: 'background', arrival, work, memoryGiB: null, profile: null };
}

/** Completion time of each job by id. */
function completions(jobs: readonly TraceJob[], jcts: readonly number[]): Record<string, number> {
  return Object.fromEntries(jobs.map((j, i) => [j.id, (jcts[i] as number) + j.arrival]));
}

describe('deeppool policy in the simulator', () => {
  const jobs = [fg('F', 4, 100), bg('B1', 10), bg('B2', 10), bg('B3', 10), bg('B4', 10)];

  it('runs the foreground burst-parallel and fills its idle GPUs with background jobs, the foreground at its shared speed meanwhile', () => {
    const r = simulate({ fleet: parseFleet('4xA100-SXM4-40GB'), jobs, policy: deeppoolPolicy(), seed: 1, scaling: STUB_SCALING });
    // B1-B3 fill ranks 1-3 at half speed (done at 20 s), B4 then fills one (done at 40 s); F runs
    // at 1.4 while any fill runs (56 of its 100 s of work by 40 s), then at 1.5: done at 40 + 44 / 1.5.
    const done = completions(jobs, r.jcts);
    expect(done['B1']).toBeCloseTo(20);
    expect(done['B3']).toBeCloseTo(20);
    expect(done['B4']).toBeCloseTo(40);
    expect(done['F']).toBeCloseTo(40 + 44 / 1.5);
    expect(r.workDone).toEqual({ foreground: 100, background: 40 });
  });

  it('stops the clock at untilSeconds and counts partial work', () => {
    const r = simulate({ fleet: parseFleet('4xA100-SXM4-40GB'), jobs, policy: deeppoolPolicy(), seed: 1, scaling: STUB_SCALING, untilSeconds: 30 });
    expect(r.metrics.makespanSeconds).toBe(30);
    expect(r.metrics.completed).toBe(3);
    expect(r.workDone!.foreground).toBeCloseTo(42);
    expect(r.workDone!.background).toBeCloseTo(35);
  });

  it('the dp baseline runs the foreground data-parallel (2 GPUs\' worth on 4) and the background after it', () => {
    const r = simulate({ fleet: parseFleet('4xA100-SXM4-40GB'), jobs, policy: dpPolicy(), seed: 1, scaling: STUB_SCALING });
    const done = completions(jobs, r.jcts);
    expect(done['F']).toBeCloseTo(50);
    expect(done['B1']).toBeCloseTo(60);
    expect(done['B4']).toBeCloseTo(60);
  });

  it('runs a foreground job data-parallel while another foreground job waits for GPUs, burst-parallel once none waits', () => {
    const two = [fg('F1', 4, 100), fg('F2', 4, 10)];
    const r = simulate({ fleet: parseFleet('4xA100-SXM4-40GB'), jobs: two, policy: deeppoolPolicy(), seed: 1, scaling: STUB_SCALING });
    const done = completions(two, r.jcts);
    // F1 data-parallel at 2 GPUs' worth while F2 waits (done at 50); F2 then alone, burst at 1.5.
    expect(done['F1']).toBeCloseTo(50);
    expect(done['F2']).toBeCloseTo(50 + 10 / 1.5);
  });

  it('a job filling a GPU keeps it alone, at full speed, when the burst job ends', () => {
    const two = [fg('F', 2, 3), bg('B', 10)];
    const r = simulate({ fleet: parseFleet('2xA100-SXM4-40GB'), jobs: two, policy: deeppoolPolicy(), seed: 1, scaling: STUB_SCALING });
    const done = completions(two, r.jcts);
    expect(done['F']).toBeCloseTo(3 / 1.4);
    expect(done['B']).toBeCloseTo(3 / 1.4 + (10 - (0.5 * 3) / 1.4));
  });

  it('preempts background jobs on whole GPUs for a foreground job (work kept), and behaves as dp without a scaling model', () => {
    const mixed = [bg('B1', 100), bg('B2', 100), fg('F', 2, 10, 5)];
    for (const policy of [deeppoolPolicy(), dpPolicy()]) {
      const r = simulate({ fleet: parseFleet('2xA100-SXM4-40GB'), jobs: mixed, policy, seed: 1 });
      const done = completions(mixed, r.jcts);
      // No scaling model: F runs at speed 1 on its two GPUs from t=5 to 15; B1, B2 resume after.
      expect(done['F']).toBeCloseTo(15);
      expect(done['B1']).toBeCloseTo(110);
    }
  });
});

describe('registry', () => {
  it('knows dp and deeppool, case-insensitively, without arguments', () => {
    expect(parsePolicy('DeepPool').name).toBe('DeepPool');
    expect(parsePolicy('dp').name).toBe('dp');
    expect(POLICY_NAMES).toContain('deeppool');
    expect(() => parsePolicy('dp:2')).toThrow('takes no argument');
  });
});

describe('the simulator checks strong-scaling decisions', () => {
  function once(decisions: Decision[]): Policy {
    let done = false;
    return {
      name: 'once',
      decide: () => {
        if (done) return [];
        done = true;
        return decisions;
      },
    };
  }
  function bugMessage(decisions: Decision[], scaling: ScalingModel | null = STUB_SCALING): string {
    try {
      simulate({ fleet: parseFleet('2xA100-SXM4-40GB'), jobs: [fg('F', 2, 10), bg('B', 10)], policy: once(decisions), seed: 1, ...(scaling ? { scaling } : {}) });
    } catch (e) {
      expect(e).toBeInstanceOf(MigpoolError);
      expect((e as MigpoolError).code).toBe('RUNTIME');
      return (e as Error).message;
    }
    throw new Error('did not throw');
  }
  const burst: Decision = { kind: 'start-on-gpus', job: 'F', gpus: [0, 1], sharing: 'exclusive', parallelism: 'burst' };

  it('refuses fills without a burst job, on its busiest GPU, twice on one GPU, and other jobs joining its GPUs', () => {
    expect(bugMessage([{ kind: 'start-on-gpus', job: 'B', gpus: [1], sharing: 'mps', fill: true }])).toContain('runs no burst-parallel job');
    expect(bugMessage([burst, { kind: 'start-on-gpus', job: 'B', gpus: [0], sharing: 'mps', fill: true }])).toContain('no idle time');
    expect(bugMessage([burst, { kind: 'start-on-gpus', job: 'B', gpus: [1], sharing: 'mps' }])).toContain('only a fill may join it');
    expect(bugMessage([burst, { kind: 'start-on-gpus', job: 'B', gpus: [1], sharing: 'exclusive', fill: true }])).toContain("shared 'mps'");
  });

  it('refuses burst parallelism without a scaling model or for a job without strongScaling', () => {
    expect(bugMessage([burst], null)).toContain('needs a scaling model');
    expect(bugMessage([{ kind: 'start-on-gpus', job: 'B', gpus: [1], sharing: 'exclusive', parallelism: 'burst' }])).toContain('jobs with strongScaling');
  });

  it('runs a strong-scaled job data-parallel under any policy that starts it exclusively, and at speed 1 without a scaling model', () => {
    const jobs = [fg('F', 2, 10)];
    const start: Decision = { kind: 'start-on-gpus', job: 'F', gpus: [0, 1], sharing: 'exclusive' };
    expect(simulate({ fleet: parseFleet('2xA100-SXM4-40GB'), jobs, policy: once([start]), seed: 1, scaling: STUB_SCALING }).jcts).toEqual([10]);
    const plain = simulate({ fleet: parseFleet('2xA100-SXM4-40GB'), jobs, policy: once([start]), seed: 1 });
    expect(plain.jcts).toEqual([10]);
    const four = [fg('F', 4, 10)];
    expect(simulate({ fleet: parseFleet('4xA100-SXM4-40GB'), jobs: four, policy: once([{ ...start, gpus: [0, 1, 2, 3] }]), seed: 1, scaling: STUB_SCALING }).jcts).toEqual([5]);
  });
});
