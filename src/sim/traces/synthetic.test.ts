import { describe, expect, it } from 'vitest';
import { createRandom } from '../../random.js';
import { parseMix } from './mix.js';
import { DEFAULT_DURATIONS, meanJobGpuSeconds, syntheticTrace } from './synthetic.js';

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? Number.NaN;
};

describe('syntheticTrace', () => {
  const jobs = syntheticTrace({ jobs: 5000, arrivalRatePerHour: 120, random: createRandom(11) });

  it('makes the jobs asked for, in arrival order from 0, with ids syn-1..', () => {
    expect(jobs).toHaveLength(5000);
    expect(jobs[0]).toMatchObject({ id: 'syn-1', arrival: 0, priority: 'foreground', memoryGiB: null, profile: null });
    expect(jobs[4999]?.id).toBe('syn-5000');
    expect(jobs.every((j, i) => i === 0 || j.arrival >= jobs[i - 1]!.arrival)).toBe(true);
  });

  it('arrives as a Poisson process at the rate asked for', () => {
    const last = jobs[jobs.length - 1]!.arrival;
    expect(last / (jobs.length - 1)).toBeGreaterThan(30 * 0.93);
    expect(last / (jobs.length - 1)).toBeLessThan(30 * 1.07);
  });

  it('draws lognormal durations around the median, clamped', () => {
    const works = jobs.map((j) => j.work);
    expect(median(works)).toBeGreaterThan(DEFAULT_DURATIONS.medianSeconds * 0.9);
    expect(median(works)).toBeLessThan(DEFAULT_DURATIONS.medianSeconds * 1.1);
    expect(Math.min(...works)).toBeGreaterThanOrEqual(DEFAULT_DURATIONS.minSeconds);
    expect(Math.max(...works)).toBeLessThanOrEqual(DEFAULT_DURATIONS.maxSeconds);
  });

  it('asks for 2, 4 or 8 GPUs for about 7% of jobs, running large', () => {
    const multi = jobs.filter((j) => j.gpus > 1);
    expect(multi.length / jobs.length).toBeCloseTo(0.07, 1);
    expect(new Set(multi.map((j) => j.gpus))).toEqual(new Set([2, 4, 8]));
    expect(multi.every((j) => j.workload.name === 'resnet152-imagenet')).toBe(true);
  });

  it('puts the background share in the background and leaves the other draws alone', () => {
    const base = syntheticTrace({ jobs: 2000, arrivalRatePerHour: 60, random: createRandom(4) });
    const bg = syntheticTrace({ jobs: 2000, arrivalRatePerHour: 60, backgroundShare: 0.3, random: createRandom(4) });
    expect(bg.filter((j) => j.priority === 'background').length / bg.length).toBeCloseTo(0.3, 1);
    expect(bg.map((j) => [j.arrival, j.work, j.gpus, j.workload.name])).toEqual(base.map((j) => [j.arrival, j.work, j.gpus, j.workload.name]));
  });

  it('follows the mix and the seed', () => {
    const smalls = syntheticTrace({ jobs: 100, arrivalRatePerHour: 60, multiGpuShare: 0, mix: parseMix('small=1'), random: createRandom(1) });
    expect(smalls.every((j) => j.workload.name === 'resnet26-cifar10' && j.gpus === 1)).toBe(true);
    const again = syntheticTrace({ jobs: 5000, arrivalRatePerHour: 120, random: createRandom(11) });
    expect(again).toEqual(jobs);
    expect(syntheticTrace({ jobs: 50, arrivalRatePerHour: 120, random: createRandom(12) })).not.toEqual(jobs.slice(0, 50));
  });

  it('estimates the mean GPU-seconds of a job', () => {
    const d = { medianSeconds: 100, sigma: 0, minSeconds: 1, maxSeconds: 1000 };
    expect(meanJobGpuSeconds({ durations: d, multiGpuShare: 0.5, multiGpuSizes: [4] })).toBeCloseTo(250);
  });

  it('rejects bad parameters', () => {
    const random = createRandom(1);
    expect(() => syntheticTrace({ jobs: 0, arrivalRatePerHour: 1, random })).toThrow('positive whole number of jobs');
    expect(() => syntheticTrace({ jobs: 1, arrivalRatePerHour: -1, random })).toThrow('arrival rate');
    expect(() => syntheticTrace({ jobs: 1, arrivalRatePerHour: 1, backgroundShare: 2, random })).toThrow('background share');
  });
});
