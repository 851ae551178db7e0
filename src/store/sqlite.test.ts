import Database from 'better-sqlite3';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseJobSpec } from '../jobs/job-spec.js';
import { MigpoolError } from '../errors.js';
import { storeConformance } from '../../test/store-conformance.js';
import type { Migration } from './migration.js';
import { checkStoreFile, openStore } from './open.js';
import { SQLITE_MIGRATIONS } from './sqlite-schema.js';
import { openSqliteStore } from './sqlite.js';
import type { Store } from './types.js';

const dir = mkdtempSync(join(tmpdir(), 'migpool-store-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let files = 0;
const paths = new WeakMap<Store, string>();
function openFile(path = join(dir, `store-${++files}.db`)): Store {
  const store = openSqliteStore(path);
  paths.set(store, path);
  return store;
}

storeConformance('SQLite file', async () => openFile(), { reopen: async (store) => openFile(paths.get(store)) });
storeConformance('SQLite :memory:', async () => openSqliteStore(':memory:'));

function tables(path: string): string[] {
  const db = new Database(path, { readonly: true });
  try {
    return (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").all() as { name: string }[]).map((r) => r.name);
  } finally {
    db.close();
  }
}

function versions(path: string): number[] {
  const db = new Database(path, { readonly: true });
  try {
    return (db.prepare('SELECT version FROM schema_migrations ORDER BY version').all() as { version: number }[]).map((r) => r.version);
  } finally {
    db.close();
  }
}

async function failure(promise: Promise<unknown>): Promise<MigpoolError> {
  const e: unknown = await promise.then(
    () => new Error('expected a failure'),
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(MigpoolError);
  return e as MigpoolError;
}

describe('SQLite migrations', () => {
  const base = SQLITE_MIGRATIONS;
  const broken: Migration = { version: base.length + 1, name: 'half a change', sql: 'CREATE TABLE extra (x INTEGER); ALTER TABLE jobs ADD COLUMN nope NOPE NOPE;' };

  it('applies each migration once and records it', async () => {
    const path = join(dir, 'migrate-once.db');
    for (let i = 0; i < 2; i++) {
      const store = openSqliteStore(path);
      await store.init();
      await store.close();
    }
    expect(versions(path)).toEqual(base.map((m) => m.version));
    expect(tables(path)).toEqual(['events', 'idempotency_keys', 'jobs', 'schema_migrations', 'settings', 'users', 'workload_observations']);
  });

  it('upgrades workload observations written before owners were kept: they stay shared (migration 6)', async () => {
    const path = join(dir, 'observations-v5.db');
    const v5 = openSqliteStore(path, { migrations: base.slice(0, 5) });
    await v5.init();
    await v5.close();
    const db = new Database(path);
    db.prepare("INSERT INTO workload_observations (job_id, attempt, workload, gpu_model, resource, samples_per_second, peak_memory_mib, out_of_memory, time) VALUES (7, 1, 'small', 'A100-SXM4-40GB', '1g.5gb', 900, NULL, 1, 1700000000000)").run();
    db.close();
    const now = openSqliteStore(path);
    await now.init();
    expect(await now.listObservations()).toEqual([{ workload: 'small', jobId: '7', attempt: 1, gpuModel: 'A100-SXM4-40GB', resource: '1g.5gb', samplesPerSecond: 900, peakMemoryMiB: null, outOfMemory: true, time: 1_700_000_000_000, owner: null, shared: true }]);
    await now.close();
    expect(versions(path)).toEqual(base.map((m) => m.version));
  });

  it('leaves nothing half-applied when a migration fails', async () => {
    const path = join(dir, 'migrate-broken.db');
    const fresh = openSqliteStore(path, { migrations: [...base, broken] });
    const e = await failure(fresh.init());
    await fresh.close();
    expect(e.code).toBe('RUNTIME');
    expect(e.message).toMatch(/schema migration \d+ \(half a change\) failed and was rolled back/);
    expect(e.message.split('\n')).toHaveLength(1);
    expect(tables(path)).toEqual([]);

    const current = openSqliteStore(path);
    await current.init();
    await current.insertJob(parseJobSpec({ name: 'kept', command: ['true'] }), 1);
    await current.close();

    const upgrade = openSqliteStore(path, { migrations: [...base, broken] });
    await failure(upgrade.init());
    await upgrade.close();
    expect(tables(path)).toEqual(['events', 'idempotency_keys', 'jobs', 'schema_migrations', 'settings', 'users', 'workload_observations']);
    expect(versions(path)).toEqual(base.map((m) => m.version));

    const reopened = openSqliteStore(path);
    await reopened.init();
    expect((await reopened.listJobs()).map((j) => j.spec.name)).toEqual(['kept']);
    await reopened.close();
  });

  it('refuses a database written by a newer migpool', async () => {
    const path = join(dir, 'migrate-newer.db');
    const newer = openSqliteStore(path, { migrations: [...base, { version: base.length + 1, name: 'future', sql: 'CREATE TABLE future (x INTEGER)' }] });
    await newer.init();
    await newer.close();
    const old = openSqliteStore(path);
    const e = await failure(old.init());
    await old.close();
    expect(e.code).toBe('RUNTIME');
    expect(e.message).toContain(`schema is at version ${base.length + 1} but this migpool knows versions up to ${base.length}`);
  });

  it('reports a file it cannot open as one-line RUNTIME', () => {
    let e: unknown;
    try {
      openSqliteStore(join(dir, 'no-such-folder', 'x.db'));
    } catch (err) {
      e = err;
    }
    expect(e).toBeInstanceOf(MigpoolError);
    expect((e as MigpoolError).code).toBe('RUNTIME');
    expect((e as MigpoolError).message).toMatch(/no-such-folder.*cannot open it/);
  });

  it('keeps the file in WAL mode', async () => {
    const path = join(dir, 'pragmas.db');
    await openSqliteStore(path).close();
    const db = new Database(path, { readonly: true });
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    db.close();
  });
});

describe('openStore', () => {
  it('opens SQLite in the data dir, creating it, and initialises it', async () => {
    const dataDir = join(dir, 'data', 'nested');
    const store = await openStore({ dataDir });
    expect((await store.insertJob(parseJobSpec({ name: 'a', command: ['true'] }), 1)).id).toBe('1');
    await store.close();
    expect(tables(join(dataDir, 'migpool.db'))).toContain('jobs');
  });

  it('refuses a database URL of another scheme, naming the accepted ones and hiding the password', async () => {
    for (const databaseUrl of ['mysql://root:hunter2@db/migpool', 'sqlite:///var/lib/migpool.db', 'localhost:5432']) {
      const e = await failure(openStore({ dataDir: dir, databaseUrl }));
      expect(e.code).toBe('BAD_INPUT');
      expect(e.message).toContain('only postgres:// and postgresql:// URLs are accepted');
      expect(e.message).not.toContain('hunter2');
    }
  });

  it("refuses a migpool.db that is not migpool's, naming it and the fix, and leaves it as it was", async () => {
    const fix = 'move it away (or restore it from a backup) and start again, or pass --data-dir with another directory';
    const text = join(dir, 'text-data');
    mkdirSync(text);
    writeFileSync(join(text, 'migpool.db'), 'not a database\n');
    for (const attempt of [() => checkStoreFile({ dataDir: text }), () => openStore({ dataDir: text })]) {
      const e = await failure(Promise.resolve().then(attempt));
      expect(e.code).toBe('BAD_INPUT');
      expect(e.message).toBe(`${join(text, 'migpool.db')} is not a migpool database: SQLite says 'file is not a database' (it is another kind of file, or a damaged database); ${fix}`);
    }
    expect(readFileSync(join(text, 'migpool.db'), 'utf8')).toBe('not a database\n');
    expect(readdirSync(text)).toEqual(['migpool.db']);

    const foreign = join(dir, 'foreign-data');
    mkdirSync(foreign);
    const other = new Database(join(foreign, 'migpool.db'));
    other.exec('CREATE TABLE photos (id INTEGER)');
    other.close();
    const before = readFileSync(join(foreign, 'migpool.db'));
    const e = await failure(openStore({ dataDir: foreign }));
    expect(e.message).toBe(`${join(foreign, 'migpool.db')} is another program's SQLite database, not migpool's (its tables: photos; no schema_migrations); ${fix}`);
    expect(readFileSync(join(foreign, 'migpool.db')).equals(before)).toBe(true);
    expect(tables(join(foreign, 'migpool.db'))).toEqual(['photos']);

    // migpool's own database, and none yet, pass.
    const ours = join(dir, 'ours-data');
    await (await openStore({ dataDir: ours })).close();
    expect(() => checkStoreFile({ dataDir: ours })).not.toThrow();
    expect(() => checkStoreFile({ dataDir: join(dir, 'none-yet') })).not.toThrow();
  });
});

describe('a write whose commit fails', () => {
  // The commit of a single statement fails after its RETURNING row was produced: as the WAL write
  // does on a full disk (SQLITE_FULL, seen on the live service on a 4 MiB tmpfs), here a deferred
  // foreign key that a trigger breaks, so that the test needs no full file system.
  const failingCommit: Migration = {
    version: SQLITE_MIGRATIONS.length + 1,
    name: 'commit fails for a job succeeded, user weight 9, event gpu-reconfiguring',
    sql: `CREATE TABLE commit_guard (job_id INTEGER REFERENCES jobs(id) DEFERRABLE INITIALLY DEFERRED);
      CREATE TRIGGER job_guard AFTER UPDATE ON jobs WHEN NEW.state = 'succeeded' BEGIN INSERT INTO commit_guard VALUES (-1); END;
      CREATE TRIGGER user_guard AFTER UPDATE ON users WHEN NEW.weight = 9 BEGIN INSERT INTO commit_guard VALUES (-1); END;
      CREATE TRIGGER event_guard AFTER INSERT ON events WHEN NEW.type = 'gpu-reconfiguring' BEGIN INSERT INTO commit_guard VALUES (-1); END;`,
  };

  it('is an error, never a row the database rolled back (no job the store still has running taken for ended)', async () => {
    const store = openSqliteStore(join(dir, 'failing-commit.db'), { migrations: [...SQLITE_MIGRATIONS, failingCommit] });
    await store.init();
    try {
      const [job] = await store.insertJobs([parseJobSpec({ name: 'a', command: ['true'] })], 1000);
      const running = (await store.updateJob(job!.id, job!.version, { state: 'running', attempt: 1 }))!;
      const e = await failure(store.updateJob(running.id, running.version, { state: 'succeeded', exitCode: 0 }));
      expect(e.code).toBe('RUNTIME');
      expect(e.message).toMatch(/SQLITE_CONSTRAINT_FOREIGNKEY/);
      expect(await store.getJob(running.id)).toMatchObject({ state: 'running', version: running.version });

      await store.insertUser({ name: 'bob' }, 'a'.repeat(64), 1000);
      await failure(store.updateUser('bob', { weight: 9 }));
      expect(await store.getUser('bob')).toMatchObject({ weight: 1 });

      await failure(store.appendEvent({ time: 1000, type: 'gpu-reconfiguring', jobId: null, data: {} }));
      expect((await store.listEvents(0)).map((ev) => ev.type)).not.toContain('gpu-reconfiguring');
    } finally {
      await store.close();
    }
  });
});
