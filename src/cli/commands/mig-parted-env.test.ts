import { describe, expect, it } from 'vitest';
import { boolFlag, stringFlag } from './mig-parted-env.js';

describe("mig-parted's environment variables (urfave/cli v3, strconv.ParseBool)", () => {
  it('reads booleans as Go does: a given flag wins, empty is false, nonsense is bad input', () => {
    for (const v of ['1', 't', 'T', 'TRUE', 'true', 'True']) expect(boolFlag(undefined, 'X', { X: v })).toBe(true);
    for (const v of ['0', 'f', 'F', 'FALSE', 'false', 'False', '']) expect(boolFlag(undefined, 'X', { X: v })).toBe(false);
    expect(boolFlag(true, 'X', { X: 'false' })).toBe(true);
    expect(boolFlag(undefined, 'X', {})).toBe(false);
    expect(() => boolFlag(undefined, 'MIG_PARTED_SKIP_RESET', { MIG_PARTED_SKIP_RESET: 'yes' })).toThrow("MIG_PARTED_SKIP_RESET='yes' is not a boolean");
  });

  it('reads strings: the flag, else the variable (even empty), else the default', () => {
    expect(stringFlag('a', 'X', 'd', { X: 'b' })).toBe('a');
    expect(stringFlag(undefined, 'X', 'd', { X: 'b' })).toBe('b');
    expect(stringFlag(undefined, 'X', 'd', { X: '' })).toBe('');
    expect(stringFlag(undefined, 'X', 'd', {})).toBe('d');
  });
});
