import { describe, expect, it } from 'vitest';
import { resolveGpuModel } from '../mig/catalog/index.js';
import { fitsOn } from './fits.js';
import { parseWorkloadYaml } from './user-workload.js';
import { isWorkloadFile, resolveWorkloadRef } from './workload-ref.js';

const A100 = resolveGpuModel('A100-SXM4-40GB');

describe('fitsOn', () => {
  it('compares the need with the instance, or with the GPU for all N sharing jobs', () => {
    expect(fitsOn(4.5, { kind: 'mig', gpu: A100, profile: '1g.5gb' })).toBe(true);
    expect(fitsOn(5, { kind: 'mig', gpu: A100, profile: '1g.5gb' })).toBe(false);
    expect(fitsOn(13, { kind: 'mps', gpu: A100, jobs: 3 })).toBe(true);
    expect(fitsOn(14, { kind: 'timeslice', gpu: A100, jobs: 3 })).toBe(false);
  });

  it("answers 'unknown', never true, when the job's memory is unknown", () => {
    expect(fitsOn(null, { kind: 'mig', gpu: A100, profile: '7g.40gb' })).toBe('unknown');
    expect(fitsOn(null, { kind: 'full', gpu: A100 })).toBe('unknown');
  });
});

describe('resolveWorkloadRef', () => {
  const yaml = 'name: mine\nbatchSize: 32\ndatasetSize: 100\nmemoryGiB: 2\ncurve: { latencyMs: 5, peakSamplesPerMs: 10, sharpness: 2 }\n';
  it('reads a .yaml/.yml file through the reader it is given, and a name from the built-ins', () => {
    const read = (p: string) => {
      if (p !== 'w/mine.yml') throw new Error(`unexpected ${p}`);
      return yaml;
    };
    expect(resolveWorkloadRef('w/mine.yml', read)).toEqual(parseWorkloadYaml(yaml, 'w/mine.yml'));
    expect(resolveWorkloadRef('small', read).name).toBe('resnet26-cifar10');
    expect(isWorkloadFile('x.YAML')).toBe(true);
    expect(isWorkloadFile('small')).toBe(false);
  });

  it('refuses an empty name with the fix', () => {
    expect(() => resolveWorkloadRef('  ', () => '')).toThrow(/the workload is empty/);
  });
});
