/**
 * The `--database` flag of `serve`, `users` and `workloads --fit`, and what keeps its password out
 * of `ps`.
 *
 * A process's arguments are readable by every user of the machine (/proc/PID/cmdline, proc(5)),
 * so `--database postgres://user:secret@host/db` shows the password to anyone who runs `ps`. The
 * flag also reads MIGPOOL_DATABASE (an environment is readable only by its owner and root), and
 * node-postgres reads PGPASSWORD when the URL has no password
 * (https://node-postgres.com/features/connecting#environment-variables). When the password is
 * on the command line anyway, the process's title is replaced at once by one without it
 * (process.title, which on Linux writes over the memory /proc/PID/cmdline reads), and the user is
 * told to use one of the other two. What `ps` showed before that, it showed.
 */
import { Option } from 'commander';
import { badInput } from '../errors.js';

/** The environment variable `--database` falls back to. */
export const DATABASE_ENV = 'MIGPOOL_DATABASE';

/** `--database <url>`, read from MIGPOOL_DATABASE when not given. */
export function databaseOption(description: string): Option {
  return new Option('--database <url>', `${description} (or $${DATABASE_ENV}; a password goes in $PGPASSWORD or $${DATABASE_ENV}, not on the command line, where \`ps\` shows it)`).env(DATABASE_ENV);
}

/** The URL with its password, if any, written as `***`; the text as it is when it is not a URL. */
export function withoutPassword(url: string): string {
  try {
    const u = new URL(url);
    if (u.password === '') return url;
    u.password = '***';
    return u.toString();
  } catch {
    return url;
  }
}

/**
 * When `url` carries a password and stands in the process's arguments, retitles the process
 * without it and returns the one-line warning to print; null otherwise.
 */
export function hidePasswordFromPs(url: string | undefined, command: string, argv: readonly string[] = process.argv, retitle: (title: string) => void = (t) => (process.title = t)): string | null {
  if (url === undefined) return null;
  const hidden = withoutPassword(url);
  if (hidden === url) return null;
  const i = argv.findIndex((a) => a === url || a === `--database=${url}`);
  if (i < 0) return null;
  retitle(`migpool ${command} --database ${hidden}`);
  return `--database carries a password, which other users of this machine can read with ps; give it in $PGPASSWORD (or the whole URL in $${DATABASE_ENV}) instead`;
}

/**
 * Refuses, before anything is opened, a database URL that is not PostgreSQL's, naming where it
 * came from: `--database` when it stands in the arguments, else $MIGPOOL_DATABASE (commander's
 * `.env` fallback), so a stale variable is not mistaken for a flag the user never typed.
 * @throws MigpoolError BAD_INPUT with the URL (password hidden) and the fix
 */
export function checkDatabaseUrl(url: string | undefined, argv: readonly string[] = process.argv): void {
  if (url === undefined || /^postgres(ql)?:\/\//i.test(url)) return;
  const fromFlag = argv.some((a) => a === url || a === `--database=${url}`);
  const shown = withoutPassword(url);
  throw badInput(
    fromFlag
      ? `--database ${shown}: only postgres:// and postgresql:// URLs are accepted; fix it, or leave --database out to use SQLite in the data dir`
      : `$${DATABASE_ENV} is ${shown}: only postgres:// and postgresql:// URLs are accepted; fix it, or unset ${DATABASE_ENV} to use SQLite in the data dir`,
  );
}
