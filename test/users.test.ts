import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runMigpool, startServe, UNMAPPED_AS_ROOT, type ServeProcess } from './serve-harness.js';

/**
 * Two users share one real `migpool serve --simulate` (the built CLI in its own process): each
 * sees, cancels and reads the logs of their own jobs only, the admin (the data dir's first token)
 * sees all, tokens are managed with `migpool users` against the data dir while the service runs,
 * and a missing or wrong token is a one-line 401. As root, a job of a user mapped to a Unix
 * account runs as that account and its files are the account's.
 */
const node = process.execPath;
let dir: string;
let serve: ServeProcess | null = null;
let url = '';

const cli = (...args: string[]) => runMigpool(args, { ...process.env, MIGPOOL_TOKEN: '' });

async function addUser(name: string, ...flags: string[]): Promise<string> {
  const r = await cli('users', 'add', name, '--data-dir', dir, ...flags);
  expect(r.code, r.err).toBe(0);
  const token = r.out.trim();
  expect(token).toMatch(/^[0-9a-f]{64}$/);
  return token;
}

async function start(): Promise<void> {
  serve = await startServe({ dataDir: dir, args: ['--simulate', '2xA100-SXM4-40GB', '--policy', 'exclusive', ...UNMAPPED_AS_ROOT] });
  url = serve.url;
}

interface Job {
  id: string;
  state: string;
  owner: string | null;
  spec: { name: string; env: Record<string, string> };
}

