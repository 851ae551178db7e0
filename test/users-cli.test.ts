import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { hashToken } from '../src/server/users.js';
import { openStore } from '../src/store/open.js';
import { cli } from './run-cli.js';

/** `migpool users` against a data dir with no service running (what an operator does first). */
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function dataDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'migpool-users-cli-'));
  dirs.push(d);
  return join(d, 'data');
}

describe('migpool users, offline', () => {
  it("refuses a removed user's name while jobs of theirs are in the store: the new user would see them; --reuse-name gives them over", async () => {
    // Found in an attack round: `users remove alice`, then `users add alice` for someone else, and the
    // new alice listed the old one's jobs and read their logs (a job keeps its owner's name).
    const dir = dataDir();
    expect((await cli('users', 'add', 'alice', '--data-dir', dir)).code).toBe(0);
    const store = await openStore({ dataDir: dir });
    const id = await store
      .insertJobs([{ name: 'old', command: ['true'], env: {}, resources: { gpus: 1 }, priority: 'foreground', preemptible: false, retries: 0 }], 0, { owner: 'alice' })
      .then((jobs) => jobs[0]!.id)
      .finally(() => store.close());
    expect((await cli('users', 'remove', 'alice', '--data-dir', dir)).code).toBe(0);
    const again = await cli('users', 'add', 'alice', '--data-dir', dir);
    expect(again.code).toBe(2);
    expect(again.err).toBe(
      `migpool: user name "alice": the store holds jobs of an earlier user alice (job ${id} the newest), which the new user would see with their logs and checkpoints: choose another name, or pass --reuse-name to give them those jobs\n`,
    );
    expect((await cli('users', 'add', 'alice2', '--data-dir', dir)).code).toBe(0);
    const reused = await cli('users', 'add', 'alice', '--reuse-name', '--data-dir', dir);
    expect(reused.code, reused.err).toBe(0);
    // A name in use is still refused as taken.
    expect((await cli('users', 'add', 'alice', '--data-dir', dir)).err).toMatch(/^migpool: user "alice" already exists/);
  });

  it('creates the data dir and its admin with the first user; stores hashes only', async () => {
    const dir = dataDir();
    const r = await cli('users', 'add', 'alice', '--quota-gpus', '0.5', '--data-dir', dir, '--json');
    expect(r.code, r.err).toBe(0);
    const { user, token } = JSON.parse(r.out) as { user: Record<string, unknown>; token: string };
    expect(user).toMatchObject({ name: 'alice', admin: false, weight: 1, quotaGpus: 0.5, unixUser: null });
    const store = await openStore({ dataDir: dir });
    try {
      expect((await store.listUsers()).map((u) => [u.name, u.admin])).toEqual([
        ['admin', true],
        ['alice', false],
      ]);
      expect((await store.userByTokenHash(hashToken(token)))?.name).toBe('alice');
      expect((await store.userByTokenHash(hashToken(readFileSync(join(dir, 'token'), 'utf8').trim())))?.name).toBe('admin');
    } finally {
      await store.close();
    }
  });

  it("rotating an admin rewrites a token file that is no one's (deleted and made anew), not another user's", async () => {
    const dir = dataDir();
    const added = await cli('users', 'add', 'ops', '--admin', '--data-dir', dir);
    expect(added.code).toBe(0);
    expect(added.err).not.toContain('mapped to no Unix account');
    rmSync(join(dir, 'token'));
    const listed = await cli('users', 'list', '--data-dir', dir);
    expect(listed.code).toBe(0);
    // No service on this data dir: no column of what users hold now.
    expect(listed.out).toMatch(/^NAME\s+ADMIN\s+WEIGHT\s+QUOTA-GPUS\s+UNIX-USER\s+CREATED$/m);
    const stale = readFileSync(join(dir, 'token'), 'utf8').trim();
    const alice = await cli('users', 'add', 'alice', '--data-dir', dir);
    // As root (CI), the user hears at once that a service run as root refuses the jobs of a user mapped to no account.
    if (process.getuid?.() === 0) expect(alice.err).toContain('migpool users: note: alice is mapped to no Unix account, so a service run as root refuses their jobs until `migpool users set alice --unix-user ACCOUNT`');
    expect(alice.code).toBe(0);
    const notAdmin = JSON.parse((await cli('users', 'rotate', 'alice', '--data-dir', dir, '--json')).out) as { tokenFile: boolean };
    expect(notAdmin.tokenFile).toBe(false);
    expect(readFileSync(join(dir, 'token'), 'utf8').trim()).toBe(stale);
    const ops = JSON.parse((await cli('users', 'rotate', 'ops', '--data-dir', dir, '--json')).out) as { token: string; tokenFile: boolean };
    expect(ops.tokenFile).toBe(true);
    expect(readFileSync(join(dir, 'token'), 'utf8').trim()).toBe(ops.token);
    // Now the file is ops's: rotating admin leaves it alone.
    const admin = JSON.parse((await cli('users', 'rotate', 'admin', '--data-dir', dir, '--json')).out) as { tokenFile: boolean };
    expect(admin.tokenFile).toBe(false);
    expect(readFileSync(join(dir, 'token'), 'utf8').trim()).toBe(ops.token);
  });

  it('says what is wrong in one line, exit 2', async () => {
    const dir = dataDir();
    const cases: [string[], RegExp][] = [
      // A data dir with no pool in it (a mistyped --data-dir) is not made into one.
      [['users', 'rotate', 'admin'], /is not a migpool data dir \(it has no migpool\.db\): pass --data-dir with the one `migpool serve` uses/],
      [['users', 'add', '9lives'], /^migpool: user name "9lives": use a letter/],
      [['users', 'add', 'a', '--weight', '0'], /^migpool: --weight 0: give a positive number/],
      [['users', 'add', 'a', '--quota-gpus', 'lots'], /^migpool: --quota-gpus 'lots' is not a number/],
      [['users', 'add', 'a', '--weight', '1e300'], /^migpool: --weight 1e\+300 is too large: give a positive number \(1 is the default share; 2 is twice that\) up to 1000000$/m],
      [['users', 'add', 'a', '--weight', '1e400'], /^migpool: --weight '1e400' is too large$/m],
      [['users', 'add', 'a', '--weight', '0x10'], /^migpool: --weight '0x10' is not a number: give a decimal such as 2 or 0.5/],
      [['users', 'add', 'a', '--unix-user', 'not valid'], /^migpool: --unix-user "not valid": give a Unix account name/],
      [['users', 'add', 'zed'], /^/],
      [['users', 'rotate', 'nobody'], /^migpool: no user 'nobody': the users are admin, zed/],
      [['users', 'remove', 'admin'], /^migpool: 'admin' is the last admin/],
    ];
    for (const [args, message] of cases) {
      const r = await cli(...args, '--data-dir', dir);
      if (args.join(' ') === 'users add zed') {
        expect(r.code, r.err).toBe(0);
        continue;
      }
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.err, args.join(' ')).toMatch(message);
      expect(r.err.trimEnd().split('\n'), args.join(' ')).toHaveLength(1);
    }
  });
});

