import { mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MigpoolError } from '../errors.js';
import type { UnixAccount } from '../exec/unix-user.js';
import type { UserRecord } from '../store/types.js';
import { attemptIdentity, rootRunRefusal, runAsFor } from './run-as.js';

const users: Record<string, UserRecord> = {
  carol: { name: 'carol', admin: false, weight: 1, quotaGpus: null, unixUser: 'carol-unix', createdAt: 0 },
  alice: { name: 'alice', admin: false, weight: 1, quotaGpus: null, unixUser: null, createdAt: 0 },
  ghost: { name: 'ghost', admin: false, weight: 1, quotaGpus: null, unixUser: 'gone', createdAt: 0 },
  ops: { name: 'ops', admin: true, weight: 1, quotaGpus: null, unixUser: null, createdAt: 0 },
};
const store = { getUser: async (name: string) => users[name] ?? null };
const me: UnixAccount = { name: 'carol-unix', uid: process.getuid!(), gid: process.getgid!(), home: '/home/carol' };
const lookup = async (name: string) => (name === 'carol-unix' ? me : null);
const asRoot = { isRoot: () => true, lookup };

describe('who a job runs as', () => {
  it("the owner's Unix account when the service is root and the owner is mapped; else the service's own user", async () => {
    expect(await runAsFor(store, 'carol', asRoot)).toEqual({ account: me, env: { HOME: '/home/carol', USER: 'carol-unix', LOGNAME: 'carol-unix' } });
    expect(await runAsFor(store, 'carol', { ...asRoot, isRoot: () => false })).toBeNull();
    expect(await runAsFor(store, 'carol', { ...asRoot, executorRunsAsOthers: false })).toBeNull();
    expect(await runAsFor(store, 'alice', asRoot)).toBeNull();
    expect(await runAsFor(store, null, asRoot)).toBeNull();
    expect(await runAsFor(store, 'removed-user', asRoot)).toBeNull();
  });

  it("as root with unmappedUsersAsRoot false, a user who is no admin runs only as their own account: no job of theirs runs as root", async () => {
    const strict = { ...asRoot, unmappedUsersAsRoot: false };
    const refused = (owner: string) => runAsFor(store, owner, strict).then(() => 'ran', (e: unknown) => (e instanceof MigpoolError ? `${e.code}: ${e.message}` : String(e)));
    expect(await refused('alice')).toBe(
      "RUNTIME: user alice is mapped to no Unix account, and this service runs as root: their job would run as root and could read the admin's token; an admin maps them with `migpool users set alice --unix-user ACCOUNT` (or starts migpool serve with --unmapped-users-as-root)",
    );
    // A job queued before its user was removed does not run as root either.
    expect(await refused('removed-user')).toMatch(/^RUNTIME: user removed-user was removed, and this service runs as root: .* after adding them again/);
    expect(await rootRunRefusal(store, 'alice', strict)).toMatch(/^user alice is mapped to no Unix account/);
    // Mapped users, admins, jobs of no owner, a service not run as root, an executor that cannot switch users: as before.
    expect(await runAsFor(store, 'carol', strict)).toMatchObject({ account: me });
    expect(await runAsFor(store, 'ops', strict)).toBeNull();
    expect(await runAsFor(store, null, strict)).toBeNull();
    expect(await runAsFor(store, 'alice', { ...strict, isRoot: () => false })).toBeNull();
    // An executor that runs every job as the service's account (Slurm) would run anyone's as root, mapped or not.
    for (const owner of ['alice', 'carol']) {
      expect(await rootRunRefusal(store, owner, { ...strict, executorRunsAsOthers: false })).toBe(
        `user ${owner} is no admin, and this service runs as root with an executor that runs every job as the service's own account (sbatch submits it as root): their job would run as root; run migpool serve as an unprivileged account (or start it with --unmapped-users-as-root)`,
      );
    }
    expect(await rootRunRefusal(store, 'ops', { ...strict, executorRunsAsOthers: false })).toBeNull();
    expect(await runAsFor(store, 'carol', { ...strict, executorRunsAsOthers: false, unmappedUsersAsRoot: true })).toBeNull();
  });

  it('never falls back to root when the mapped account is missing', async () => {
    const e = await runAsFor(store, 'ghost', asRoot).catch((err: unknown) => err);
    expect(e).toBeInstanceOf(MigpoolError);
    expect((e as MigpoolError).code).toBe('RUNTIME');
    expect((e as Error).message).toBe("user ghost's Unix account 'gone' does not exist on this machine: create it (useradd), or map the user to another one");
  });
});

describe('the folders of an attempt run as another account', () => {
  let dataDir = '';
  afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

  it('makes the path passable, the checkpoint and work folders the account\'s and private; keeps a given workdir', async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'migpool-runas-'));
    mkdirSync(join(dataDir, 'jobs', '7'), { recursive: true, mode: 0o700 });
    const paths = { dataDir, attemptDir: join(dataDir, 'jobs', '7', '1'), checkpointDir: join(dataDir, 'jobs', '7', 'checkpoint'), workdir: undefined };
    const who = await attemptIdentity(store, 'carol', paths, asRoot);
    expect(who).toEqual({ workdir: join(paths.attemptDir, 'work'), env: { HOME: '/home/carol', USER: 'carol-unix', LOGNAME: 'carol-unix' }, runAs: { uid: me.uid, gid: me.gid } });
    const mode = (p: string) => statSync(p).mode & 0o777;
    expect(mode(dataDir)).toBe(0o711);
    expect(mode(join(dataDir, 'jobs'))).toBe(0o711);
    expect(mode(join(dataDir, 'jobs', '7'))).toBe(0o711);
    expect(mode(paths.checkpointDir)).toBe(0o700);
    expect(mode(who.workdir)).toBe(0o700);
    expect((await attemptIdentity(store, 'carol', { ...paths, workdir: '/srv/project' }, asRoot)).workdir).toBe('/srv/project');
    expect(await attemptIdentity(store, 'alice', paths, asRoot)).toEqual({ workdir: paths.attemptDir, env: {} });
  });
});