async function api(token: string | null, method: string, path: string, body?: unknown): Promise<{ status: number; json: unknown; text: string }> {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { ...(token !== null ? { authorization: `Bearer ${token}` } : {}), ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  let json: unknown = null;
  try {
    json = JSON.parse(text);
  } catch {
    // Not JSON (an event stream): the text says it.
  }
  return { status: res.status, json, text };
}

async function until(token: string, id: string, states: string[], ms = 20_000): Promise<Job> {
  const t0 = Date.now();
  for (;;) {
    const j = (await api(token, 'GET', `/v1/jobs/${id}`)).json as Job;
    if (states.includes(j.state)) return j;
    if (Date.now() - t0 > ms) throw new Error(`job ${id} is ${j.state}, not ${states.join('|')}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The events /v1/events replays from the start for `token`, read for `ms`. */
async function events(token: string, ms: number): Promise<{ jobId: string | null }[]> {
  const controller = new AbortController();
  const res = await fetch(`${url}/v1/events?after=0&token=${token}`, { signal: controller.signal });
  expect(res.status).toBe(200);
  let text = '';
  const reader = res.body!.getReader();
  const stop = setTimeout(() => controller.abort(), ms);
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += Buffer.from(value).toString();
    }
  } catch {
    // Aborted: what was read is the answer.
  } finally {
    clearTimeout(stop);
  }
  return text
    .split('\n')
    .filter((l) => l.startsWith('data: '))
    .map((l) => JSON.parse(l.slice('data: '.length)) as { jobId: string | null });
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'migpool-users-'));
});

afterAll(async () => {
  await serve?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('two users share one migpool serve', () => {
  let admin = '';
  let alice = '';
  let bob = '';
  let aliceJob = '';
  let bobJob = '';

  it('users added before the first start; the data dir token is the admin', { timeout: 120_000 }, async () => {
    alice = await addUser('alice');
    bob = await addUser('bob', '--weight', '2', '--quota-gpus', '1.5');
    await start();
    admin = readFileSync(join(dir, 'token'), 'utf8').trim();
    expect((await api(admin, 'GET', '/v1/whoami')).json).toEqual({ name: 'admin', admin: true });
    expect((await api(alice, 'GET', '/v1/whoami')).json).toEqual({ name: 'alice', admin: false });
    const list = await cli('users', 'list', '--data-dir', dir, '--json');
    expect(list.code, list.err).toBe(0);
    expect((JSON.parse(list.out) as { users: unknown[] }).users).toEqual([
      expect.objectContaining({ name: 'admin', admin: true, weight: 1, quotaGpus: null }),
      expect.objectContaining({ name: 'alice', admin: false, weight: 1, quotaGpus: null }),
      expect.objectContaining({ name: 'bob', admin: false, weight: 2, quotaGpus: 1.5, unixUser: null }),
    ]);
    // Only hashes are kept: no token appears in the database file.
    const db = readFileSync(join(dir, 'migpool.db'));
    for (const t of [admin, alice, bob]) expect(db.includes(Buffer.from(t))).toBe(false);
    expect(statSync(join(dir, 'migpool.db')).mode & 0o777).toBe(0o600);
  });

  it('each sees, reads and cancels their own jobs only; the admin sees all', { timeout: 120_000 }, async () => {
    const say = (what: string) => [node, '-e', `console.log(${JSON.stringify(what)})`];
    const a = await api(alice, 'POST', '/v1/jobs', { name: 'a-job', command: say('alice output'), env: { ALICE_SECRET: 'alice-secret-value' } });
    expect(a.status).toBe(201);
    expect((a.json as Job).owner).toBe('alice');
    aliceJob = (a.json as Job).id;
    const b = await api(bob, 'POST', '/v1/jobs', { name: 'b-job', command: say('bob output'), env: { BOB_SECRET: 'bob-secret-value' } });
    bobJob = (b.json as Job).id;
    await until(alice, aliceJob, ['succeeded']);
    await until(bob, bobJob, ['succeeded']);

    const mine = (await api(alice, 'GET', '/v1/jobs')).json as { jobs: Job[] };
    expect(mine.jobs.map((j) => [j.id, j.owner])).toEqual([[aliceJob, 'alice']]);
    expect((await api(alice, 'GET', `/v1/jobs/${aliceJob}/logs?stream=stdout`)).text).toContain('alice output');

    // Another user's job is not there for alice: its record, env and logs answer 404, like a missing job.
    for (const path of [`/v1/jobs/${bobJob}`, `/v1/jobs/${bobJob}/logs?stream=stdout`, `/v1/jobs/${bobJob}/logs?stream=stderr`]) {
      const r = await api(alice, 'GET', path);
      expect(r.status, path).toBe(404);
      expect(r.text, path).not.toContain('bob output');
      expect(r.text, path).not.toContain('BOB_SECRET');
    }
    expect((await api(alice, 'GET', `/v1/jobs/${bobJob}`)).text).toBe((await api(alice, 'GET', '/v1/jobs/99999')).text.replace('99999', bobJob));
    const sleeper = await api(bob, 'POST', '/v1/jobs', { name: 'b-long', command: [node, '-e', 'setTimeout(() => {}, 30000)'] });
    const sleeperId = (sleeper.json as Job).id;
    expect((await api(alice, 'POST', `/v1/jobs/${sleeperId}/cancel`)).status).toBe(404);
    expect(((await api(bob, 'GET', `/v1/jobs/${sleeperId}`)).json as Job).state).not.toBe('cancelled');
    expect((await api(bob, 'POST', `/v1/jobs/${sleeperId}/cancel`)).status).toBe(200);

    // The admin sees everyone's jobs with their owners, or one user's with ?user=.
    const all = (await api(admin, 'GET', '/v1/jobs')).json as { jobs: Job[] };
    expect(all.jobs.map((j) => j.owner)).toEqual(['alice', 'bob', 'bob']);
    expect(((await api(admin, 'GET', '/v1/jobs?user=bob')).json as { jobs: Job[] }).jobs.map((j) => j.id)).toEqual([bobJob, sleeperId]);
    expect((await api(admin, 'GET', `/v1/jobs/${bobJob}/logs?stream=stdout`)).text).toContain('bob output');
    // ?user= is for admins: alice still gets her own.
    expect(((await api(alice, 'GET', '/v1/jobs?user=bob')).json as { jobs: Job[] }).jobs.map((j) => j.id)).toEqual([aliceJob]);

    // The event stream carries alice's jobs' events and none of bob's.
    const seen = await events(alice, 1500);
    const ids = new Set(seen.map((e) => e.jobId).filter((id) => id !== null));
    expect([...ids]).toEqual([aliceJob]);
    const adminIds = new Set((await events(admin, 1500)).map((e) => e.jobId));
    expect(adminIds).toContain(bobJob);
  });

  it('the CLI acts as the user whose token it is given, and shows the owner', { timeout: 120_000 }, async () => {
    const asAlice = await cli('jobs', '--data-dir', dir, '--token', alice);
    expect(asAlice.code, asAlice.err).toBe(0);
    const lines = asAlice.out.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID\s+NAME\s+USER\s+STATE/);
    expect(lines.slice(1).map((l) => l.split(/\s+/).slice(0, 3))).toEqual([[aliceJob, 'a-job', 'alice']]);
    const asAdmin = await cli('jobs', '--data-dir', dir);
    expect(asAdmin.out).toMatch(new RegExp(`^${bobJob}\\s+b-job\\s+bob\\s+succeeded`, 'm'));
    const logs = await cli('logs', bobJob, '--data-dir', dir, '--token', alice);
    expect(logs.code).toBe(2);
    expect(logs.err).not.toContain('bob output');
    expect(logs.err.trimEnd().split('\n')).toHaveLength(1);
  });

  it('a missing or wrong token is a one-line 401; rotate and remove take effect at once', { timeout: 120_000 }, async () => {
    const missing = await api(null, 'GET', '/v1/jobs');
    expect(missing.status).toBe(401);
    const m = (missing.json as { error: { code: string; message: string } }).error;
    expect(m.code).toBe('UNAUTHORIZED');
    expect(m.message).toMatch(/^GET \/v1\/jobs needs a token: send `Authorization: Bearer <token>`/);
    expect(m.message.split('\n')).toHaveLength(1);
    const wrong = await api('f'.repeat(64), 'POST', '/v1/jobs', { name: 'x', command: ['true'] });
    expect(wrong.status).toBe(401);
    expect((wrong.json as { error: { message: string } }).error.message).toMatch(/^POST \/v1\/jobs: the token sent is no user's token/);
    const viaCli = await cli('jobs', '--data-dir', dir, '--token', 'f'.repeat(64));
    expect(viaCli.code).toBe(2);
    expect(viaCli.err).toMatch(/^migpool: the migpool service at \S+ refused the token from --token: it is no user's token/);
    expect(viaCli.err.trimEnd().split('\n')).toHaveLength(1);

    const rotated = await cli('users', 'rotate', 'alice', '--data-dir', dir);
    expect(rotated.code, rotated.err).toBe(0);
    const fresh = rotated.out.trim();
    expect((await api(alice, 'GET', '/v1/jobs')).status).toBe(401);
    expect(((await api(fresh, 'GET', '/v1/jobs')).json as { jobs: Job[] }).jobs.map((j) => j.id)).toEqual([aliceJob]);
    alice = fresh;

    // Rotating the admin keeps the data dir's token file (what the CLI reads) current.
    const adminRotated = await cli('users', 'rotate', 'admin', '--data-dir', dir, '--json');
    const r = JSON.parse(adminRotated.out) as { token: string; tokenFile: boolean };
    expect(r.tokenFile).toBe(true);
    expect(readFileSync(join(dir, 'token'), 'utf8').trim()).toBe(r.token);
    expect(statSync(join(dir, 'token')).mode & 0o777).toBe(0o600);
    expect((await api(admin, 'GET', '/v1/jobs')).status).toBe(401);
    expect((await cli('jobs', '--data-dir', dir)).code).toBe(0);

    expect((await cli('users', 'remove', 'bob', '--data-dir', dir)).code).toBe(0);
    expect((await api(bob, 'GET', '/v1/jobs')).status).toBe(401);
    expect(((await api(r.token, 'GET', `/v1/jobs/${bobJob}`)).json as Job).owner).toBe('bob');
    const last = await cli('users', 'remove', 'admin', '--data-dir', dir);
    expect(last.code).toBe(2);
    expect(last.err).toMatch(/last admin/);
    const taken = await cli('users', 'add', 'alice', '--data-dir', dir);
    expect(taken.code).toBe(2);
    expect(taken.err).toMatch(/^migpool: user "alice" already exists/);
    const badQuota = await cli('users', 'add', 'carol', '--quota-gpus', '-1', '--data-dir', dir);
    expect(badQuota.code).toBe(2);
    expect(badQuota.err).toMatch(/--quota-gpus -1/);
  });

  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  const account = 'migpool-e2e-u20';
  if (!root) {
    const why = 'running jobs as their users\' Unix accounts needs the service to run as root';
    if (process.env['MIGPOOL_CI']) {
      it('runs a mapped user\'s job as their Unix account (CI runs as root)', () => {
        throw new Error(`${why}; CI must run as root`);
      });
    } else {
      console.warn(`users end-to-end: Unix-account test skipped: ${why}`);
      it.skip(`runs a mapped user's job as their Unix account: ${why}`, () => {});
    }
    return;
  }

  it("as root, refuses the jobs of a user who is no admin and has no Unix account: as root they would read the admin's token", { timeout: 120_000 }, async () => {
    // Found by a user's job on a live `migpool serve` run as root: `cat "$MIGPOOL_CHECKPOINT_DIR/../../../token"`
    // printed the admin's token into the job's log (uid 0), and with it every other user's jobs, logs and env.
    const strict = mkdtempSync(join(tmpdir(), 'migpool-users-root-'));
    const other = await startServe({ dataDir: strict, args: ['--simulate', '1xA100-SXM4-40GB', '--policy', 'exclusive'] });
    try {
      const add = async (...args: string[]) => (await cli('users', 'add', ...args, '--data-dir', strict)).out.trim();
      const eve = await add('eve');
      const ops = await add('ops', '--admin');
      const steal = { name: 'steal', command: ['/bin/sh', '-c', 'cat "$MIGPOOL_CHECKPOINT_DIR/../../../token"'] };
      const post = (tok: string, body: unknown) =>
        fetch(`${other.url}/v1/jobs`, { method: 'POST', headers: { authorization: `Bearer ${tok}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      const refused = await post(eve, steal);
      expect(refused.status).toBe(403);
      expect(((await refused.json()) as { error: { message: string } }).error.message).toBe(
        "user eve is mapped to no Unix account, and this service runs as root: their job would run as root and could read the admin's token; an admin maps them with `migpool users set eve --unix-user ACCOUNT` (or starts migpool serve with --unmapped-users-as-root)",
      );
      const cliRefused = await runMigpool(['submit', '--data-dir', strict, '--token', eve, '--', 'true']);
      expect(cliRefused.code).not.toBe(0);
      expect(cliRefused.err).toMatch(/^migpool: user eve is mapped to no Unix account, and this service runs as root: .* --unix-user ACCOUNT/);
      // Admins hold the pool already: theirs run as before.
      expect((await post(ops, { name: 'ok', command: ['true'] })).status).toBe(201);
    } finally {
      await other.stop();
      rmSync(strict, { recursive: true, force: true });
    }
  });

  it("as root, runs a mapped user's job as their Unix account, its log and checkpoint files theirs", { timeout: 120_000 }, async () => {
    let created = false;
    try {
      execFileSync('id', ['-u', account], { stdio: 'ignore' });
    } catch {
      // useradd(8): a system account without a home or a login shell, only for this test.
      execFileSync('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', account]);
      created = true;
    }
    try {
      const uid = Number(execFileSync('id', ['-u', account], { encoding: 'utf8' }).trim());
      const gid = Number(execFileSync('id', ['-g', account], { encoding: 'utf8' }).trim());
      const missing = await cli('users', 'add', 'dave', '--unix-user', 'no-such-account-u20', '--data-dir', dir);
      expect(missing.code).toBe(2);
      expect(missing.err).toMatch(/--unix-user 'no-such-account-u20': no such account/);
      const carol = await addUser('carol', '--unix-user', account);
      // /bin/sh, not this test's node: the account may not reach a node installed under /root.
      const script = 'id -u; id -g; echo "home=$HOME user=$USER"; echo saved > "$MIGPOOL_CHECKPOINT_DIR/ckpt"; echo here > work.txt && echo wrote-workdir';
      const sub = await api(carol, 'POST', '/v1/jobs', { name: 'c-job', command: ['/bin/sh', '-c', script] });
      expect(sub.status).toBe(201);
      const id = (sub.json as Job).id;
      const done = await until(carol, id, ['succeeded', 'failed']);
      const out = ((await api(carol, 'GET', `/v1/jobs/${id}/logs?stream=stdout`)).json as { text: string }).text;
      const err = ((await api(carol, 'GET', `/v1/jobs/${id}/logs?stream=stderr`)).json as { text: string }).text;
      expect(done.state, `${out}${err}`).toBe('succeeded');
      expect(out.split('\n').slice(0, 2)).toEqual([String(uid), String(gid)]);
      expect(out).toContain(`user=${account}`);
      expect(out).toContain('wrote-workdir');
      const ckpt = statSync(join(dir, 'jobs', id, 'checkpoint', 'ckpt'));
      expect([ckpt.uid, ckpt.gid]).toEqual([uid, gid]);
      const checkpointDir = statSync(join(dir, 'jobs', id, 'checkpoint'));
      expect([checkpointDir.uid, checkpointDir.mode & 0o777]).toEqual([uid, 0o700]);
      for (const log of ['stdout.log', 'stderr.log']) {
        const s = statSync(join(dir, 'jobs', id, '1', log));
        expect([s.uid, s.gid, s.mode & 0o777], log).toEqual([uid, gid, 0o600]);
      }
      // What the root runner reads stays root's.
      expect(statSync(join(dir, 'jobs', id, '1', 'launch.json')).uid).toBe(0);
      expect(statSync(join(dir, 'jobs', id, '1')).uid).toBe(0);
      // A job of a user with no Unix account still runs as the service's user (this serve has --unmapped-users-as-root).
      const plain = await api(alice, 'POST', '/v1/jobs', { name: 'a-id', command: ['/bin/sh', '-c', 'id -u'] });
      const plainId = (plain.json as Job).id;
      await until(alice, plainId, ['succeeded']);
      expect(((await api(alice, 'GET', `/v1/jobs/${plainId}/logs?stream=stdout`)).json as { text: string }).text.trim()).toBe('0');
      // Nor can a mapped user's job read what runs as root: the jobs' folders are the service's (job-folders.ts).
      // Found in an attack round: such a job listed jobs/ and read another user's stdout.log (0644 in 0755 folders).
      const peek = 'J="$MIGPOOL_CHECKPOINT_DIR/../.."; ls "$J" >/dev/null 2>&1 && echo listed; cat "$J/' + plainId + '/1/stdout.log" 2>/dev/null && echo read; ls "$J/' + plainId + '" >/dev/null 2>&1 && echo entered; echo done';
      const spy = await api(carol, 'POST', '/v1/jobs', { name: 'c-peek', command: ['/bin/sh', '-c', peek] });
      const spyId = (spy.json as Job).id;
      await until(carol, spyId, ['succeeded']);
      expect(((await api(carol, 'GET', `/v1/jobs/${spyId}/logs?stream=stdout`)).json as { text: string }).text).toBe('done\n');
      expect(statSync(join(dir, 'jobs', plainId, '1', 'stdout.log')).mode & 0o077).toBe(0);
    } finally {
      if (created) execFileSync('userdel', [account]);
    }
  });
});
