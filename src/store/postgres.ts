import pg from 'pg';
import type { JobSpecInput } from '../jobs/job-spec.js';
import { badInput, MigpoolError } from '../errors.js';
import { migrationFailed, pendingMigrations, type Migration } from './migration.js';
import { POSTGRES_MIGRATIONS } from './postgres-schema.js';
import {
  checkEvent,
  checkFilter,
  checkListEvents,
  checkIdempotencyKey,
  checkSetting,
  checkTime,
  encodeSpec,
  eventFromRow,
  jobFromRow,
  listJobsSql,
  missingEventJob,
  parseJobId,
  replayedIds,
  scopedIdempotencyKey,
  sortCounts,
  updateJobSql,
  type Dialect,
  type EventRow,
  type JobRow,
} from './records.js';
import { listObservationsSql, observationFromRow, putObservationSql, type ObservationRow } from './observations.js';
import type { EventRecord, InsertJobOptions, JobFilter, JobPatch, JobRecord, JobState, NewEvent, NewUser, Store, UserPatch, UserRecord, WorkloadObservation } from './types.js';
import { checkTokenHash, checkUserName, insertUserSql, updateUserSql, userExists, userFromRow, type UserRow } from './users.js';

export interface PostgresStoreOptions {
  /**
   * Schema (namespace) to keep the tables in, created by `init()` if missing; default: the
   * server's search_path (usually `public`). Lets several services or test runs share a database.
   */
  readonly schema?: string;
  /** Most connections the pool opens. Default 10. */
  readonly maxConnections?: number;
  /** The schema to apply; default migpool's own. Only tests of the migration runner change it. */
  readonly migrations?: readonly Migration[];
}

const POSTGRES: Dialect = { param: (n) => `$${n}`, bool: (v) => v };

/** First key of migpool's advisory locks (two-key form), so they do not meet other applications'. */
const LOCK_CLASS = 0x6d696770;

const CONNECTION_CODES = /^(ECONNREFUSED|ECONNRESET|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|EPIPE|08\w{3}|28\w{3}|3D000|57P0[1-3])$/;

/** The URL as it is safe to print: password (in the user part or the query) replaced by `***`. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    if (u.searchParams.has('password')) u.searchParams.set('password', '***');
    return u.toString();
  } catch {
    return url.replace(/\/\/([^:/@]*):[^@]*@/, '//$1:***@');
  }
}

/**
 * The shared store: tables in one PostgreSQL database, through a connection pool. Checks the URL
 * at once (BAD_INPUT when it is not a postgres:// or postgresql:// URL) but connects only on
 * `init()`, which reports an unreachable server or a refused login as RUNTIME.
 */
export function openPostgresStore(url: string, options: PostgresStoreOptions = {}): Store {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw badInput(`database URL ${redactUrl(url)} is not a valid URL; write it as postgres://USER:PASSWORD@HOST:5432/DATABASE`);
  }
  if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') {
    throw badInput(`database URL ${redactUrl(url)} is not a PostgreSQL URL; write it as postgres://USER:PASSWORD@HOST:5432/DATABASE`);
  }
  const schema = options.schema;
  if (schema !== undefined && !/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) {
    throw badInput(`PostgreSQL schema ${JSON.stringify(schema)}: use lower-case letters, digits and _ (at most 63), starting with a letter or _`);
  }
  const pool = new pg.Pool({
    connectionString: url,
    max: options.maxConnections ?? 10,
    connectionTimeoutMillis: 10_000,
    application_name: 'migpool',
    ...(schema !== undefined ? { options: `-c search_path=${schema}` } : {}),
  });
  // An idle connection that breaks (server restart) is dropped by the pool; the next query opens
  // a new one and reports its own error, so there is nothing to do here but not crash.
  pool.on('error', () => {});
  return new PostgresStore(pool, `PostgreSQL ${redactUrl(url)}`, schema ?? null, options.migrations ?? POSTGRES_MIGRATIONS);
}

