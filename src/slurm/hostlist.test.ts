import { describe, expect, it } from 'vitest';
import { MigpoolError } from '../errors.js';
import { compressHostlist, expandHostlist } from './hostlist.js';

describe('Slurm host lists', () => {
  it('expands ranges, lists, zero padding, several brackets and bare port ranges', () => {
    expect(expandHostlist('gpu[01-04]')).toEqual(['gpu01', 'gpu02', 'gpu03', 'gpu04']);
    expect(expandHostlist('gpu[01-02,07],login1')).toEqual(['gpu01', 'gpu02', 'gpu07', 'login1']);
    expect(expandHostlist('r[1-2]-n[8-9]')).toEqual(['r1-n8', 'r1-n9', 'r2-n8', 'r2-n9']);
    expect(expandHostlist('[6818-6819]')).toEqual(['6818', '6819']);
    expect(expandHostlist('node7')).toEqual(['node7']);
  });

  it('folds names back into runs', () => {
    expect(compressHostlist(['gpu02', 'gpu03', 'gpu04'])).toBe('gpu[02-04]');
    expect(compressHostlist(['gpu01', 'gpu03', 'gpu04', 'login'])).toBe('gpu[01,03-04],login');
    expect(compressHostlist(['gpu9'])).toBe('gpu9');
    expect(expandHostlist(compressHostlist(expandHostlist('a[001-003,010]b')))).toEqual(['a001b', 'a002b', 'a003b', 'a010b']);
  });

  it('refuses what is not a host list', () => {
    expect(() => expandHostlist('gpu[01-', 'slurm.conf:3')).toThrow(MigpoolError);
    expect(() => expandHostlist('gpu[a-b]')).toThrow(/not a number or a range/);
  });
});
