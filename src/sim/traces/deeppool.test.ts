import { describe, expect, it } from 'vitest';
import { createRandom } from '../../random.js';
import { deepPoolTrace, meanDeepPoolJobGpuSeconds } from './deeppool.js';

describe('deepPoolTrace', () => {
  const jobs = deepPoolTrace({ jobs: 4000, fleetGpus: 64, arrivalRatePerHour: 100, random: createRandom(5) });

  it('makes strong-scaled foreground jobs on 8..64 GPUs (a tenth of the jobs) and single-GPU background jobs', () => {
    const fg = jobs.filter((j) => j.priority === 'foreground');
    expect(fg.length / jobs.length).toBeCloseTo(0.1, 1);
    expect(new Set(fg.map((j) => j.gpus))).toEqual(new Set([8, 16, 32, 64]));
    expect(new Set(fg.map((j) => j.strongScaling?.model))).toEqual(new Set(['vgg16', 'wrn101-2', 'inception-v3']));
    expect(fg.every((j) => j.strongScaling?.globalBatch === 1024)).toBe(true);
    const bg = jobs.filter((j) => j.priority === 'background');
    expect(bg.every((j) => j.gpus === 1 && j.strongScaling === undefined)).toBe(true);
    expect(jobs[0]!.id).toBe('dp-1');
  });

  it('is reproducible and keeps sizes within small fleets', () => {
    expect(deepPoolTrace({ jobs: 50, fleetGpus: 64, arrivalRatePerHour: 100, random: createRandom(5) })).toEqual(jobs.slice(0, 50));
    const four = deepPoolTrace({ jobs: 500, fleetGpus: 4, arrivalRatePerHour: 100, random: createRandom(2) });
    expect(Math.max(...four.map((j) => j.gpus))).toBeLessThanOrEqual(4);
    expect(meanDeepPoolJobGpuSeconds(1)).toBeGreaterThan(0);
  });

  it('refuses bad options', () => {
    expect(() => deepPoolTrace({ jobs: 0, fleetGpus: 8, arrivalRatePerHour: 1, random: createRandom(1) })).toThrow('positive whole number of jobs');
    expect(() => deepPoolTrace({ jobs: 1, fleetGpus: 8, arrivalRatePerHour: 1, foregroundShare: 2, random: createRandom(1) })).toThrow('between 0 and 1');
  });
});