/** Inserts the specs of a JSON array ($1) in its order, submitted at $2; returns the rows. */
const INSERT_JOBS = `INSERT INTO jobs (spec, priority, submitted_at, owner)
  SELECT e.spec, e.spec->>'priority', $2::bigint, $3::text FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS e (spec, ord) ORDER BY e.ord
  RETURNING *`;

function specsJson(specs: readonly JobSpecInput[]): string {
  return `[${specs.map((s, i) => encodeSpec(s, i).json).join(',')}]`;
}

class PostgresStore implements Store {
  private initialised = false;
  private closing: Promise<void> | null = null;

  constructor(
    private readonly pool: pg.Pool,
    private readonly where: string,
    private readonly schema: string | null,
    private readonly migrations: readonly Migration[],
  ) {}

  private usable(needsInit = true): void {
    if (this.closing) throw new MigpoolError('RUNTIME', `${this.where}: the store is closed; open it again`);
    if (needsInit && !this.initialised) throw new MigpoolError('RUNTIME', `${this.where}: the store is not initialised; call init() first`);
  }

  /** The one-line MigpoolError for anything the driver or the server threw. */
  private fail(e: unknown): MigpoolError {
    if (e instanceof MigpoolError) return e;
    const err = e as Error & { code?: unknown };
    const code = typeof err.code === 'string' ? err.code : '';
    const what = (err.message || code || String(e)).split('\n')[0] ?? '';
    if (CONNECTION_CODES.test(code) || /timeout|terminated/i.test(what)) {
      return new MigpoolError(
        'RUNTIME',
        `${this.where}: cannot connect (${what}); check that the server is running and that the URL's host, port, user, password and database are right`,
        { code },
      );
    }
    return new MigpoolError('RUNTIME', `${this.where}: ${what}${code ? ` (${code})` : ''}`, { code });
  }

  private async query<R extends pg.QueryResultRow>(sql: string, params: unknown[] = []): Promise<R[]> {
    this.usable();
    try {
      return (await this.pool.query<R>(sql, params)).rows;
    } catch (e) {
      throw this.fail(e);
    }
  }

