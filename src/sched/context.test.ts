import { describe, expect, it } from 'vitest';
import { resolveGpuModel } from '../mig/catalog/index.js';
import { resolveWorkload } from '../perf/workloads.js';
import { checkDecision, queueLookup } from './check.js';
import { createPolicyContext, fitsOn, memoryFit } from './context.js';
import { NO_HISTORY, type ClusterView, type JobSpec } from './types.js';

const A100 = resolveGpuModel('A100-SXM4-40GB');
const vit = resolveWorkload('deeppool-vit-b32');

function job(over: Partial<JobSpec> = {}): JobSpec {
  return { id: 'j', workload: vit, gpus: 1, priority: 'background', arrival: 0, estimate: null, memoryGiB: null, profile: null, ...over };
}

describe('memory fits of jobs whose memory is unknown', () => {
  it('the built-in DeepPool ViT workload has no memory figure (the premise of these tests)', () => {
    expect(vit.memoryGiB).toBeNull();
  });

  it('says unknown, not yes, for a job whose need is not known', () => {
    expect(memoryFit(job(), { kind: 'instance', model: A100, profile: '1g.5gb' })).toBe('unknown');
    expect(memoryFit(job({ memoryGiB: 4 }), { kind: 'instance', model: A100, profile: '1g.5gb' })).toBe('yes');
    expect(memoryFit(job({ memoryGiB: 6 }), { kind: 'instance', model: A100, profile: '1g.5gb' })).toBe('no');
    expect(memoryFit(job({ memoryGiB: 15 }), { kind: 'mps', model: A100, jobs: 3 })).toBe('no');
  });

  it('fits a whole GPU, but no slice and no shared GPU a policy would pick on a guess', () => {
    const ctx = createPolicyContext({ random: () => 0.5, reconfigureSeconds: 10 });
    expect(ctx.fits(job(), { kind: 'whole', model: A100 })).toBe(true);
    for (const profile of ['1g.5gb', '3g.20gb', '7g.40gb']) expect(ctx.fits(job(), { kind: 'instance', model: A100, profile })).toBe(false);
    expect(ctx.fits(job(), { kind: 'timeslice', model: A100, jobs: 2 })).toBe(false);
    expect(ctx.fits(job(), { kind: 'mps', model: A100, jobs: 4 })).toBe(false);
    expect(ctx.fits(job(), { kind: 'mps', model: A100, jobs: 1 })).toBe(true);
  });

  it('fits the slices its user allowed by naming a profile', () => {
    expect(fitsOn(job({ profile: '1g.5gb' }), { kind: 'instance', model: A100, profile: '1g.5gb' })).toBe(true);
    expect(fitsOn(job({ profile: '1g.5gb', exactProfile: true }), { kind: 'instance', model: A100, profile: '1g.5gb' })).toBe(true);
    // A memory request makes the need known: it decides alone.
    expect(fitsOn(job({ memoryGiB: 8 }), { kind: 'instance', model: A100, profile: '1g.5gb' })).toBe(false);
    expect(fitsOn(job({ memoryGiB: 8 }), { kind: 'instance', model: A100, profile: '2g.10gb' })).toBe(true);
  });

  it('the decision check refuses such a job on a slice it did not ask for, and takes it on one it did', () => {
    const view = (spec: JobSpec): ClusterView => ({
      now: 0,
      gpus: [
        {
          id: 0,
          model: A100,
          migEnabled: true,
          instances: [{ gpu: 0, profile: A100.giProfiles.find((p) => p.name === '3g.20gb')!, start: 0, size: 4, job: null }],
          wholeGpuJobs: [],
          sharing: 'exclusive',
          busyUntil: null,
        },
      ],
      queue: [spec],
      running: new Map(),
      history: () => NO_HISTORY,
    });
    const d = { kind: 'start-on-instance', job: 'j', gpu: 0, start: 0 } as const;
    const guessed = view(job());
    expect(checkDecision(guessed, d, queueLookup(guessed))).toMatch(/memory is unknown/);
    const asked = view(job({ profile: '3g.20gb' }));
    expect(checkDecision(asked, d, queueLookup(asked))).toBeNull();
  });
});
