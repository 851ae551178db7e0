import { describe, expect, it } from 'vitest';
import type { UserMetrics } from './user-metrics.js';
import { usersTable } from './users-table.js';

const user = (name: string, quotaGpus: number | null): UserMetrics => ({
  user: name,
  weight: 2,
  quotaGpus,
  jobs: 10,
  completed: 9,
  contendedShare: 0.64,
  weightShare: 2 / 3,
  contendedSeconds: 3600,
  contendedGpus: 5.125,
  peakGpus: 6,
  avgSlowdown: 2.5,
  p50Slowdown: 1.5,
  p99Slowdown: 9,
  avgJctSeconds: 4000,
});

describe('usersTable', () => {
  it('has a row per policy and user, in order, with a head per column for the terminal and the report', () => {
    const t = usersTable([
      { policy: 'exclusive', byUser: [user('alice', 6), user('bob', null)] },
      { policy: 'none' },
      { policy: 'migpool', byUser: [user('carol', null)] },
    ]);
    expect(t.heads).toEqual(['POLICY', 'USER', 'WEIGHT', 'QUOTA', 'COMPLETED', 'SHARE', 'WEIGHT SHARE', 'AVG GPUS', 'PEAK GPUS', 'AVG SLOW', 'P50 SLOW', 'AVG JCT']);
    expect(t.titles).toHaveLength(t.heads.length);
    expect(t.titles[3]).toBe('quota (GPUs)');
    expect(t.rows).toEqual([
      ['exclusive', 'alice', '2', '6', '9/10', '64.0%', '66.7%', '5.13', '6.00', '2.50x', '1.50x', '1.11 h'],
      ['exclusive', 'bob', '2', '-', '9/10', '64.0%', '66.7%', '5.13', '6.00', '2.50x', '1.50x', '1.11 h'],
      ['migpool', 'carol', '2', '-', '9/10', '64.0%', '66.7%', '5.13', '6.00', '2.50x', '1.50x', '1.11 h'],
    ]);
  });

  it('has no rows for runs without users', () => {
    expect(usersTable([{ policy: 'exclusive', byUser: [] }, { policy: 'migpool' }]).rows).toEqual([]);
  });
});
