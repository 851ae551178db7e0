import { describe, expect, it } from 'vitest';
import { createRandom } from '../../random.js';
import { DEFAULT_MIX_SPEC, drawWorkload, formatMix, parseMix } from './mix.js';

describe('parseMix', () => {
  it('reads workloads by alias and normalises the weights', () => {
    expect(formatMix(parseMix(DEFAULT_MIX_SPEC))).toBe('resnet26-cifar10=0.6,resnet50-imagenet64=0.3,resnet152-imagenet=0.1');
    expect(formatMix(parseMix(' small = 6 , bert-base-squad=2 '))).toBe('resnet26-cifar10=0.75,bert-base-squad=0.25');
  });

  it.each([
    ['', 'is empty'],
    ['small', "'small' is not WORKLOAD=WEIGHT"],
    ['small=x', 'the weight must be a non-negative number'],
    ['small=-1', 'the weight must be a non-negative number'],
    ['tiny=1', "unknown workload 'tiny'"],
    ['small=1,resnet26-cifar10=1', 'appears twice'],
    ['small=0,large=0', 'all zero'],
  ])('rejects %j', (spec, message) => {
    expect(() => parseMix(spec)).toThrow(message);
  });
});

describe('drawWorkload', () => {
  it('draws each workload about its share of the time, one number per draw', () => {
    const mix = parseMix('small=0.5,medium=0.25,large=0.25');
    const random = createRandom(9);
    const counts = new Map<string, number>();
    for (let i = 0; i < 4000; i++) {
      const w = drawWorkload(mix, random).name;
      counts.set(w, (counts.get(w) ?? 0) + 1);
    }
    expect((counts.get('resnet26-cifar10') ?? 0) / 4000).toBeCloseTo(0.5, 1);
    expect((counts.get('resnet152-imagenet') ?? 0) / 4000).toBeCloseTo(0.25, 1);
    expect(drawWorkload(mix, () => 0.99999).name).toBe('resnet152-imagenet');
  });
});
