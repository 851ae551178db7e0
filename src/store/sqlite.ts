import { existsSync } from 'node:fs';
import Database from 'better-sqlite3';
import type { JobSpecInput } from '../jobs/job-spec.js';
import { badInput, MigpoolError } from '../errors.js';
import { migrationFailed, pendingMigrations, type Migration } from './migration.js';
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
import { SQLITE_MIGRATIONS } from './sqlite-schema.js';
import { listObservationsSql, observationFromRow, putObservationSql, type ObservationRow } from './observations.js';
import type { EventRecord, InsertJobOptions, JobFilter, JobPatch, JobRecord, JobState, NewEvent, NewUser, Store, UserPatch, UserRecord, WorkloadObservation } from './types.js';
import { checkTokenHash, checkUserName, insertUserSql, updateUserSql, userExists, userFromRow, type UserRow } from './users.js';

export interface SqliteStoreOptions {
  /** How long a write waits for another process's write lock, in ms. Default 5000. */
  readonly busyTimeoutMs?: number;
  /** The schema to apply; default migpool's own. Only tests of the migration runner change it. */
  readonly migrations?: readonly Migration[];
}

const SQLITE: Dialect = { param: () => '?', bool: (v) => (v ? 1 : 0) };

/** What to do about a file at the store's path that is not migpool's database (it is left as it is). */
const NOT_OURS_FIX = 'move it away (or restore it from a backup) and start again, or pass --data-dir with another directory';

/**
 * Refuses, before anything writes to it, a file that is not migpool's SQLite database: not SQLite
 * at all or damaged (SQLite's NOTADB, CORRUPT), or another program's SQLite database (tables, but
 * not migpool's schema_migrations, which every migpool database has had from its first version).
 * Other failures are left to the caller to report.
 */
function checkMigpoolDatabase(db: Database.Database, path: string): void {
  let tables: string[];
  try {
    tables = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'").all() as { name: string }[]).map((r) => r.name);
  } catch (e) {
    if (e instanceof Database.SqliteError && (e.code === 'SQLITE_NOTADB' || e.code === 'SQLITE_CORRUPT')) {
      throw badInput(`${path} is not a migpool database: SQLite says '${e.message.split('\n')[0]}' (it is another kind of file, or a damaged database); ${NOT_OURS_FIX}`, { path, code: e.code });
    }
    throw e;
  }
  if (tables.length > 0 && !tables.includes('schema_migrations')) {
    const some = tables.slice(0, 3).join(', ') + (tables.length > 3 ? ', ...' : '');
    throw badInput(`${path} is another program's SQLite database, not migpool's (its tables: ${some}; no schema_migrations); ${NOT_OURS_FIX}`, { path });
  }
}

/**
 * Checks, read-only, that the file at `path` is migpool's SQLite database when there is a file
 * there (see checkMigpoolDatabase), so that a command can refuse it before it writes anything
 * else beside it. A file that cannot be opened is left to openSqliteStore to report.
 * @throws MigpoolError BAD_INPUT naming the file and what to do
 */
export function checkSqliteStoreFile(path: string): void {
  if (!existsSync(path)) return;
  let db: Database.Database | undefined;
  try {
    db = new Database(path, { readonly: true, fileMustExist: true });
  } catch {
    return;
  }
  try {
    checkMigpoolDatabase(db, path);
  } catch (e) {
    if (e instanceof MigpoolError) throw e;
  } finally {
    db.close();
  }
}

/**
 * The embedded store: one SQLite file (`':memory:'` for a throwaway one) in WAL mode, so readers
 * never wait for the writer. Opens the file at once; call `init()` before anything else.
 * Throws RUNTIME when the file cannot be opened.
 */
