import { describe, expect, it } from 'vitest';
import { MigpoolError } from '../errors.js';
import { parsePolicies, parsePolicy, POLICY_NAMES } from './registry.js';

function message(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(MigpoolError);
    expect((e as MigpoolError).code).toBe('BAD_INPUT');
    return (e as Error).message;
  }
  throw new Error('did not throw');
}

describe('parsePolicy', () => {
  it('knows every policy and keeps the name as given', () => {
    for (const name of ['exclusive', 'timeslice:2', 'mps:4', 'static:7x1g.5gb', 'static:3g.20gb+2g.10gb+1g.5gb+1g.5gb', 'miso', 'migpool', 'Timeslice:3', 'tiresias', 'tiresias:100,200', 'gavel', 'gavel:60']) {
      expect(parsePolicy(name).name).toBe(name);
    }
    expect(parsePolicies('exclusive, timeslice:2').map((p) => p.name)).toEqual(['exclusive', 'timeslice:2']);
    expect(POLICY_NAMES).toContain('static:LAYOUT');
    expect(POLICY_NAMES).toEqual(expect.arrayContaining(['tiresias[:T1,T2,...]', 'gavel[:SECONDS]']));
  });

  it('rejects unknown names and bad arguments, listing the valid ones', () => {
    expect(message(() => parsePolicy('fifo'))).toContain('exclusive, timeslice:N, mps:N, static:LAYOUT, miso, migpool');
    expect(message(() => parsePolicy('timeslice'))).toContain('timeslice:2');
    expect(message(() => parsePolicy('mps:0'))).toContain('from 1 to');
    expect(message(() => parsePolicy('mps:1.5'))).toContain('from 1 to');
    expect(message(() => parsePolicy('static:'))).toContain('needs a layout');
    expect(message(() => parsePolicy('static:7x1g.7gb'))).toContain("no catalogued GPU offers profile '1g.7gb'");
    expect(message(() => parsePolicy('exclusive:2'))).toContain('takes no argument');
    expect(message(() => parsePolicies(' , '))).toContain('no policy given');
  });
});
