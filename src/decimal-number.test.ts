import { describe, expect, it } from 'vitest';
import { decimalValue, parseDecimal } from './decimal-number.js';

describe('decimal numbers', () => {
  it('read decimal notation only', () => {
    expect(['2', '0.5', '.5', '3.', '-1', '+4', '1e3', '2.5E-1', ' 7 '].map(decimalValue)).toEqual([2, 0.5, 0.5, 3, -1, 4, 1000, 0.25, 7]);
    expect(['0x10', '0b11', '0o7', 'Infinity', '', ' ', '1,5', '1e', 'e3', '1_000'].map(decimalValue)).toEqual(Array(10).fill(NaN));
    expect(decimalValue('1e400')).toBe(Infinity);
  });

  it('say which flag and text are wrong, and how', () => {
    expect(parseDecimal('1.1', '--x')).toBe(1.1);
    expect(() => parseDecimal('0x2', '--mps-slowdown-bound')).toThrow("--mps-slowdown-bound '0x2' is not a number: give a decimal such as 2 or 0.5");
    expect(() => parseDecimal('1e400', '--weight')).toThrow("--weight '1e400' is too large");
  });
});