  async init(): Promise<void> {
    this.usable(false);
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (e) {
      throw this.fail(e);
    }
    let broken: Error | undefined;
    try {
      await client.query('BEGIN');
      await client.query(`SELECT pg_advisory_xact_lock(${LOCK_CLASS}, hashtext(coalesce($1::text, current_schema()::text, '')))`, [this.schema]);
      if (this.schema !== null) await client.query(`CREATE SCHEMA IF NOT EXISTS ${this.schema}`);
      await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
        version INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
      )`);
      const current = Number((await client.query<{ v: number }>('SELECT COALESCE(MAX(version), 0) AS v FROM schema_migrations')).rows[0]!.v);
      for (const m of pendingMigrations(this.migrations, current, this.where)) {
        try {
          await client.query(m.sql);
        } catch (e) {
          throw migrationFailed(this.where, m, e);
        }
        await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
      }
      await client.query('COMMIT');
    } catch (e) {
      await client.query('ROLLBACK').catch((rollbackError: Error) => {
        broken = rollbackError;
      });
      throw this.fail(e);
    } finally {
      client.release(broken);
    }
    this.initialised = true;
  }

  async close(): Promise<void> {
    this.closing ??= this.pool.end();
    await this.closing;
  }

  async insertJob(spec: JobSpecInput, now: number, options?: InsertJobOptions): Promise<JobRecord> {
    return (await this.insertJobs([spec], now, options))[0]!;
  }

  /** One statement for the whole batch: the specs travel as one JSON array, ids follow its order. */
  async insertJobs(specs: readonly JobSpecInput[], now: number, options: InsertJobOptions = {}): Promise<JobRecord[]> {
    checkTime('insertJobs: now', now);
    const owner = options.owner === undefined ? null : checkUserName(options.owner, 'store: insertJobs: owner');
    this.usable();
    if (specs.length === 0) return [];
    const rows = await this.query<JobRow>(INSERT_JOBS, [specsJson(specs), now, owner]);
    return rows.map(jobFromRow).sort((a, b) => Number(a.id) - Number(b.id));
  }

  /**
   * One transaction: the key is claimed first (INSERT ... ON CONFLICT DO NOTHING waits for a
   * concurrent claim of the same key to commit, then finds it), the jobs inserted, the key given
   * their ids. A retry finds the key and reads the jobs back.
   */
  async insertJobsOnce(userKey: string, fingerprint: string, specs: readonly JobSpecInput[], now: number, options: InsertJobOptions = {}): Promise<{ jobs: JobRecord[]; replayed: boolean }> {
    checkIdempotencyKey(userKey, fingerprint);
    checkTime('insertJobsOnce: now', now);
    const owner = options.owner === undefined ? null : checkUserName(options.owner, 'store: insertJobsOnce: owner');
    const key = scopedIdempotencyKey(userKey, owner);
    this.usable();
    const json = specsJson(specs);
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (e) {
      throw this.fail(e);
    }
    try {
      await client.query('BEGIN');
      const claimed = await client.query('INSERT INTO idempotency_keys (key, fingerprint, job_ids, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT (key) DO NOTHING RETURNING key', [key, fingerprint, '', now]);
      let result: { jobs: JobRecord[]; replayed: boolean };
      if (claimed.rowCount === 0) {
        const row = (await client.query<{ fingerprint: string; job_ids: string }>('SELECT fingerprint, job_ids FROM idempotency_keys WHERE key = $1', [key])).rows[0]!;
        const ids = replayedIds(userKey, fingerprint, row).map(Number);
        const rows = (await client.query<JobRow>('SELECT * FROM jobs WHERE id = ANY($1::bigint[]) ORDER BY id', [ids])).rows;
        result = { jobs: rows.map(jobFromRow), replayed: true };
      } else {
        const rows = (await client.query<JobRow>(INSERT_JOBS, [json, now, owner])).rows;
        const jobs = rows.map(jobFromRow).sort((a, b) => Number(a.id) - Number(b.id));
        await client.query('UPDATE idempotency_keys SET job_ids = $2 WHERE key = $1', [key, jobs.map((j) => j.id).join(',')]);
        result = { jobs, replayed: false };
      }
      await client.query('COMMIT');
      return result;
    } catch (e) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw this.fail(e);
    } finally {
      client.release();
    }
  }

  async getJob(id: string): Promise<JobRecord | null> {
    this.usable();
    const n = parseJobId(id);
    if (n === null) return null;
    const rows = await this.query<JobRow>('SELECT * FROM jobs WHERE id = $1', [n]);
    return rows[0] ? jobFromRow(rows[0]) : null;
  }

  async listJobs(filter?: JobFilter): Promise<JobRecord[]> {
    this.usable();
    const q = listJobsSql(checkFilter(filter), POSTGRES);
    if (!q) return [];
    return (await this.query<JobRow>(q.sql, q.params)).map(jobFromRow);
  }

  async updateJob(id: string, expectedVersion: number, patch: JobPatch): Promise<JobRecord | null> {
    this.usable();
    const n = parseJobId(id);
    const q = updateJobSql(n, expectedVersion, patch, POSTGRES);
    if (n === null || !Number.isSafeInteger(expectedVersion) || Math.abs(expectedVersion) >= 2 ** 31) return null;
    const rows = await this.query<JobRow>(q.sql, q.params);
    return rows[0] ? jobFromRow(rows[0]) : null;
  }

  async countJobs(): Promise<{ state: JobState; priority: JobSpecInput['priority']; count: number }[]> {
    const rows = await this.query<{ state: JobState; priority: JobSpecInput['priority']; count: string }>(
      'SELECT state, priority, COUNT(*) AS count FROM jobs GROUP BY state, priority',
    );
    return sortCounts(rows.map((r) => ({ state: r.state, priority: r.priority, count: Number(r.count) })));
  }

  /**
   * Appends under a per-table advisory lock held to commit, so events commit in `seq` order and a
   * reader paging with `afterSeq` never skips one that commits late.
   */
  async appendEvent(event: NewEvent): Promise<EventRecord> {
    const e = checkEvent(event);
    try {
      const rows = await this.query<EventRow>(
        `WITH turn AS MATERIALIZED (SELECT pg_advisory_xact_lock(${LOCK_CLASS}, 'events'::regclass::oid::int))
         INSERT INTO events (time, type, job_id, data) SELECT $1::bigint, $2::text, $3::bigint, $4::jsonb FROM turn
         RETURNING *`,
        [e.time, e.type, e.jobId, e.data],
      );
      return eventFromRow(rows[0]!);
    } catch (err) {
      if (err instanceof MigpoolError && err.details['code'] === '23503') throw missingEventJob(event.jobId);
      throw err;
    }
  }

  async listEvents(afterSeq: number, limit = 1000): Promise<EventRecord[]> {
    checkListEvents(afterSeq, limit);
    return (await this.query<EventRow>('SELECT * FROM events WHERE seq > $1 ORDER BY seq LIMIT $2', [afterSeq, limit])).map(eventFromRow);
  }

  async getSetting(key: string): Promise<string | null> {
    checkSetting(key);
    const rows = await this.query<{ value: string }>('SELECT value FROM settings WHERE key = $1', [key]);
    return rows[0]?.value ?? null;
  }

  async putSetting(key: string, value: string): Promise<void> {
    checkSetting(key, value);
    await this.query('INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value', [key, value]);
  }

  async listUsers(): Promise<UserRecord[]> {
    return (await this.query<UserRow>('SELECT * FROM users ORDER BY name')).map(userFromRow);
  }

  async getUser(name: string): Promise<UserRecord | null> {
    const rows = await this.query<UserRow>('SELECT * FROM users WHERE name = $1', [name]);
    return rows[0] ? userFromRow(rows[0]) : null;
  }

  async userByTokenHash(tokenHash: string): Promise<UserRecord | null> {
    const rows = await this.query<UserRow>('SELECT * FROM users WHERE token_hash = $1', [checkTokenHash(tokenHash)]);
    return rows[0] ? userFromRow(rows[0]) : null;
  }

  async insertUser(user: NewUser, tokenHash: string, now: number): Promise<UserRecord> {
    checkTime('insertUser: now', now);
    const q = insertUserSql(user, tokenHash, now, POSTGRES);
    try {
      return userFromRow((await this.query<UserRow>(q.sql, q.params))[0]!);
    } catch (err) {
      // 23505: unique_violation (PostgreSQL's error codes, Appendix A of its manual).
      if (err instanceof MigpoolError && err.details['code'] === '23505' && /users_pkey/.test(err.message)) throw userExists(user.name);
      throw err;
    }
  }

  async updateUser(name: string, patch: UserPatch): Promise<UserRecord | null> {
    const q = updateUserSql(name, patch, POSTGRES);
    if (q === null) return this.getUser(name);
    const rows = await this.query<UserRow>(q.sql, q.params);
    return rows[0] ? userFromRow(rows[0]) : null;
  }

  async deleteUser(name: string): Promise<boolean> {
    return (await this.query<{ name: string }>('DELETE FROM users WHERE name = $1 RETURNING name', [name])).length > 0;
  }

  async putObservation(observation: WorkloadObservation): Promise<void> {
    const q = putObservationSql(observation, POSTGRES);
    await this.query(q.sql, q.params);
  }

  async listObservations(workload?: string): Promise<WorkloadObservation[]> {
    const q = listObservationsSql(workload, POSTGRES);
    return (await this.query<ObservationRow>(q.sql, q.params)).map(observationFromRow);
  }
}
