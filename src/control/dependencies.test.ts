import { describe, expect, it } from 'vitest';
import { parseJobSpec } from '../jobs/job-spec.js';
import type { JobRecord, JobState } from '../store/types.js';
import { checkDependencies, dependenciesToLookUp, gateQueue, visibleLookup, type EndedJob } from './dependencies.js';

function job(id: string, state: JobState, more: Record<string, unknown> = {}): JobRecord {
  return {
    id,
    spec: parseJobSpec({ name: `j${id}`, command: ['true'], ...more }),
    state,
    version: 1,
    submittedAt: 0,
    startedAt: null,
    endedAt: null,
    attempt: 0,
    placement: null,
    process: null,
    exitCode: null,
    reason: null,
    cancelRequested: false,
  };
}

const open = (...jobs: JobRecord[]) => new Map(jobs.map((j) => [j.id, j]));
const member = (index: number, maxRunning?: number) => ({ array: { id: 'A', index, range: '0-9%2', ...(maxRunning !== undefined ? { maxRunning } : {}) } });

describe('gateQueue: dependencies', () => {
  it('holds a job until its dependency succeeded, saying which and how it stands', () => {
    const gate = gateQueue(open(job('1', 'running'), job('2', 'queued', { after: ['1'] })), new Map());
    expect(gate.held.get('2')).toBe('waits for job 1 to succeed (it is running)');
    expect(gate.doomed.size).toBe(0);
    const ended = new Map<string, EndedJob | null>([['1', { state: 'succeeded', reason: null }]]);
    const released = gateQueue(open(job('2', 'queued', { after: ['1'] })), ended);
    expect(released.held.size + released.doomed.size).toBe(0);
  });

  it('dooms a job whose dependency failed, was cancelled or is gone, with the reason', () => {
    const ended = new Map<string, EndedJob | null>([
      ['1', { state: 'failed', reason: 'exit status 3' }],
      ['2', { state: 'cancelled', reason: 'cancelled before it started' }],
      ['3', null],
    ]);
    const gate = gateQueue(open(job('4', 'queued', { after: ['1'] }), job('5', 'queued', { after: ['2'] }), job('6', 'queued', { after: ['3'] })), ended);
    expect(gate.doomed.get('4')).toBe('dependency job 1 did not succeed (failed: exit status 3)');
    expect(gate.doomed.get('5')).toBe('dependency job 2 did not succeed (cancelled: cancelled before it started)');
    expect(gate.doomed.get('6')).toBe('dependency job 3 does not exist');
  });

  it('asks the store only for dependencies that are neither open nor known', () => {
    const jobs = open(job('1', 'running'), job('2', 'queued', { after: ['1', '7', '8'] }), job('3', 'running', { after: ['9'] }));
    expect(dependenciesToLookUp(jobs, new Map([['8', null]]))).toEqual(['7']);
  });
});

describe('checkDependencies with visibleLookup: users name only jobs they may see', () => {
  const jobs = new Map([
    ['1', { ...job('1', 'succeeded'), owner: 'alice' }],
    ['2', { ...job('2', 'running'), owner: 'bob' }],
  ]);
  const lookup = async (id: string) => jobs.get(id) ?? null;
  const specs = (dep: string) => [parseJobSpec({ name: 'x', command: ['true'], after: [dep] })];
  const check = (dep: string, owner: string | undefined, seesAll: boolean) => checkDependencies(specs(dep), () => 'job spec', visibleLookup(lookup, owner, seesAll));

  it("refuses another user's job with the message of an unknown id, and accepts one's own", async () => {
    await expect(check('1', 'alice', false)).resolves.toBeUndefined();
    const message = (p: Promise<void>) => p.then(() => 'accepted', (e: Error) => e.message);
    const unknown = await message(check('99', 'alice', false));
    const others = await message(check('2', 'alice', false));
    expect(unknown).toBe('job spec: after: no job 99: name jobs that exist (see `migpool jobs`)');
    expect(others).toBe(unknown.replace('99', '2'));
  });

  it('lets an admin, or a pool without users, name any job', async () => {
    await expect(check('2', 'admin', true)).resolves.toBeUndefined();
    await expect(check('2', undefined, false)).resolves.toBeUndefined();
  });
});

describe('gateQueue: array limits', () => {
  it('lets the lowest-id queued members fill the places the running ones leave', () => {
    const gate = gateQueue(open(job('1', 'running', member(0, 2)), job('2', 'queued', member(1, 2)), job('3', 'queued', member(2, 2)), job('4', 'queued', member(3, 2))), new Map());
    expect([...gate.held.keys()].sort()).toEqual(['3', '4']);
    expect(gate.held.get('3')).toBe('array 0-9%2: 1 of its jobs run, at most 2 at once');
  });

  it('counts starting members as running, and holds nothing without a limit', () => {
    const full = gateQueue(open(job('1', 'starting', member(0, 1)), job('2', 'queued', member(1, 1))), new Map());
    expect([...full.held.keys()]).toEqual(['2']);
    const free = gateQueue(open(job('1', 'running', member(0)), job('2', 'queued', member(1)), job('3', 'queued', member(2))), new Map());
    expect(free.held.size).toBe(0);
  });
});
