import { describe, expect, it } from 'vitest';
import { MigpoolError } from '../errors.js';
import { resolveWorkload } from '../perf/workloads.js';
import type { TraceJob } from './types.js';
import { assignUsers, parseUsersSpec } from './users-spec.js';

function message(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(MigpoolError);
    expect((e as MigpoolError).code).toBe('BAD_INPUT');
    return (e as Error).message;
  }
  throw new Error('no error');
}

describe('--users', () => {
  it('reads names, weights (default 1) and quotas in GPUs', () => {
    const s = parseUsersSpec('alice:2, bob ,carol:1:q8,dave:0.5:q2.5,erin:1e6');
    expect(s.names).toEqual(['alice', 'bob', 'carol', 'dave', 'erin']);
    expect(s.users.get('erin')).toEqual({ weight: 1e6, quotaGpus: null });
    expect(s.users.get('alice')).toEqual({ weight: 2, quotaGpus: null });
    expect(s.users.get('bob')).toEqual({ weight: 1, quotaGpus: null });
    expect(s.users.get('carol')).toEqual({ weight: 1, quotaGpus: 8 });
    expect(s.users.get('dave')).toEqual({ weight: 0.5, quotaGpus: 2.5 });
  });

  it('says in one line what is wrong and the form to use', () => {
    for (const [text, says] of [
      ['', /no users given: e\.g\. alice:2/],
      ['alice:0', /'alice:0': the weight must be a positive number, got '0'/],
      ['alice:two', /the weight must be a positive number, got 'two'/],
      ['alice:1:8', /'alice:1:8': the quota must be q and a positive number of GPUs \(q8\), got '8'/],
      ['alice:1:q0', /the quota must be q/],
      ['alice:1:q2:x', /too many parts/],
      ['al ice', /^user name "al ice": use a letter, then letters, digits, _ \. - \(64 characters at most\)$/],
      ['alice,,bob', /^user name "": use a letter/],
      ['1bob:1', /^user name "1bob": use a letter, then letters/],
      // Finite but huge: too large, as users --weight says (src/sched/user-rules.ts).
      ['alice:1e300', /^'alice:1e300': the weight 1e\+300 is too large: give a positive number \(1 is the default share; 2 is twice that\) up to 1000000$/],
      ['alice:1e400', /^'alice:1e400': the weight Infinity is too large/],
      ['alice:1:q1e300', /^'alice:1:q1e300': the quota 1e\+300 is too large: give a number of GPUs/],
      ['alice:0x2', /^'alice:0x2': the weight must be a positive number, got '0x2'/],
      ['alice,alice:2', /user 'alice' is named twice/],
    ] as const) {
      const m = message(() => parseUsersSpec(text));
      expect(m).toMatch(says);
      expect(m).not.toContain('\n');
    }
  });

  it('gives trace jobs to users round robin in arrival order', () => {
    const w = resolveWorkload('small');
    const job = (id: string, arrival: number): TraceJob => ({ id, workload: w, gpus: 1, priority: 'foreground', arrival, work: 10, memoryGiB: null, profile: null });
    const jobs = [job('x', 5), job('y', 0), job('z', 0), job('w', 9)];
    expect(assignUsers(jobs, ['a', 'b', 'c']).map((j) => `${j.id}:${j.user}`)).toEqual(['x:c', 'y:a', 'z:b', 'w:a']);
  });
});
