import { describe, expect, it } from 'vitest';
import type { JobRecord } from '../../store/types.js';
import { noteText } from './client.js';

/** A job record with only what `noteText` reads. */
const job = (fields: Partial<JobRecord>): JobRecord => ({ state: 'queued', reason: null, ...fields }) as JobRecord;

describe('migpool jobs NOTE', () => {
  it("says why a job failed or was cancelled, so that 'exit 127' is not all a user sees", () => {
    expect(noteText(job({ state: 'failed', reason: 'could not start: cannot start pyhton: command not found' }))).toBe('could not start: cannot start pyhton: command not found');
    expect(noteText(job({ state: 'failed', reason: 'killed after its max runtime' }))).toBe('killed after its max runtime');
    expect(noteText(job({ state: 'cancelled', reason: 'cancelled by admin' }))).toBe('cancelled by admin');
    expect(noteText(job({ state: 'succeeded', reason: null }))).toBe('-');
  });
  it('shows why a queued job waits', () => {
    expect(noteText(job({ state: 'queued', pending: 'no free 1g.5gb slice' } as Partial<JobRecord>))).toBe('no free 1g.5gb slice');
  });
});
