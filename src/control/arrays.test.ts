import { describe, expect, it } from 'vitest';
import { MigpoolError } from '../errors.js';
import { parseJobSpec } from '../jobs/job-spec.js';
import { ARRAY_INDEX_ENV, expandArrays, parseArrayRange } from './arrays.js';

const where = (i: number) => `job spec ${i + 1}`;

function failure(f: () => unknown): MigpoolError {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(MigpoolError);
    return e as MigpoolError;
  }
  throw new Error('expected a failure');
}

describe('array ranges', () => {
  it('reads A-B%N, A-B and A', () => {
    expect(parseArrayRange('0-99%8', 'array')).toEqual({ first: 0, last: 99, maxRunning: 8 });
    expect(parseArrayRange('5-7', 'array')).toEqual({ first: 5, last: 7, maxRunning: null });
    expect(parseArrayRange('3', 'array')).toEqual({ first: 3, last: 3, maxRunning: null });
  });

  it('refuses a backwards range, a %0 limit, too many jobs and junk, naming the input', () => {
    expect(failure(() => parseArrayRange('9-2', '--array')).message).toBe("--array '9-2': the range ends before it starts; write it low-high, e.g. 0-99");
    expect(failure(() => parseArrayRange('0-9%0', '--array')).message).toContain('%0 would never run a job');
    expect(failure(() => parseArrayRange('0-10000', '--array')).message).toContain('10001 jobs is more than 10000');
    expect(failure(() => parseArrayRange('a-b', '--array')).code).toBe('BAD_INPUT');
  });
});

describe('expandArrays', () => {
  it('makes one job per index, each with its index in the env and the array, one id per array', () => {
    const plain = parseJobSpec({ name: 'one', command: ['true'] });
    const arr = parseJobSpec({ name: 'sweep', command: ['python', 'train.py'], env: { SEED: '1' }, array: '2-4%2' });
    let n = 0;
    const out = expandArrays([plain, arr, arr], where, () => `a${++n}`);
    expect(out).toHaveLength(7);
    expect(out[0]).toBe(plain);
    expect(out.slice(1, 4).map((s) => s.env)).toEqual([2, 3, 4].map((i) => ({ SEED: '1', [ARRAY_INDEX_ENV]: String(i) })));
    expect(out.slice(1, 4).map((s) => s.array)).toEqual([2, 3, 4].map((index) => ({ id: 'a1', index, maxRunning: 2, range: '2-4%2' })));
    expect(out.slice(4).every((s) => typeof s.array === 'object' && s.array.id === 'a2')).toBe(true);
  });

  it('refuses an array member object from a user: the service sets ids and indices', () => {
    const forged = parseJobSpec({ name: 'x', command: ['true'], array: { id: 'someone-else', index: 0, maxRunning: 1, range: '0' } });
    const e = failure(() => expandArrays([forged], where));
    expect(e.message).toBe("job spec 1: array: give a range such as 0-99%8; the service sets the array's id and indices itself");
  });
});
