import { describe, expect, it } from 'vitest';
import type { JobRecord } from '../store/types.js';
import { ActiveJobs } from './active-jobs.js';

const rec = (id: string, state: JobRecord['state'], placed: boolean): JobRecord => ({ id, state, placement: placed ? { kind: 'gpus', gpus: [0], sharing: 'exclusive' } : null }) as unknown as JobRecord;

describe('ActiveJobs', () => {
  it('indexes the jobs that hold a placement through every change of state', () => {
    const a = new ActiveJobs();
    a.set('1', rec('1', 'queued', false));
    a.set('2', rec('2', 'starting', true));
    a.set('3', rec('3', 'running', true));
    expect([...a.placed].sort()).toEqual(['2', '3']);
    // Preempted back to the queue, then ended.
    a.set('3', rec('3', 'queued', false));
    a.delete('2');
    expect([...a.placed]).toEqual([]);
    a.set('1', rec('1', 'running', true));
    expect([...a.placed]).toEqual(['1']);
    expect(a.size).toBe(2);
    // Listed in the map's order (first set), as a scan of every job would list them.
    a.set('2', rec('2', 'running', true));
    a.set('3', rec('3', 'running', true));
    expect(a.placedRecords().map((r) => r.id)).toEqual(['1', '3', '2']);
    expect([...a.keys()]).toEqual(['1', '3', '2']);
    a.clear();
    expect(a.placed.size).toBe(0);
  });

  it('lists the same jobs, in the same order, as a scan of every job would, through random changes', () => {
    let seed = 7;
    const rand = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const a = new ActiveJobs();
    const states: JobRecord['state'][] = ['queued', 'starting', 'running'];
    for (let step = 0; step < 3000; step++) {
      const id = String(rand(60));
      if (rand(5) === 0) a.delete(id);
      else {
        const state = states[rand(3)] as JobRecord['state'];
        a.set(id, rec(id, state, state !== 'queued' && rand(4) > 0));
      }
      const scan = [...a.values()].filter((r) => (r.state === 'running' || r.state === 'starting') && r.placement !== null).map((r) => r.id);
      expect(a.placedRecords().map((r) => r.id)).toEqual(scan);
    }
  });
});
