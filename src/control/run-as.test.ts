import { mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MigpoolError } from '../errors.js';
import type { UnixAccount } from '../exec/unix-user.js';
import type { UserRecord } from '../store/types.js';
import { attemptIdentity, runAsFor } from './run-as.js';

const users: Record<string, UserRecord> = {
  carol: { name: 'carol', admin: false, weight: 1, quotaGpus: null, unixUser: 'carol-unix', createdAt: 0 },
  alice: { name: 'alice', admin: false, weight: 1, quotaGpus: null, unixUser: null, createdAt: 0 },
  ghost: { name: 'ghost', admin: false, weight: 1, quotaGpus: null, unixUser: 'gone', createdAt: 0 },
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
