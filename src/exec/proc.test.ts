import { describe, expect, it } from 'vitest';
import { isSameLiveProcess, parseProcStat, readProcStat } from './proc.js';

const tail = '0 -1 4194304 100 0 0 0 0 0 0 0 20 0 1 0 807547 3133440 379 18446744073709551615';

describe('parseProcStat', () => {
  it('reads state, process group, session and start ticks', () => {
    expect(parseProcStat(`11650 (cat) R 11643 11643 10897 ${tail}\n`)).toEqual({ pid: 11650, state: 'R', pgrp: 11643, session: 10897, startTicks: '807547' });
  });

  it('counts fields from the last parenthesis: command names may hold blanks and parentheses', () => {
    expect(parseProcStat(`42 (a) b (c) ) S 1 77 77 ${tail}`)).toEqual({ pid: 42, state: 'S', pgrp: 77, session: 77, startTicks: '807547' });
  });

  it('returns null for text that is not a stat line', () => {
    expect(parseProcStat('')).toBeNull();
    expect(parseProcStat('12 (x) S 1 2')).toBeNull();
  });
});

describe('readProcStat and isSameLiveProcess', () => {
  it('knows this process, and not a different start time or a pid that does not exist', () => {
    const own = readProcStat(process.pid);
    expect(own?.pid).toBe(process.pid);
    expect(isSameLiveProcess(process.pid, own?.startTicks ?? '')).toBe(true);
    expect(isSameLiveProcess(process.pid, '1')).toBe(false);
    expect(readProcStat(2 ** 22 + 17)).toBeNull();
    expect(readProcStat(-1)).toBeNull();
  });
});