describe('migpool users with a --data-dir that is a file', () => {
  it('says so in one line, exit 2, and leaves the file alone', async () => {
    const file = `${dataDir()}.txt`;
    writeFileSync(file, 'my notes\n');
    for (const args of [['add', 'bob'], ['list'], ['set', 'bob', '--weight', '2']]) {
      const r = await cli('users', ...args, '--data-dir', file);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.err).toBe(`migpool: --data-dir '${file}' is a file, not a directory; give a directory\n`);
    }
    expect(readFileSync(file, 'utf8')).toBe('my notes\n');
  });
});

describe("migpool users with a migpool.db that is not migpool's", () => {
  it('says so, naming the file and the fix, writes no token beside it, and leaves it alone', async () => {
    const dir = dataDir();
    mkdirSync(dir);
    writeFileSync(join(dir, 'migpool.db'), 'not a database\n');
    for (const args of [['add', 'bob'], ['list']]) {
      const r = await cli('users', ...args, '--data-dir', dir);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.err).toBe(`migpool: ${join(dir, 'migpool.db')} is not a migpool database: SQLite says 'file is not a database' (it is another kind of file, or a damaged database); move it away (or restore it from a backup) and start again, or pass --data-dir with another directory\n`);
    }
    expect(readdirSync(dir)).toEqual(['migpool.db']);
    expect(readFileSync(join(dir, 'migpool.db'), 'utf8')).toBe('not a database\n');
  });
});

describe('migpool users set', () => {
  it("changes a user's weight, quota, admin right and account; 'none' clears", async () => {
    const dir = dataDir();
    expect((await cli('users', 'add', 'alice', '--quota-gpus', '2', '--data-dir', dir)).code).toBe(0);
    const set = await cli('users', 'set', 'alice', '--weight', '3', '--quota-gpus', 'none', '--admin', '--unix-user', 'root', '--data-dir', dir, '--json');
    expect(set.code, set.err).toBe(0);
    expect((JSON.parse(set.out) as { user: unknown }).user).toMatchObject({ name: 'alice', weight: 3, quotaGpus: null, admin: true, unixUser: 'root' });
    const back = await cli('users', 'set', 'alice', '--no-admin', '--unix-user', 'none', '--quota-gpus', '0.5', '--data-dir', dir, '--json');
    expect((JSON.parse(back.out) as { user: unknown }).user).toMatchObject({ weight: 3, quotaGpus: 0.5, admin: false, unixUser: null });
    // Both --admin and --no-admin: refused, whichever comes last, and nothing changes.
    for (const order of [['--admin', '--no-admin'], ['--no-admin', '--admin']]) {
      const both = await cli('users', 'set', 'alice', ...order, '--weight', '5', '--data-dir', dir);
      expect(both.code).toBe(2);
      expect(both.err).toBe("migpool: --admin and --no-admin both given for 'alice': give one (--admin makes them an admin, --no-admin a plain user)\n");
    }
    expect(JSON.parse((await cli('users', 'list', '--data-dir', dir, '--json')).out)).toMatchObject({ users: [{ name: 'admin' }, { name: 'alice', admin: false, weight: 3 }] });
    const nothing = await cli('users', 'set', 'alice', '--data-dir', dir);
    expect(nothing.code).toBe(2);
    expect(nothing.err).toMatch(/^migpool: nothing to change for 'alice'/);
    const last = await cli('users', 'set', 'admin', '--no-admin', '--data-dir', dir);
    expect(last.code).toBe(2);
    expect(last.err).toMatch(/last admin/);
  });
});
