import { chmod, chown, mkdir, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { MigpoolError } from '../errors.js';
import { isRoot, lookupUnixUser, type UnixAccount } from '../exec/unix-user.js';
import type { Store } from '../store/types.js';

/**
 * Jobs of users mapped to a Unix account (`migpool users add NAME --unix-user ACCOUNT`) run as
 * that account when the service runs as root: the job's process gets the account's uid and gid
 * (and no supplementary group of the service's), its log files and checkpoint folder are the
 * account's, and HOME, USER and LOGNAME are the account's.
 *
 * The files stay where they are (`<data dir>/jobs/<id>/...`): the data dir, `jobs/` and the job's
 * folder get search permission for others (0711: pass through, not list), so that the account
 * reaches its checkpoint folder; everything of the service's in there is private (the token and
 * the database 0600, `launch.json` 0600) or harmless (pids, exit codes). The attempt's folder and
 * the runner's files stay root's: a job must not be able to swap what the root runner reads.
 */

/** Who a job runs as, and where. */
export interface RunAs {
  readonly account: UnixAccount;
  /** Environment the job gets for its account (HOME, USER, LOGNAME). */
  readonly env: Readonly<Record<string, string>>;
}

/** Options of {@link runAsFor}, for tests. */
export interface RunAsOptions {
  /** False when the executor cannot run a job as another account (Executor.runsAsOthers) [true]. */
  readonly executorRunsAsOthers?: boolean;
  readonly isRoot?: () => boolean;
  readonly lookup?: (name: string) => Promise<UnixAccount | null>;
  /**
   * Whether a job of a user who is no admin and is mapped to no Unix account (or was removed)
   * may run as root when the service does [true; `migpool serve` says false unless
   * `--unmapped-users-as-root`]: as root it can read the data dir, the admin's token included.
   */
  readonly unmappedUsersAsRoot?: boolean;
}

/**
 * Why `owner`'s jobs may not run on a service that runs as root, or null when they may: a user
 * who is no admin, mapped to no Unix account (or removed since), or whose jobs go to an executor
 * that cannot switch users (Slurm), would run as root, which reads the data dir's token (the
 * admin's) and the store. Admins' jobs and jobs of no owner run as root
 * as before (an admin holds the pool already); so does everyone's with `unmappedUsersAsRoot`.
 */
export async function rootRunRefusal(store: Pick<Store, 'getUser'>, owner: string | null | undefined, options: RunAsOptions = {}): Promise<string | null> {
  if (!owner || options.unmappedUsersAsRoot !== false || !(options.isRoot ?? isRoot)()) return null;
  const user = await store.getUser(owner);
  if (user?.admin === true) return null;
  // An executor that cannot switch users (Slurm: sbatch runs a job as whoever submits it) runs every job as root here, mapped or not.
  if (options.executorRunsAsOthers === false) {
    return `user ${owner} is no admin, and this service runs as root with an executor that runs every job as the service's own account (sbatch submits it as root): their job would run as root; run migpool serve as an unprivileged account (or start it with --unmapped-users-as-root)`;
  }
  if (user?.unixUser) return null;
  const who = user === null ? `user ${owner} was removed` : `user ${owner} is mapped to no Unix account`;
  return `${who}, and this service runs as root: their job would run as root and could read the admin's token; an admin maps them with \`migpool users set ${owner} --unix-user ACCOUNT\`${user === null ? ' after adding them again' : ''} (or starts migpool serve with --unmapped-users-as-root)`;
}

/**
 * The account a job of `owner` runs as: null when the service does not run as root (it cannot
 * switch users), its executor cannot run jobs as others, the job has no owner, or the owner is
 * mapped to no account. RUNTIME when the
 * owner's account does not exist: the job is never run as root in its place; RUNTIME too when the
 * owner may not run as root (see {@link rootRunRefusal}).
 */
export async function runAsFor(store: Pick<Store, 'getUser'>, owner: string | null | undefined, options: RunAsOptions = {}): Promise<RunAs | null> {
  const refusal = await rootRunRefusal(store, owner, options);
  if (refusal !== null) throw new MigpoolError('RUNTIME', refusal);
  if (!owner || options.executorRunsAsOthers === false || !(options.isRoot ?? isRoot)()) return null;
  const user = await store.getUser(owner);
  if (!user?.unixUser) return null;
  const account = await (options.lookup ?? lookupUnixUser)(user.unixUser);
  if (account === null) {
    throw new MigpoolError('RUNTIME', `user ${owner}'s Unix account '${user.unixUser}' does not exist on this machine: create it (useradd), or map the user to another one`);
  }
  return { account, env: { HOME: account.home, USER: account.name, LOGNAME: account.name } };
}

/** Adds search permission for others (o+x, g+x) to a folder, keeping the rest of its mode. */
async function passable(dir: string): Promise<void> {
  const mode = (await stat(dir)).mode & 0o7777;
  if ((mode & 0o011) !== 0o011) await chmod(dir, mode | 0o011);
}

/** A folder made (if missing) and given to `account`, private to it (0700). */
async function ownFolder(dir: string, account: UnixAccount): Promise<void> {
  await mkdir(dir, { recursive: true });
  await chown(dir, account.uid, account.gid);
  await chmod(dir, 0o700);
}

/**
 * Prepares the folders of an attempt that runs as `runAs`: the path from the data dir down to the
 * job's folder passable, the checkpoint folder the account's, and, for a job that names no
 * workdir, a `work` folder of the account's inside the attempt's folder. Returns the workdir to
 * use. RUNTIME with the path when a change fails.
 */
export async function prepareRunAs(runAs: RunAs, paths: { readonly dataDir: string; readonly attemptDir: string; readonly checkpointDir: string; readonly workdir: string | undefined }): Promise<string> {
  const jobDir = dirname(paths.checkpointDir);
  let at = paths.dataDir;
  try {
    for (const dir of [paths.dataDir, dirname(jobDir), jobDir]) {
      at = dir;
      await passable(dir);
    }
    at = paths.attemptDir;
    await mkdir(paths.attemptDir, { recursive: true });
    await passable(paths.attemptDir);
    at = paths.checkpointDir;
    await ownFolder(paths.checkpointDir, runAs.account);
    if (paths.workdir !== undefined) return paths.workdir;
    const work = join(paths.attemptDir, 'work');
    at = work;
    await ownFolder(work, runAs.account);
    return work;
  } catch (e) {
    throw new MigpoolError('RUNTIME', `cannot prepare ${at} for a job run as ${runAs.account.name}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
}

/** What an attempt's launch takes from its owner: workdir, environment, and the account to run as. */
export interface AttemptIdentity {
  readonly workdir: string;
  readonly env: Readonly<Record<string, string>>;
  /** Absent: the service's own user. */
  readonly runAs?: { readonly uid: number; readonly gid: number };
}

/**
 * Who an attempt of `owner`'s job runs as (see {@link runAsFor}) with its folders prepared
 * (see {@link prepareRunAs}); for a job run as the service's own user, the spec's workdir or the
 * attempt's folder, and nothing else.
 */
export async function attemptIdentity(
  store: Pick<Store, 'getUser'>,
  owner: string | null | undefined,
  paths: { readonly dataDir: string; readonly attemptDir: string; readonly checkpointDir: string; readonly workdir: string | undefined },
  options: RunAsOptions = {},
): Promise<AttemptIdentity> {
  const runAs = await runAsFor(store, owner, options);
  if (runAs === null) return { workdir: paths.workdir ?? paths.attemptDir, env: {} };
  return { workdir: await prepareRunAs(runAs, paths), env: runAs.env, runAs: { uid: runAs.account.uid, gid: runAs.account.gid } };
}