export function openSqliteStore(path: string, options: SqliteStoreOptions = {}): Store {
  const where = `SQLite database ${path}`;
  let db: Database.Database | undefined;
  try {
    db = new Database(path);
    db.pragma(`busy_timeout = ${Math.max(0, Math.floor(options.busyTimeoutMs ?? 5000))}`);
    // Before the WAL pragma, which would rewrite another program's database's header.
    checkMigpoolDatabase(db, path);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma('foreign_keys = ON');
  } catch (e) {
    db?.close();
    if (e instanceof MigpoolError) throw e;
    throw new MigpoolError('RUNTIME', `${where}: cannot open it (${(e as Error).message}); check that its folder exists and is writable, or choose another data dir`, { path });
  }
  return new SqliteStore(db, where, options.migrations ?? SQLITE_MIGRATIONS);
}

/**
 * Brings `db` to the newest schema in `migrations`: every pending migration in one immediate
 * (write-locked) transaction, so two processes starting at once apply each migration once, and a
 * failing migration leaves the database as it was.
 */
function migrateSqlite(db: Database.Database, migrations: readonly Migration[], where: string): void {
  db.transaction(() => {
    db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version INTEGER PRIMARY KEY,
      name TEXT NOT NULL,
      applied_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
    ) STRICT`);
    const current = (db.prepare('SELECT COALESCE(MAX(version), 0) AS v FROM schema_migrations').get() as { v: number }).v;
    const record = db.prepare('INSERT INTO schema_migrations (version, name) VALUES (?, ?)');
    for (const m of pendingMigrations(migrations, current, where)) {
      try {
        db.exec(m.sql);
      } catch (e) {
        throw migrationFailed(where, m, e);
      }
      record.run(m.version, m.name);
    }
  }).immediate();
}

class SqliteStore implements Store {
  private readonly statements = new Map<string, Database.Statement>();
  private initialised = false;
  private closed = false;

  constructor(
    private readonly db: Database.Database,
    private readonly where: string,
    private readonly migrations: readonly Migration[],
  ) {}

  /**
   * The first row a writing statement with `RETURNING` gives, once the statement has run to its
   * end. Never `statement.get()` for those: SQLite produces a RETURNING statement's rows before
   * it commits, and better-sqlite3's `get` stops after the first row, where a failed commit (the
   * WAL write on a full disk: SQLITE_FULL; a deferred foreign key) is never reported, so the
   * caller would take a change the database rolled back for written. `all` steps to the end.
   */
  private returning<T>(statement: Database.Statement, params: readonly unknown[]): T | undefined {
    return (statement.all(...params) as T[])[0];
  }

  /** The prepared statement for `sql`, prepared once per store. */
  private stmt(sql: string): Database.Statement {
    if (this.closed) throw new MigpoolError('RUNTIME', `${this.where}: the store is closed; open it again`);
    if (!this.initialised) throw new MigpoolError('RUNTIME', `${this.where}: the store is not initialised; call init() first`);
    let s = this.statements.get(sql);
    if (!s) {
      s = this.run(() => this.db.prepare(sql));
      this.statements.set(sql, s);
    }
    return s;
  }

  /** Runs `work`, turning SQLite's own errors (disk full, locked, corrupt) into one-line RUNTIME errors. */
  private run<T>(work: () => T): T {
    try {
      return work();
    } catch (e) {
      if (e instanceof Database.SqliteError) throw new MigpoolError('RUNTIME', `${this.where}: ${e.message.split('\n')[0]} (${e.code})`, { code: e.code });
      throw e;
    }
  }

  async init(): Promise<void> {
    if (this.closed) throw new MigpoolError('RUNTIME', `${this.where}: the store is closed; open it again`);
    this.run(() => migrateSqlite(this.db, this.migrations, this.where));
    this.initialised = true;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.statements.clear();
    this.db.close();
  }

  async insertJob(spec: JobSpecInput, now: number, options?: InsertJobOptions): Promise<JobRecord> {
    return (await this.insertJobs([spec], now, options))[0]!;
  }

  async insertJobs(specs: readonly JobSpecInput[], now: number, options: InsertJobOptions = {}): Promise<JobRecord[]> {
    checkTime('insertJobs: now', now);
    const owner = options.owner === undefined ? null : checkUserName(options.owner, 'store: insertJobs: owner');
    const insert = this.stmt('INSERT INTO jobs (spec, priority, submitted_at, owner) VALUES (?, ?, ?, ?)');
    const insertAll = this.db.transaction(() =>
      specs.map((spec, i) => {
        const { json, priority } = encodeSpec(spec, i);
        return { id: insert.run(json, priority, now, owner).lastInsertRowid, json };
      }),
    );
    return this.run(insertAll).map(({ id, json }) => ({
      id: String(id),
      spec: JSON.parse(json) as JobSpecInput,
      state: 'queued',
      version: 1,
      submittedAt: now,
      startedAt: null,
      endedAt: null,
      attempt: 0,
      placement: null,
      process: null,
      exitCode: null,
      reason: null,
      cancelRequested: false,
      preemptions: 0,
      owner,
    }));
  }

  async insertJobsOnce(userKey: string, fingerprint: string, specs: readonly JobSpecInput[], now: number, options: InsertJobOptions = {}): Promise<{ jobs: JobRecord[]; replayed: boolean }> {
    checkIdempotencyKey(userKey, fingerprint);
    checkTime('insertJobsOnce: now', now);
    const owner = options.owner === undefined ? null : checkUserName(options.owner, 'store: insertJobsOnce: owner');
    const key = scopedIdempotencyKey(userKey, owner);
    const find = this.stmt('SELECT fingerprint, job_ids FROM idempotency_keys WHERE key = ?');
    const insert = this.stmt('INSERT INTO jobs (spec, priority, submitted_at, owner) VALUES (?, ?, ?, ?)');
    const record = this.stmt('INSERT INTO idempotency_keys (key, fingerprint, job_ids, created_at) VALUES (?, ?, ?, ?)');
    const byId = this.stmt('SELECT * FROM jobs WHERE id = ?');
    // One transaction (SQLite runs them one at a time): the key is never recorded without its
    // jobs, nor are jobs queued twice under one key.
    const once = this.db.transaction((): { ids: string[]; replayed: boolean } => {
      const row = find.get(key) as { fingerprint: string; job_ids: string } | undefined;
      if (row) return { ids: replayedIds(userKey, fingerprint, row), replayed: true };
      const ids = specs.map((spec, i) => {
        const { json, priority } = encodeSpec(spec, i);
        return String(insert.run(json, priority, now, owner).lastInsertRowid);
      });
      record.run(key, fingerprint, ids.join(','), now);
      return { ids, replayed: false };
    });
    const { ids, replayed } = this.run(once);
    const rows = ids.map((id) => this.run(() => byId.get(Number(id)) as JobRow | undefined)).filter((r): r is JobRow => r !== undefined);
    return { jobs: rows.map(jobFromRow), replayed };
  }

  async getJob(id: string): Promise<JobRecord | null> {
    const n = parseJobId(id);
    const statement = this.stmt('SELECT * FROM jobs WHERE id = ?');
    if (n === null) return null;
    const row = this.run(() => statement.get(n) as JobRow | undefined);
    return row ? jobFromRow(row) : null;
  }

  async listJobs(filter?: JobFilter): Promise<JobRecord[]> {
    const q = listJobsSql(checkFilter(filter), SQLITE);
    if (!q) return [];
    const statement = this.stmt(q.sql);
    return this.run(() => statement.all(...q.params) as JobRow[]).map(jobFromRow);
  }

  async updateJob(id: string, expectedVersion: number, patch: JobPatch): Promise<JobRecord | null> {
    const n = parseJobId(id);
    const q = updateJobSql(n, expectedVersion, patch, SQLITE);
    const statement = this.stmt(q.sql);
    if (n === null || !Number.isSafeInteger(expectedVersion)) return null;
    const row = this.run(() => this.returning<JobRow>(statement, q.params));
    return row ? jobFromRow(row) : null;
  }

  async countJobs(): Promise<{ state: JobState; priority: JobSpecInput['priority']; count: number }[]> {
    const statement = this.stmt('SELECT state, priority, COUNT(*) AS count FROM jobs GROUP BY state, priority');
    const rows = this.run(() => statement.all() as { state: JobState; priority: JobSpecInput['priority']; count: number }[]);
    return sortCounts(rows.map((r) => ({ state: r.state, priority: r.priority, count: r.count })));
  }

  async appendEvent(event: NewEvent): Promise<EventRecord> {
    const e = checkEvent(event);
    const statement = this.stmt('INSERT INTO events (time, type, job_id, data) VALUES (?, ?, ?, ?) RETURNING *');
    return this.run(() => {
      try {
        return eventFromRow(this.returning<EventRow>(statement, [e.time, e.type, e.jobId, e.data])!);
      } catch (err) {
        if (err instanceof Database.SqliteError && err.code === 'SQLITE_CONSTRAINT_FOREIGNKEY') throw missingEventJob(event.jobId);
        throw err;
      }
    });
  }

  async listEvents(afterSeq: number, limit = 1000): Promise<EventRecord[]> {
    checkListEvents(afterSeq, limit);
    const statement = this.stmt('SELECT * FROM events WHERE seq > ? ORDER BY seq LIMIT ?');
    return this.run(() => statement.all(afterSeq, limit) as EventRow[]).map(eventFromRow);
  }

  async getSetting(key: string): Promise<string | null> {
    checkSetting(key);
    const statement = this.stmt('SELECT value FROM settings WHERE key = ?');
    const row = this.run(() => statement.get(key) as { value: string } | undefined);
    return row?.value ?? null;
  }

  async putSetting(key: string, value: string): Promise<void> {
    checkSetting(key, value);
    const statement = this.stmt('INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value');
    this.run(() => statement.run(key, value));
  }

  async listUsers(): Promise<UserRecord[]> {
    const statement = this.stmt('SELECT * FROM users ORDER BY name');
    return this.run(() => statement.all() as UserRow[]).map(userFromRow);
  }

  async getUser(name: string): Promise<UserRecord | null> {
    const statement = this.stmt('SELECT * FROM users WHERE name = ?');
    const row = this.run(() => statement.get(name) as UserRow | undefined);
    return row ? userFromRow(row) : null;
  }

  async userByTokenHash(tokenHash: string): Promise<UserRecord | null> {
    const statement = this.stmt('SELECT * FROM users WHERE token_hash = ?');
    const row = this.run(() => statement.get(checkTokenHash(tokenHash)) as UserRow | undefined);
    return row ? userFromRow(row) : null;
  }

  async insertUser(user: NewUser, tokenHash: string, now: number): Promise<UserRecord> {
    checkTime('insertUser: now', now);
    const q = insertUserSql(user, tokenHash, now, SQLITE);
    const statement = this.stmt(q.sql);
    return this.run(() => {
      try {
        return userFromRow(this.returning<UserRow>(statement, q.params)!);
      } catch (err) {
        if (err instanceof Database.SqliteError && err.code === 'SQLITE_CONSTRAINT_PRIMARYKEY') throw userExists(user.name);
        throw err;
      }
    });
  }

  async updateUser(name: string, patch: UserPatch): Promise<UserRecord | null> {
    const q = updateUserSql(name, patch, SQLITE);
    if (q === null) return this.getUser(name);
    const statement = this.stmt(q.sql);
    const row = this.run(() => this.returning<UserRow>(statement, q.params));
    return row ? userFromRow(row) : null;
  }

  async deleteUser(name: string): Promise<boolean> {
    const statement = this.stmt('DELETE FROM users WHERE name = ?');
    return this.run(() => statement.run(name).changes > 0);
  }

  async putObservation(observation: WorkloadObservation): Promise<void> {
    const q = putObservationSql(observation, SQLITE);
    const statement = this.stmt(q.sql);
    this.run(() => statement.run(...q.params));
  }

  async listObservations(workload?: string): Promise<WorkloadObservation[]> {
    const q = listObservationsSql(workload, SQLITE);
    const statement = this.stmt(q.sql);
    return this.run(() => statement.all(...q.params) as ObservationRow[]).map(observationFromRow);
  }
}
