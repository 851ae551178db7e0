import { describe, expect, it } from 'vitest';
import { MigpoolError } from '../errors.js';
import { parseFleet } from './fleet.js';

function code(f: () => unknown): string | null {
  try {
    f();
    return null;
  } catch (e) {
    return e instanceof MigpoolError ? e.code : 'OTHER';
  }
}

describe('parseFleet', () => {
  it('reads one model', () => {
    const fleet = parseFleet('2048xA100-SXM4-40GB');
    expect(fleet.gpus).toHaveLength(2048);
    expect(fleet.gpus[0]?.name).toBe('A100-40GB');
    expect(fleet.spec).toBe('2048xA100-SXM4-40GB');
  });

  it('reads mixed fleets in term order', () => {
    const fleet = parseFleet('64xA100-40GB, 16xH100-80GB');
    expect(fleet.gpus).toHaveLength(80);
    expect(fleet.gpus[63]?.name).toBe('A100-40GB');
    expect(fleet.gpus[64]?.name).toBe('H100-80GB');
  });

  it('rejects bad input with one line', () => {
    for (const bad of ['', 'A100', '0xA100-40GB', 'x A100', '3xNOPE', '2xA100-40GB,', '100001xA100-40GB', '60000xA100-40GB,60000xA100-40GB', '1.5xA100-40GB']) {
      expect(code(() => parseFleet(bad)), bad).toBe('BAD_INPUT');
    }
    try {
      parseFleet('3xNOPE');
    } catch (e) {
      expect((e as Error).message).not.toContain('\n');
      expect((e as Error).message).toContain('3xNOPE');
    }
  });

  it('accepts the maximum', () => {
    expect(parseFleet('100000xA100-40GB').gpus).toHaveLength(100_000);
  });
});
