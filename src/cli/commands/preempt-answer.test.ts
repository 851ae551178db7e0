import { describe, expect, it } from 'vitest';
import type { JobRecord } from '../../store/types.js';
import { preemptAnswer } from './preempt-answer.js';

const job = (patch: Partial<JobRecord>): JobRecord => ({ id: '7', spec: { name: 'mover' }, state: 'running', attempt: 1, reason: null, cancelRequested: false, ...patch }) as JobRecord;

describe('preemptAnswer', () => {
  it('says the job was asked to stop only when it is being preempted', () => {
    expect(preemptAnswer(job({ reason: 'preempting' }))).toBe('asked job 7 (mover) to stop; it will be requeued');
  });

  it('says why a repeated preempt moved nothing', () => {
    expect(preemptAnswer(job({ cancelRequested: true }))).toBe('job 7 (mover) is being cancelled; not moved');
    expect(preemptAnswer(job({ state: 'queued', reason: 'preempted during attempt 1; requeued' }))).toBe('job 7 (mover) is requeued already (preempted during attempt 1; requeued); not moved again');
    expect(preemptAnswer(job({ attempt: 2 }))).toBe('job 7 (mover) started attempt 2 after this preempt was asked; not moved again');
  });
});
