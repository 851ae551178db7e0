import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { MigpoolError } from '../errors.js';
import { storeConformance } from '../../test/store-conformance.js';
import type { Migration } from './migration.js';
import { POSTGRES_MIGRATIONS } from './postgres-schema.js';
import { openPostgresStore, redactUrl } from './postgres.js';
import type { Store } from './types.js';

const url = process.env['MIGPOOL_TEST_POSTGRES_URL'];

async function failure(promise: Promise<unknown>): Promise<MigpoolError> {
  const e: unknown = await promise.then(
    () => new Error('expected a failure'),
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(MigpoolError);
  expect((e as Error).message.split('\n')).toHaveLength(1);
  return e as MigpoolError;
}

describe('PostgreSQL store without a server', () => {
  it('refuses a URL that is not a PostgreSQL one as BAD_INPUT, hiding the password', () => {
    for (const bad of ['not a url', 'mysql://root:hunter2@db/migpool', 'postgres://u:hunter2@h:99999/db']) {
      let e: unknown;
      try {
        openPostgresStore(bad);
      } catch (err) {
        e = err;
      }
      expect(e).toBeInstanceOf(MigpoolError);
      expect((e as MigpoolError).code).toBe('BAD_INPUT');
      expect((e as MigpoolError).message).toContain('postgres://USER:PASSWORD@HOST:5432/DATABASE');
      expect((e as MigpoolError).message).not.toContain('hunter2');
    }
  });

  it('reports an unreachable server as RUNTIME naming the URL without its password', async () => {
    const store = openPostgresStore('postgres://migpool:hunter2@127.0.0.1:1/migpool');
    const e = await failure(store.init());
    await store.close();
    expect(e.code).toBe('RUNTIME');
    expect(e.message).toContain('PostgreSQL postgres://migpool:***@127.0.0.1:1/migpool: cannot connect (');
    expect(e.message).toContain('check that the server is running');
    expect(e.message).not.toContain('hunter2');
  });

  it('redacts passwords in the user part and the query', () => {
    expect(redactUrl('postgresql://u:p%40ss@db.example:5432/x?password=q&sslmode=require')).toBe('postgresql://u:***@db.example:5432/x?password=***&sslmode=require');
    expect(redactUrl('postgres://u@h/x')).toBe('postgres://u@h/x');
  });
});

if (url === undefined) {
  const reason = 'set MIGPOOL_TEST_POSTGRES_URL (e.g. by running .ci/postgres.sh) to run it';
  console.warn(`PostgreSQL store conformance skipped: ${reason}`);
  describe.skip(`PostgreSQL store conformance: ${reason}`, () => {
    it('needs a server', () => {});
  });
} else {
  const serverUrl = url;
  const run = `migpool_test_${process.pid}_${randomBytes(3).toString('hex')}`;
  const schemas: string[] = [];
  const schemaOf = new WeakMap<Store, string>();

  function openIn(schema: string, migrations?: readonly Migration[]): Store {
    const store = openPostgresStore(serverUrl, { schema, ...(migrations ? { migrations } : {}) });
    schemaOf.set(store, schema);
    return store;
  }

  /** A fresh schema of this run; all are dropped when the file is done. */
  function newSchema(): string {
    const schema = `${run}_${schemas.length + 1}`;
    schemas.push(schema);
    return schema;
  }

  async function admin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
    const client = new pg.Client({ connectionString: serverUrl });
    await client.connect();
    try {
      return await work(client);
    } finally {
      await client.end();
    }
  }

  afterAll(async () => {
    await admin(async (c) => {
      for (const schema of schemas) await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    });
  });

  storeConformance('PostgreSQL', async () => openIn(newSchema()), { reopen: async (store) => openIn(schemaOf.get(store)!) });

  describe('PostgreSQL migrations', () => {
    const base = POSTGRES_MIGRATIONS;
    const broken: Migration = { version: base.length + 1, name: 'half a change', sql: 'CREATE TABLE extra (x INTEGER); ALTER TABLE jobs ADD COLUMN nope NOPE;' };
    const tables = (schema: string): Promise<string[]> =>
      admin(async (c) => (await c.query<{ t: string }>('SELECT tablename AS t FROM pg_tables WHERE schemaname = $1 ORDER BY 1', [schema])).rows.map((r) => r.t));

    it('leaves nothing half-applied when a migration fails', async () => {
      const schema = newSchema();
      const fresh = openIn(schema, [...base, broken]);
      const e = await failure(fresh.init());
      await fresh.close();
      expect(e.code).toBe('RUNTIME');
      expect(e.message).toMatch(/schema migration \d+ \(half a change\) failed and was rolled back/);
      expect(await tables(schema)).toEqual([]);

      const current = openIn(schema);
      await current.init();
      await current.close();
      const upgrade = openIn(schema, [...base, broken]);
      await failure(upgrade.init());
      await upgrade.close();
      expect(await tables(schema)).toEqual(['events', 'idempotency_keys', 'jobs', 'schema_migrations', 'settings', 'users', 'workload_observations']);
    });

    it('upgrades workload observations written before owners were kept: they stay shared (migration 6)', async () => {
      const schema = newSchema();
      const v5 = openIn(schema, base.slice(0, 5));
      await v5.init();
      await v5.close();
      await admin((c) => c.query(`INSERT INTO ${schema}.workload_observations (job_id, attempt, workload, gpu_model, resource, samples_per_second, peak_memory_mib, out_of_memory, time) VALUES (7, 1, 'small', 'A100-SXM4-40GB', '1g.5gb', 900, NULL, TRUE, 1700000000000)`));
      const now = openIn(schema);
      await now.init();
      expect(await now.listObservations()).toEqual([{ workload: 'small', jobId: '7', attempt: 1, gpuModel: 'A100-SXM4-40GB', resource: '1g.5gb', samplesPerSecond: 900, peakMemoryMiB: null, outOfMemory: true, time: 1_700_000_000_000, owner: null, shared: true }]);
      await now.close();
    });

    it('applies migrations once when several stores start at the same moment', async () => {
      const schema = newSchema();
      const stores = Array.from({ length: 4 }, () => openIn(schema));
      await Promise.all(stores.map((s) => s.init()));
      await Promise.all(stores.map((s) => s.close()));
      const applied = await admin(async (c) => (await c.query<{ version: number }>(`SELECT version FROM ${schema}.schema_migrations ORDER BY 1`)).rows);
      expect(applied.map((r) => r.version)).toEqual(base.map((m) => m.version));
    });

    it('refuses a database written by a newer migpool', async () => {
      const schema = newSchema();
      const newer = openIn(schema, [...base, { version: base.length + 1, name: 'future', sql: 'CREATE TABLE future (x INTEGER)' }]);
      await newer.init();
      await newer.close();
      const old = openIn(schema);
      const e = await failure(old.init());
      await old.close();
      expect(e.code).toBe('RUNTIME');
      expect(e.message).toContain(`schema is at version ${base.length + 1} but this migpool knows versions up to ${base.length}`);
    });

    it('reports a wrong password as RUNTIME without printing it', async () => {
      const u = new URL(serverUrl);
      u.password = 'wrong-password-xyz';
      const store = openPostgresStore(u.toString());
      const e = await failure(store.init());
      await store.close();
      expect(e.code).toBe('RUNTIME');
      expect(e.message).toContain('cannot connect (password authentication failed');
      expect(e.message).not.toContain('wrong-password-xyz');
    });
  });
}
