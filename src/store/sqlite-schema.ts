import type { Migration } from './migration.js';

/** The SQLite schema, as migrations (append only; see `Migration`). */
export const SQLITE_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'jobs, events, settings',
    sql: `
      CREATE TABLE jobs (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        spec TEXT NOT NULL,
        state TEXT NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'starting', 'running', 'succeeded', 'failed', 'cancelled')),
        priority TEXT NOT NULL CHECK (priority IN ('foreground', 'background')),
        version INTEGER NOT NULL DEFAULT 1,
        submitted_at INTEGER NOT NULL,
        started_at INTEGER,
        ended_at INTEGER,
        attempt INTEGER NOT NULL DEFAULT 0,
        placement TEXT,
        process TEXT,
        exit_code INTEGER,
        reason TEXT,
        cancel_requested INTEGER NOT NULL DEFAULT 0 CHECK (cancel_requested IN (0, 1))
      ) STRICT;
      CREATE INDEX jobs_state ON jobs (state, priority, id);
      CREATE INDEX jobs_priority ON jobs (priority, id);

      CREATE TABLE events (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        time INTEGER NOT NULL,
        type TEXT NOT NULL,
        job_id INTEGER REFERENCES jobs (id) ON DELETE CASCADE,
        data TEXT NOT NULL
      ) STRICT;
      CREATE INDEX events_job ON events (job_id, seq);

      CREATE TABLE settings (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
      ) STRICT, WITHOUT ROWID;
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
        admin INTEGER NOT NULL DEFAULT 0 CHECK (admin IN (0, 1)),
        weight REAL NOT NULL DEFAULT 1 CHECK (weight > 0),
        quota_gpus REAL CHECK (quota_gpus IS NULL OR quota_gpus >= 0),
        unix_user TEXT,
        created_at INTEGER NOT NULL
      ) STRICT;
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
        created_at INTEGER NOT NULL
      ) STRICT, WITHOUT ROWID;
    `,
  },
  {
    version: 5,
    name: 'workload_observations',
    sql: `
      CREATE TABLE workload_observations (
        job_id INTEGER NOT NULL,
        attempt INTEGER NOT NULL,
        workload TEXT NOT NULL,
        gpu_model TEXT NOT NULL,
        resource TEXT NOT NULL,
        samples_per_second REAL,
        peak_memory_mib REAL,
        out_of_memory INTEGER NOT NULL DEFAULT 0 CHECK (out_of_memory IN (0, 1)),
        time INTEGER NOT NULL,
        PRIMARY KEY (job_id, attempt)
      ) STRICT;
      CREATE INDEX workload_observations_workload ON workload_observations (workload, time);
    `,
  },
  {
    version: 6,
    name: 'workload_observations.owner, .shared',
    // Rows written before (no owner) stay shared: they taught every job, as they did.
    sql: `
      ALTER TABLE workload_observations ADD COLUMN owner TEXT;
      ALTER TABLE workload_observations ADD COLUMN shared INTEGER NOT NULL DEFAULT 1 CHECK (shared IN (0, 1));
    `,
  },
];
