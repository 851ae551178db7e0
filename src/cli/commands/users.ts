import { existsSync } from 'node:fs';
import { readFile, rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { Command } from 'commander';
import { badInput, MigpoolError } from '../../errors.js';
import { parseDecimal } from '../../decimal-number.js';
import { lookupUnixUser } from '../../exec/unix-user.js';
import { checkDirectoryPath, defaultDataDir, loadOrCreateToken, tokenPath, writeTokenTemp } from '../../server/files.js';
import { adoptTokenAsAdmin, hashToken, newToken } from '../../server/users.js';
import { checkStoreFile, openStore } from '../../store/open.js';
import type { Store, UserRecord } from '../../store/types.js';
import { checkQuota, checkUnixUser, checkUserName, checkWeight } from '../../store/users.js';
import { writeJson, type Io } from '../io.js';
import { renderTable } from '../table.js';
import { checkDatabaseUrl, databaseOption, hidePasswordFromPs } from '../database-option.js';
import { heldGpusNow } from '../held-gpus.js';
import { gpusText } from '../../sched/shares.js';

interface StoreFlags {
  dataDir?: string;
  database?: string;
  json?: boolean;
}

interface AddFlags extends StoreFlags {
  admin?: boolean;
  quotaGpus?: string;
  weight?: string;
  unixUser?: string;
  reuseName?: boolean;
}

/** Adds the flags that name the service's state: its data dir, and its database when not SQLite there. */
function withStoreOptions(cmd: Command): Command {
  return cmd
    .option('--data-dir <dir>', 'the data dir of `migpool serve` (default $MIGPOOL_DATA_DIR or ~/.local/share/migpool)')
    .addOption(databaseOption('postgres://... when `migpool serve` keeps its state in PostgreSQL (as its --database)'));
}

/**
 * Opens the service's store (the same one `migpool serve` uses; a running service sees the change
 * at its next request) after making sure the data dir's token is the admin's, so that adding users
 * before the first start does not leave the pool without an admin.
 */
async function withStore<T>(f: StoreFlags, io: Io, work: (store: Store, dataDir: string) => Promise<T>, create = false): Promise<T> {
  checkDatabaseUrl(f.database);
  const warning = hidePasswordFromPs(f.database, 'users');
  if (warning !== null) io.err(`migpool users: ${warning}`);
  const dataDir = f.dataDir ?? defaultDataDir();
  checkDirectoryPath(dataDir, '--data-dir');
  // Only `users add` may start a pool: elsewhere a mistyped --data-dir would make a new one.
  if (!create && f.database === undefined && !existsSync(join(dataDir, 'migpool.db'))) {
    throw badInput(`${dataDir} is not a migpool data dir (it has no migpool.db): pass --data-dir with the one \`migpool serve\` uses, or start a pool there with \`migpool users add\` or \`migpool serve\``);
  }
  // A migpool.db that is not migpool's is refused before a token file is written beside it.
  checkStoreFile({ dataDir, ...(f.database !== undefined ? { databaseUrl: f.database } : {}) });
  const token = await loadOrCreateToken(dataDir);
  const store = await openStore({ dataDir, ...(f.database !== undefined ? { databaseUrl: f.database } : {}) });
  try {
    await adoptTokenAsAdmin(store, token, Date.now());
    return await work(store, dataDir);
  } finally {
    await store.close();
  }
}

function parseNumber(text: string | undefined, flag: string): number | undefined {
  return text === undefined ? undefined : parseDecimal(text, flag);
}

async function mustExist(store: Store, name: string): Promise<UserRecord> {
  const user = await store.getUser(name);
  if (!user) {
    const known = (await store.listUsers()).map((u) => u.name);
    throw badInput(`no user '${name}': the users are ${known.join(', ') || 'none'} (\`migpool users list\`)`);
  }
  return user;
}

/** Replaces the data dir's token file (atomically, mode 0600) when it still holds the token hashed `oldHash`. */
async function replaceTokenFile(dataDir: string, oldHash: string, token: string): Promise<boolean> {
  const path = tokenPath(dataDir);
  let current: string;
  try {
    current = (await readFile(path, 'utf8')).trim();
  } catch {
    return false;
  }
  if (hashToken(current) !== oldHash) return false;
  let temp: string | null = null;
  try {
    temp = await writeTokenTemp(dataDir, token);
    await rename(temp, path);
  } catch (e) {
    if (temp !== null) await unlink(temp).catch(() => undefined);
    throw new MigpoolError('RUNTIME', `cannot replace the token file ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}; the new token is stored, write it there by hand`);
  }
  return true;
}

function describeUser(u: UserRecord): string {
  return `${u.admin ? 'admin, ' : ''}weight ${u.weight}, ${u.quotaGpus === null ? 'no quota' : `quota ${u.quotaGpus} GPUs`}${u.unixUser ? `, jobs run as Unix user ${u.unixUser}` : ''}`;
}

/**
 * `migpool users add|list|remove|rotate`: the users of `migpool serve`, kept in its store (run on
 * the service's machine, as the user that runs it). A token is printed once and stored hashed.
 */
export function registerUsers(program: Command, io: Io): void {
  const users = program.command('users').description('the users of `migpool serve`: who may submit and see jobs, with their share of the pool (kept in the data dir\'s store)');

  withStoreOptions(users.command('add').description("add a user and print their token (once: only its hash is kept)").argument('<name>', 'user name (a letter, then letters, digits, _ . -)'))
    .option('--admin', 'may see and cancel every job (others see their own only)')
    .option('--quota-gpus <n>', "most GPUs' worth of compute slices their running jobs may hold (fractions allowed: a 3g slice of an A100 is 3/7); default none")
    .option('--weight <w>', 'their share of the pool under contention, relative to others (default 1)')
    .option('--unix-user <account>', 'when the service runs as root, their jobs run as this Unix account, and their log and checkpoint files are its')
    .option('--reuse-name', 'the name owned jobs of a user removed before: give those jobs (their logs, checkpoints and env names) to the new user')
    .option('--json', 'print {user, token} as JSON')
    .action(async (name: string, f: AddFlags) => {
      checkUserName(name, 'user name');
      const weight = parseNumber(f.weight, '--weight');
      if (weight !== undefined) checkWeight(weight, '--weight');
      const quotaGpus = parseNumber(f.quotaGpus, '--quota-gpus');
      if (quotaGpus !== undefined) checkQuota(quotaGpus, '--quota-gpus');
      if (f.unixUser !== undefined) {
        checkUnixUser(f.unixUser, '--unix-user');
        if ((await lookupUnixUser(f.unixUser)) === null) throw badInput(`--unix-user '${f.unixUser}': no such account on this machine (getent passwd ${f.unixUser} finds none): create it (useradd) or leave the flag out`);
      }
      const token = newToken();
      const user = await withStore(f, io, async (store) => {
        // Jobs keep their owner's name when the user is removed: a new user of that name would own them.
        // (A name in use is refused by insertUser, with its own message.)
        const reused = f.reuseName !== true && (await store.getUser(name)) === null;
        const [earlier] = reused ? await store.listJobs({ owner: name, limit: 1 }) : [];
        if (earlier !== undefined) {
          throw badInput(
            `user name "${name}": the store holds jobs of an earlier user ${name} (job ${earlier.id} the newest), which the new user would see with their logs and checkpoints: choose another name, or pass --reuse-name to give them those jobs`,
          );
        }
        return store.insertUser(
          { name, admin: f.admin === true, ...(weight !== undefined ? { weight } : {}), ...(quotaGpus !== undefined ? { quotaGpus } : {}), ...(f.unixUser !== undefined ? { unixUser: f.unixUser } : {}) },
          hashToken(token),
          Date.now(),
        );
      }, true);
      if (f.json) return writeJson(io, { user, token });
      io.err(`migpool users: added ${name} (${describeUser(user)}); their token follows, shown this once (only its hash is kept): give it to them for --token or $MIGPOOL_TOKEN`);
      // Run as root, this machine's service most likely runs as root too, and there it refuses the
      // jobs of a user mapped to no account (their jobs would run as root and read the data dir).
      if (!user.admin && user.unixUser == null && process.getuid?.() === 0) {
        io.err(`migpool users: note: ${name} is mapped to no Unix account, so a service run as root refuses their jobs until \`migpool users set ${name} --unix-user ACCOUNT\` (or it runs with --unmapped-users-as-root)`);
      }
      io.out(token);
    });

  withStoreOptions(users.command('list').description("list the users, with the GPUs' worth each holds now when the service on the data dir answers"))
    .option('--json', 'print {users} as JSON (each with heldGpus when the service answers)')
    .action(async (f: StoreFlags) => {
      const { list, held } = await withStore(f, io, async (store, dataDir) => ({ list: await store.listUsers(), held: await heldGpusNow(dataDir) }));
      // What each user holds now, when the service on this data dir answers (else left out).
      const heldBy = (name: string): number => held?.get(name) ?? 0;
      if (f.json) return writeJson(io, { users: held === null ? list : list.map((u) => ({ ...u, heldGpus: heldBy(u.name) })) });
      io.out(
        renderTable(
          ['NAME', 'ADMIN', 'WEIGHT', 'QUOTA-GPUS', ...(held !== null ? ['HELD-GPUS'] : []), 'UNIX-USER', 'CREATED'],
          list.map((u) => [
            u.name,
            u.admin ? 'yes' : 'no',
            String(u.weight),
            u.quotaGpus === null ? '-' : String(u.quotaGpus),
            ...(held !== null ? [gpusText(heldBy(u.name))] : []),
            u.unixUser ?? '-',
            new Date(u.createdAt).toISOString().slice(0, 19).replace('T', ' '),
          ]),
        ),
      );
    });

  withStoreOptions(users.command('remove').description('remove a user: their token stops working at once; their jobs keep running and keep their owner').argument('<name>', 'user name'))
    .action(async (name: string, f: StoreFlags) => {
      await withStore(f, io, async (store) => {
        const user = await mustExist(store, name);
        if (user.admin && (await store.listUsers()).filter((u) => u.admin).length === 1) {
          throw badInput(`'${name}' is the last admin: add another admin first (\`migpool users add NAME --admin\`), or keep it and rotate its token`);
        }
        await store.deleteUser(name);
      });
      io.err(`migpool users: removed ${name}`);
    });

  // Commander lets the last of --admin and --no-admin win; both given is a slip to point out.
  const adminFlags = new Set<string>();
  withStoreOptions(users.command('set').description("change a user's share, quota, admin right or Unix account (a running service uses it from its next pass)").argument('<name>', 'user name'))
    .on('option:admin', () => adminFlags.add('--admin'))
    .on('option:no-admin', () => adminFlags.add('--no-admin'))
    .option('--weight <w>', 'their share of the pool under contention')
    .option('--quota-gpus <n>', "most GPUs' worth of compute slices, or 'none'")
    .option('--admin', 'make them an admin')
    .option('--no-admin', 'make them a plain user')
    .option('--unix-user <account>', "the Unix account their jobs run as, or 'none'")
    .option('--json', 'print the user as JSON')
    .action(async (name: string, f: StoreFlags & { weight?: string; quotaGpus?: string; admin?: boolean; unixUser?: string }) => {
      if (adminFlags.size > 1) throw badInput(`--admin and --no-admin both given for '${name}': give one (--admin makes them an admin, --no-admin a plain user)`);
      const weight = parseNumber(f.weight, '--weight');
      if (weight !== undefined) checkWeight(weight, '--weight');
      const quotaGpus = f.quotaGpus === 'none' ? null : parseNumber(f.quotaGpus, '--quota-gpus');
      if (quotaGpus !== undefined) checkQuota(quotaGpus, '--quota-gpus');
      const unixUser = f.unixUser === 'none' ? null : f.unixUser;
      if (typeof unixUser === 'string') {
        checkUnixUser(unixUser, '--unix-user');
        if ((await lookupUnixUser(unixUser)) === null) throw badInput(`--unix-user '${unixUser}': no such account on this machine (getent passwd ${unixUser} finds none): create it (useradd), or give 'none'`);
      }
      const patch = { ...(weight !== undefined ? { weight } : {}), ...(quotaGpus !== undefined ? { quotaGpus } : {}), ...(f.admin !== undefined ? { admin: f.admin } : {}), ...(unixUser !== undefined ? { unixUser } : {}) };
      if (Object.keys(patch).length === 0) throw badInput(`nothing to change for '${name}': give --weight, --quota-gpus, --admin or --no-admin, or --unix-user`);
      const user = await withStore(f, io, async (store) => {
        const before = await mustExist(store, name);
        if (before.admin && f.admin === false && (await store.listUsers()).filter((u) => u.admin).length === 1) {
          throw badInput(`'${name}' is the last admin: make another user an admin first`);
        }
        return (await store.updateUser(name, patch))!;
      });
      if (f.json) return writeJson(io, { user });
      io.err(`migpool users: ${name} now ${describeUser(user)}`);
    });

  withStoreOptions(users.command('rotate').description("give a user a new token (printed once); the old one stops working at once. The data dir's token file follows when it held the old one").argument('<name>', 'user name'))
    .option('--json', 'print {user, token, tokenFile} as JSON (tokenFile: the data dir token file was rewritten)')
    .action(async (name: string, f: StoreFlags) => {
      const token = newToken();
      const { user, tokenFile } = await withStore(f, io, async (store, dataDir) => {
        const before = await mustExist(store, name);
        // The data dir's token file holds the admin's token for the CLI: it follows when it was this
        // user's, or when it is no one's (deleted and made anew) and this user is an admin.
        const fileHash = await currentHashOf(dataDir);
        const fileOwner = fileHash === null ? null : ((await store.userByTokenHash(fileHash))?.name ?? null);
        const holdsFile = fileHash !== null && (fileOwner === name || (fileOwner === null && before.admin));
        const updated = (await store.updateUser(name, { tokenHash: hashToken(token) }))!;
        return { user: updated, tokenFile: holdsFile ? await replaceTokenFile(dataDir, fileHash, token) : false };
      });
      if (f.json) return writeJson(io, { user, token, tokenFile });
      io.err(`migpool users: new token for ${name}${tokenFile ? ` (also written to ${tokenPath(f.dataDir ?? defaultDataDir())})` : ''}; the old one no longer works. It follows, shown this once:`);
      io.out(token);
    });
}

/** The hash of the token in the data dir's token file, or null. */
async function currentHashOf(dataDir: string): Promise<string | null> {
  try {
    return hashToken((await readFile(tokenPath(dataDir), 'utf8')).trim());
  } catch {
    return null;
  }
}

