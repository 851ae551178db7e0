import { describe, expect, it } from 'vitest';
import { parseJobSpec } from './job-spec.js';

const base = { name: 'j', command: ['true'] };
const refusal = (extra: Record<string, unknown>): string => {
  try {
    parseJobSpec({ ...base, ...extra });
  } catch (e) {
    return (e as Error).message;
  }
  return 'accepted';
};

describe('job spec amounts and durations', () => {
  // Found on the live service: `maxRuntime: 0s` was queued and then failed at launch with the
  // executor's words ('maxRuntimeSeconds 0 must be a positive number'); `memory: 0GiB` was queued.
  it('refuses zero written with a unit as it refuses the number 0, naming the field', () => {
    expect(refusal({ maxRuntime: '0s' })).toBe('job spec: maxRuntime: expected a duration greater than 0, such as 30m or 2h');
    expect(refusal({ maxRuntime: 0 })).toMatch(/^job spec: maxRuntime: /);
    expect(refusal({ estimatedSeconds: '0m' })).toBe('job spec: estimatedSeconds: expected a duration greater than 0, such as 30m or 2h');
    expect(refusal({ resources: { memory: '0GiB' } })).toBe('job spec: resources.memory: expected an amount greater than 0, such as 8GiB or 512MiB');
    expect(refusal({ resources: { memory: '0 MiB' } })).toMatch(/^job spec: resources.memory: expected an amount greater than 0/);
  });

  it('keeps what is meant: a grace period of 0 s, and amounts and durations with units', () => {
    expect(parseJobSpec({ ...base, killGracePeriod: '0s' }).killGracePeriod).toBe(0);
    expect(parseJobSpec({ ...base, killGracePeriod: 0 }).killGracePeriod).toBe(0);
    const spec = parseJobSpec({ ...base, maxRuntime: '2h', estimatedSeconds: '30m', resources: { memory: '512MiB' } });
    expect([spec.maxRuntime, spec.estimatedSeconds, spec.resources.memory]).toEqual([7200, 1800, 0.5]);
  });
});
