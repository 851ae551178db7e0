import { describe, expect, it } from 'vitest';
import { durationText } from './duration-text.js';

describe('durationText', () => {
  it('writes table figures in the largest unit the value reaches', () => {
    expect(durationText(0)).toBe('0 s');
    expect(durationText(45.4)).toBe('45 s');
    expect(durationText(59.4)).toBe('59 s');
    expect(durationText(60)).toBe('1.0 min');
    expect(durationText(738)).toBe('12.3 min');
    expect(durationText(3600)).toBe('1.00 h');
    expect(durationText(9000)).toBe('2.50 h');
    expect(durationText(86_400)).toBe('1.00 d');
    expect(durationText(267_840)).toBe('3.10 d');
  });

  it('writes - for a figure that is not a number of seconds', () => {
    expect(durationText(Number.NaN)).toBe('-');
    expect(durationText(Number.POSITIVE_INFINITY)).toBe('-');
    expect(durationText(Number.NaN, { rough: true })).toBe('-');
  });

  it('takes the unit from unitOf, so that a spread reads in its mean\'s unit', () => {
    expect(durationText(360, { unitOf: 9000 })).toBe('0.10 h');
    expect(durationText(30, { unitOf: 100_000 })).toBe('0.00 d');
    expect(durationText(7200, { unitOf: 30 })).toBe('7200 s');
    expect(durationText(-120)).toBe('-2.0 min');
  });

  it('says a wait roughly: whole minutes, one decimal of an hour, never 0 s, no days', () => {
    expect(durationText(0.2, { rough: true })).toBe('1 s');
    expect(durationText(44.6, { rough: true })).toBe('45 s');
    expect(durationText(1000, { rough: true })).toBe('17 min');
    expect(durationText(9000, { rough: true })).toBe('2.5 h');
    expect(durationText(200_000, { rough: true })).toBe('55.6 h');
  });
});
