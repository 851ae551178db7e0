import { MigpoolError } from '../errors.js';

/**
 * One numbered schema change. Versions run 1, 2, 3, ... with no gap; a released migration never
 * changes, a new one is appended. Each adapter keeps its own list in its own SQL dialect, and
 * records the versions it applied in a `schema_migrations` table.
 */
export interface Migration {
  readonly version: number;
  /** What it changes, in a few words (stored beside the version). */
  readonly name: string;
  readonly sql: string;
}

/**
 * The migrations a database at schema `current` (0: empty) still needs, in order. Throws RUNTIME
 * when the database is newer than the list, i.e. written by a newer migpool.
 */
export function pendingMigrations(migrations: readonly Migration[], current: number, where: string): Migration[] {
  migrations.forEach((m, i) => {
    if (m.version !== i + 1) throw new Error(`${where}: migration list out of order: entry ${i} has version ${m.version}, expected ${i + 1}`);
  });
  if (current > migrations.length) {
    throw new MigpoolError(
      'RUNTIME',
      `${where}: database schema is at version ${current} but this migpool knows versions up to ${migrations.length}; upgrade migpool, or use another database`,
      { current, known: migrations.length },
    );
  }
  return migrations.slice(current);
}

/** The one-line error for a migration that failed and was rolled back. */
export function migrationFailed(where: string, migration: Migration, cause: unknown): MigpoolError {
  const reason = cause instanceof Error ? cause.message : String(cause);
  return new MigpoolError(
    'RUNTIME',
    `${where}: schema migration ${migration.version} (${migration.name}) failed and was rolled back, the database is unchanged: ${reason.split('\n')[0]}`,
    { version: migration.version },
  );
}
