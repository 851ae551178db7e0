import { describe, expect, it } from 'vitest';
import type { JobRecord } from '../store/types.js';
import { jobRefsText, visibleRecord } from './visible-job.js';

const record = (id: string, owner: string, more: Partial<JobRecord> = {}): JobRecord =>
  ({ id, owner, spec: { name: id, command: ['true'], env: {} }, state: 'queued', placement: null, pending: null, ...more }) as unknown as JobRecord;

describe('visibleRecord', () => {
  const jobs = new Map([
    ['1', record('1', 'alice')],
    ['2', record('2', 'alice')],
    ['3', record('3', 'bob')],
    ['4', record('4', 'bob')],
  ]);
  const service = { getJob: async (id: string) => jobs.get(id) ?? null };
  const bob = { name: 'bob', admin: false };

  it("names other users' jobs in a pending reason as theirs, not by id; the caller's own and an admin's view keep the ids", async () => {
    const mine = record('4', 'bob', { pending: 'waiting for a 1g.5gb slice (it asked for exactly that profile; held by job 1, 3, 2, ...)' });
    expect((await visibleRecord(service, bob, mine)).pending).toBe("waiting for a 1g.5gb slice (it asked for exactly that profile; held by job 3 and 2 jobs of other users, ...)");
    const held = record('4', 'bob', { pending: 'GPUs are held for job 1, which has waited longest and goes first' });
    expect((await visibleRecord(service, bob, held)).pending).toBe("GPUs are held for another user's job, which has waited longest and goes first");
    const slices = record('4', 'bob', { pending: 'a 3g.20gb on GPU 0 needs the slices of job 1, 2 (job 2 may not be moved)' });
    expect((await visibleRecord(service, bob, slices)).pending).toBe("a 3g.20gb on GPU 0 needs the slices of 2 jobs of other users (another user's job may not be moved)");
    expect((await visibleRecord(service, { name: 'root', admin: true }, held)).pending).toBe(held.pending);
    // Words that only look like ids are left alone.
    const words = record('4', 'bob', { pending: 'behind 3 jobs of higher priority; waits for a whole GPU (0 jobs ahead in line)' });
    expect((await visibleRecord(service, bob, words)).pending).toBe(words.pending);
  });

  it("lists only the caller's own MPS neighbours, and counts the others", async () => {
    const placement = { kind: 'gpus', gpus: [0], sharing: 'mps', devices: ['GPU-x'], mps: { clientPriority: 1, activeThreadPercentage: null, neighbours: ['1', '3'] } } as const;
    const mine = record('4', 'bob', { state: 'running', placement });
    expect((await visibleRecord(service, bob, mine)).placement).toEqual({ ...placement, mps: { ...placement.mps, neighbours: ['3'], otherNeighbours: 1 } });
    expect((await visibleRecord(service, { name: 'root', admin: true }, mine)).placement).toEqual(placement);
  });

  it('jobRefsText', () => {
    expect(jobRefsText(['3'], 0)).toBe('job 3');
    expect(jobRefsText([], 1)).toBe("another user's job");
    expect(jobRefsText(['3', '5'], 3)).toBe('job 3, 5 and 3 jobs of other users');
  });
});
