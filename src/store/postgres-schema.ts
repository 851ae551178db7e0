import type { Migration } from './migration.js';

/** The PostgreSQL schema, as migrations (append only; see `Migration`). */
export const POSTGRES_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'jobs, events, settings',
    sql: `
      CREATE TABLE jobs (
        id BIGSERIAL PRIMARY KEY,
        spec JSONB NOT NULL,
        state TEXT NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'starting', 'running', 'succeeded', 'failed', 'cancelled')),
        priority TEXT NOT NULL CHECK (priority IN ('foreground', 'background')),
        version INTEGER NOT NULL DEFAULT 1,
        submitted_at BIGINT NOT NULL,
        started_at BIGINT,
        ended_at BIGINT,
        attempt INTEGER NOT NULL DEFAULT 0,
        placement JSONB,
        process JSONB,
        exit_code INTEGER,
        reason TEXT,
        cancel_requested BOOLEAN NOT NULL DEFAULT FALSE
      );
      CREATE INDEX jobs_state ON jobs (state, priority, id);
      CREATE INDEX jobs_priority ON jobs (priority, id);

      CREATE TABLE events (
        seq BIGSERIAL PRIMARY KEY,
        time BIGINT NOT NULL,
        type TEXT NOT NULL,
        job_id BIGINT REFERENCES jobs (id) ON DELETE CASCADE,
        data JSONB NOT NULL
      );
      CREATE INDEX events_job ON events (job_id, seq);

      CREATE TABLE settings (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
      );
    `,
  },
  {
    version: 2,
    name: 'jobs.preemptions',
    sql: `ALTER TABLE jobs ADD COLUMN preemptions INTEGER NOT NULL DEFAULT 0;`,
  },
  {
    version: 3,
    name: 'users, jobs.owner',
    sql: `
      CREATE TABLE users (
        name TEXT PRIMARY KEY,
        token_hash TEXT NOT NULL UNIQUE,
        admin BOOLEAN NOT NULL DEFAULT FALSE,
        weight DOUBLE PRECISION NOT NULL DEFAULT 1 CHECK (weight > 0),
        quota_gpus DOUBLE PRECISION CHECK (quota_gpus IS NULL OR quota_gpus >= 0),
        unix_user TEXT,
        created_at BIGINT NOT NULL
      );
      ALTER TABLE jobs ADD COLUMN owner TEXT;
      CREATE INDEX jobs_owner ON jobs (owner, id);
    `,
  },
  {
    version: 4,
    name: 'idempotency keys of submissions',
    sql: `
      CREATE TABLE idempotency_keys (
        key TEXT PRIMARY KEY,
        fingerprint TEXT NOT NULL,
        job_ids TEXT NOT NULL,
        created_at BIGINT NOT NULL
      );
    `,
  },
  {
    version: 5,
    name: 'workload_observations',
    sql: `
      CREATE TABLE workload_observations (
        job_id BIGINT NOT NULL,
        attempt INTEGER NOT NULL,
        workload TEXT NOT NULL,
        gpu_model TEXT NOT NULL,
        resource TEXT NOT NULL,
        samples_per_second DOUBLE PRECISION,
        peak_memory_mib DOUBLE PRECISION,
        out_of_memory BOOLEAN NOT NULL DEFAULT FALSE,
        time BIGINT NOT NULL,
        PRIMARY KEY (job_id, attempt)
      );
      CREATE INDEX workload_observations_workload ON workload_observations (workload, time);
    `,
  },
  {
    version: 6,
    name: 'workload_observations.owner, .shared',
    // Rows written before (no owner) stay shared: they taught every job, as they did.
    sql: `
      ALTER TABLE workload_observations ADD COLUMN owner TEXT;
      ALTER TABLE workload_observations ADD COLUMN shared BOOLEAN NOT NULL DEFAULT TRUE;
    `,
  },
];
