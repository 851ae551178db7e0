import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** A Unix account, as the system's user database has it. */
export interface UnixAccount {
  readonly name: string;
  readonly uid: number;
  readonly gid: number;
  readonly home: string;
}

/**
 * One line of the passwd format, `name:password:UID:GID:GECOS:directory:shell` (passwd(5)), as
 * `getent passwd NAME` prints it and /etc/passwd holds it; null when it is not one.
 */
export function parsePasswdLine(line: string): UnixAccount | null {
  const f = line.trim().split(':');
  if (f.length < 7) return null;
  const uid = Number(f[2]);
  const gid = Number(f[3]);
  if (f[0] === '' || !Number.isInteger(uid) || uid < 0 || !Number.isInteger(gid) || gid < 0) return null;
  return { name: f[0]!, uid, gid, home: f[5]! };
}

/**
 * Looks a Unix account up by name: `getent passwd NAME` (glibc's getent(1), which asks every
 * source nsswitch.conf names, LDAP and SSSD included; exit status 2 means "not found"), else,
 * where getent is missing, /etc/passwd. Null when there is no such account.
 */
export async function lookupUnixUser(name: string): Promise<UnixAccount | null> {
  try {
    const { stdout } = await run('getent', ['passwd', '--', name], { timeout: 10_000 });
    const account = parsePasswdLine(stdout.split('\n')[0] ?? '');
    return account?.name === name ? account : null;
  } catch (e) {
    const err = e as NodeJS.ErrnoException & { code?: unknown };
    if (err.code !== 'ENOENT') return null;
  }
  let text: string;
  try {
    text = await readFile('/etc/passwd', 'utf8');
  } catch {
    return null;
  }
  for (const line of text.split('\n')) {
    const account = parsePasswdLine(line);
    if (account?.name === name) return account;
  }
  return null;
}

/** True when this process runs as root (and so may start processes as other users). */
export function isRoot(): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}
