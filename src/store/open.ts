import { chmodSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { badInput, MigpoolError } from '../errors.js';
import { openPostgresStore, redactUrl } from './postgres.js';
import { checkSqliteStoreFile, openSqliteStore } from './sqlite.js';
import type { Store } from './types.js';

/**
 * Makes the database and its WAL and shared-memory files (SQLite names them `-wal`, `-shm`) readable
 * by their owner only: they hold jobs' env values, and the data dir may be passable for jobs run as
 * other users (see control/run-as.ts). SQLite creates the -wal and -shm files with the database
 * file's permissions (findCreateFileMode in SQLite's os_unix.c; seen here: a 0600 database got
 * 0600 -wal and -shm files). Missing files are left alone.
 */
function privateFiles(db: string): void {
  for (const path of [db, `${db}-wal`, `${db}-shm`]) {
    try {
      chmodSync(path, 0o600);
    } catch {
      // Not there (yet): SQLite gives it the database's mode when it makes it.
    }
  }
}

export interface OpenStoreOptions {
  /** The service's data folder; the SQLite store lives in `<dataDir>/migpool.db`. Created if missing. */
  readonly dataDir: string;
  /** A postgres:// or postgresql:// URL: use PostgreSQL instead of SQLite. */
  readonly databaseUrl?: string;
}

/**
 * Refuses, without writing anything, a data dir whose `migpool.db` is not migpool's SQLite database
 * (another kind of file, a damaged database, another program's): commands call it before they
 * write other files there. Nothing to check for PostgreSQL, or when there is no such file yet.
 * @throws MigpoolError BAD_INPUT naming the file and what to do (move it away, restore a backup,
 * or another --data-dir); the file is left as it is
 */
export function checkStoreFile(opts: OpenStoreOptions): void {
  if (opts.databaseUrl === undefined) checkSqliteStoreFile(join(opts.dataDir, 'migpool.db'));
}

/**
 * Opens and initialises the store `migpool serve` uses: SQLite in the data folder unless a
 * PostgreSQL URL is given. BAD_INPUT for a URL of another scheme or a file that is not migpool's
 * SQLite database (see checkStoreFile), RUNTIME when the database cannot be opened or reached.
 */
export async function openStore(opts: OpenStoreOptions): Promise<Store> {
  let store: Store;
  if (opts.databaseUrl !== undefined) {
    if (!/^postgres(ql)?:\/\//i.test(opts.databaseUrl)) {
      throw badInput(
        `database URL ${redactUrl(opts.databaseUrl)}: only postgres:// and postgresql:// URLs are accepted; fix it, or leave it out to use SQLite in the data dir`,
      );
    }
    store = openPostgresStore(opts.databaseUrl);
  } else {
    try {
      mkdirSync(opts.dataDir, { recursive: true });
    } catch (e) {
      throw new MigpoolError('RUNTIME', `data dir ${opts.dataDir}: cannot create it (${(e as Error).message}); choose a writable folder`);
    }
    store = openSqliteStore(join(opts.dataDir, 'migpool.db'));
    privateFiles(join(opts.dataDir, 'migpool.db'));
  }
  try {
    await store.init();
  } catch (e) {
    await store.close().catch(() => {});
    throw e;
  }
  return store;
}
