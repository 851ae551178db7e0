import { describe, expect, it } from 'vitest';
import { MigpoolError } from '../errors.js';
import { listObservationsSql, putObservationSql } from './observations.js';
import type { Dialect } from './records.js';
import type { WorkloadObservation } from './types.js';

const SQLITE: Dialect = { param: () => '?', bool: (v) => (v ? 1 : 0) };
const POSTGRES: Dialect = { param: (n) => `$${n}`, bool: (v) => v };

const seen: WorkloadObservation = { workload: 'resnet50', jobId: '12', attempt: 2, gpuModel: 'NVIDIA A100-SXM4-40GB', resource: '3g.20gb', samplesPerSecond: 410.5, peakMemoryMiB: null, outOfMemory: true, time: 1_700_000_000_000, owner: 'alice', shared: false };

describe('observation SQL', () => {
  it('writes one upsert per dialect: its placeholders and its boolean, the job id as a number', () => {
    const pg = putObservationSql(seen, POSTGRES);
    const lite = putObservationSql(seen, SQLITE);
    expect(pg.sql).toContain('VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT (job_id, attempt) DO UPDATE SET workload = excluded.workload,');
    expect(lite.sql).toContain('VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (job_id, attempt) DO UPDATE SET workload = excluded.workload,');
    expect(pg.sql).not.toContain('job_id = excluded');
    expect(pg.params).toEqual([12, 2, 'resnet50', 'NVIDIA A100-SXM4-40GB', '3g.20gb', 410.5, null, true, 1_700_000_000_000, 'alice', false]);
    expect(lite.params).toEqual([12, 2, 'resnet50', 'NVIDIA A100-SXM4-40GB', '3g.20gb', 410.5, null, 1, 1_700_000_000_000, 'alice', 0]);
  });

  it('refuses a bad observation before any SQL, naming the field', () => {
    expect(() => putObservationSql({ ...seen, samplesPerSecond: -1 }, SQLITE)).toThrow(MigpoolError);
    expect(() => putObservationSql({ ...seen, jobId: 'x' }, POSTGRES)).toThrow(/jobId must be a job id/);
    expect(() => putObservationSql({ ...seen, owner: 'no such name!' }, SQLITE)).toThrow(/workload observation: owner "no such name!"/);
    expect(() => putObservationSql({ ...seen, shared: 'yes' as unknown as boolean }, SQLITE)).toThrow(/shared must be true or false/);
  });

  it('lists one workload or all, oldest first', () => {
    expect(listObservationsSql('resnet50', POSTGRES)).toEqual({ sql: 'SELECT * FROM workload_observations WHERE workload = $1 ORDER BY time, job_id, attempt', params: ['resnet50'] });
    expect(listObservationsSql(undefined, SQLITE)).toEqual({ sql: 'SELECT * FROM workload_observations ORDER BY time, job_id, attempt', params: [] });
  });
});
