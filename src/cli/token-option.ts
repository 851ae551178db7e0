/**
 * What keeps a `--token` given on the command line out of `ps`.
 *
 * A process's arguments are readable by every user of the machine (/proc/PID/cmdline, proc(5)),
 * so `migpool logs -f 12 --token <token>` shows the user's token to anyone who runs `ps` while it
 * follows the log, and with it their jobs, logs and env. Like `--database`'s password
 * (database-option.ts), the process's title is replaced at once by one with the token written
 * as `***` (process.title, which on Linux writes over the memory /proc/PID/cmdline reads). What
 * `ps` showed before that, it showed: `$MIGPOOL_TOKEN` keeps it out entirely.
 */

/**
 * When `token` stands in the process's arguments (`--token T` or `--token=T`), retitles the
 * process with it written as `***` and returns true; false otherwise (e.g. it came from
 * $MIGPOOL_TOKEN, or the CLI runs inside another program).
 */
export function hideTokenFromPs(token: string, argv: readonly string[] = process.argv, retitle: (title: string) => void = (t) => (process.title = t)): boolean {
  let found = false;
  const shown = argv.slice(2).map((a) => {
    if (a === token) {
      found = true;
      return '***';
    }
    if (a === `--token=${token}`) {
      found = true;
      return '--token=***';
    }
    return a;
  });
  if (found) retitle(['migpool', ...shown].join(' '));
  return found;
}
