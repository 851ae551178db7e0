/**
 * Variables of the service's own environment that are its credentials, which no job gets: a job
 * runs for one user, and what would let it act as the service would let that user act as the
 * admin.
 *
 * - `MIGPOOL_TOKEN`: the client commands' token (README, "The service"); an admin who keeps it
 *   in their shell and starts `migpool serve` there would hand the admin's token to every job.
 * - `PGPASSWORD`: libpq's password variable, which node-postgres also reads when the `--database`
 *   URL names none (pg's lib/connection-parameters.js reads `PG` + the field's name from
 *   process.env); with it a job could rewrite the store's jobs and users.
 * - `MIGPOOL_DATABASE`: the `--database` URL (src/cli/database-option.ts), where README tells the
 *   operator to put the store's password (`postgres://user:secret@host/db`): the same store as
 *   `PGPASSWORD` opens.
 *
 * A job's own spec may still set either (the runner adds the spec's env after this one).
 */
export const SERVICE_SECRET_ENV: readonly string[] = ['MIGPOOL_TOKEN', 'PGPASSWORD', 'MIGPOOL_DATABASE'];

/** `env` without {@link SERVICE_SECRET_ENV}: the environment a job starts from. */
export function withoutServiceSecrets(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const kept = { ...env };
  for (const name of SERVICE_SECRET_ENV) delete kept[name];
  return kept;
}
