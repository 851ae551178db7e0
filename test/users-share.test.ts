import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runMigpool, startServe, UNMAPPED_AS_ROOT, type ServeProcess } from './serve-harness.js';

/**
 * Two users share one real `migpool serve --simulate` on two whole GPUs, each submitting an array
 * of jobs through the CLI with their own token: bob (weight 1, a quota of 1 GPU, submitting first)
 * never holds more than his quota while alice (weight 2, no quota) runs beside him; the admin's
 * `migpool jobs` shows each job's owner and why bob's held jobs wait; /metrics shows each user's
 * allocation, jobs, quota and weight. A user's `--after` may name only their own jobs.
 */
let dir: string;
let serve: ServeProcess | null = null;
let url = '';

const cli = (...args: string[]) => runMigpool(args, { ...process.env, MIGPOOL_TOKEN: '', MIGPOOL_URL: '' });

async function addUser(name: string, ...flags: string[]): Promise<string> {
  const r = await cli('users', 'add', name, '--data-dir', dir, ...flags);
  expect(r.code, r.err).toBe(0);
  return r.out.trim();
}

interface Job {
  id: string;
  state: string;
  owner: string | null;
  pending?: string | null;
}

async function get(token: string, path: string): Promise<{ status: number; text: string }> {
  const res = await fetch(`${url}${path}`, { headers: { authorization: `Bearer ${token}` } });
  return { status: res.status, text: await res.text() };
}

async function allJobs(admin: string): Promise<Job[]> {
  return (JSON.parse((await get(admin, '/v1/jobs?limit=1000')).text) as { jobs: Job[] }).jobs;
}

/** The value of one series in a scrape, or undefined when absent. */
function value(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

const JOBS_EACH = 4;
const LIVE = ['starting', 'running'];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'migpool-share-'));
});

afterAll(async () => {
  await serve?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('two users share a pool under a quota and weights', () => {
  let admin = '';
  let alice = '';
  let bob = '';

  it("keeps bob within his quota while alice runs beside him, and shows it in `migpool jobs` and /metrics", { timeout: 180_000 }, async () => {
    alice = await addUser('alice', '--weight', '2');
    bob = await addUser('bob', '--weight', '1', '--quota-gpus', '1');
    serve = await startServe({ dataDir: dir, args: ['--simulate', '2xA100-SXM4-40GB', '--policy', 'exclusive', ...UNMAPPED_AS_ROOT] });
    url = serve.url;
    admin = serve.token;

    // Bob first: without his quota, his jobs would take both GPUs.
    const range = `0-${JOBS_EACH - 1}`;
    const sb = await cli('submit', '--data-dir', dir, '--token', bob, '--name', 'b', '--gpus', '1', '--array', range, '--', 'sleep', '2');
    expect(sb.code, sb.err).toBe(0);
    const sa = await cli('submit', '--data-dir', dir, '--token', alice, '--name', 'a', '--gpus', '1', '--array', range, '--', 'sleep', '2');
    expect(sa.code, sa.err).toBe(0);

    let bobMost = 0;
    let besideEachOther = false;
    let jobsTable = '';
    let scrape = '';
    let usersList = '';
    const deadline = Date.now() + 150_000;
    for (;;) {
      const jobs = await allJobs(admin);
      expect(jobs).toHaveLength(2 * JOBS_EACH);
      const summary = jobs.map((j) => `${j.id}:${j.owner}:${j.state}`).join(' ');
      const live = (u: string) => jobs.filter((j) => j.owner === u && LIVE.includes(j.state)).length;
      // One whole GPU per job: bob's live jobs are the GPUs he holds.
      bobMost = Math.max(bobMost, live('bob'));
      expect(live('bob'), summary).toBeLessThanOrEqual(1);
      if (live('bob') === 1 && live('alice') >= 1) besideEachOther = true;
      const held = jobs.find((j) => j.owner === 'bob' && j.state === 'queued' && /at their quota/.test(j.pending ?? ''));
      if (held && jobsTable === '') {
        const r = await cli('jobs', '--data-dir', dir, '--limit', '100');
        expect(r.code, r.err).toBe(0);
        if (/at their quota/.test(r.out)) jobsTable = r.out;
      }
      if (live('bob') === 1 && scrape === '') {
        const m = await get(admin, '/metrics');
        expect(m.status).toBe(200);
        if (value(m.text, 'migpool_user_allocated_gpus{user="bob"}') === 1) scrape = m.text;
      }
      if (live('bob') === 1 && usersList === '') {
        const r = await cli('users', 'list', '--data-dir', dir);
        expect(r.code, r.err).toBe(0);
        if (/^bob\s+no\s+1\s+1\s+1\s/m.test(r.out)) usersList = r.out;
      }
      if (jobs.every((j) => ['succeeded', 'failed', 'cancelled'].includes(j.state))) {
        expect(jobs.map((j) => j.state)).toEqual(Array(2 * JOBS_EACH).fill('succeeded'));
        break;
      }
      if (Date.now() > deadline) throw new Error(`jobs did not end: ${summary}`);
      await new Promise((r) => setTimeout(r, 150));
    }
    expect(bobMost).toBe(1);
    expect(besideEachOther).toBe(true);

    // `migpool jobs` as the admin: every job with its owner, bob's held ones saying why.
    const rows = jobsTable.trimEnd().split('\n');
    expect(rows[0]).toMatch(/^ID\s+NAME\s+USER\s+STATE/);
    const owners = rows.slice(1).map((l) => l.split(/\s+/)[2]);
    expect(owners.sort()).toEqual([...Array(JOBS_EACH).fill('alice'), ...Array(JOBS_EACH).fill('bob')]);
    expect(jobsTable).toMatch(/^\d+\s+b\S*\s+bob\s+queued\s.*user 'bob' is at their quota: they hold 1 of 1 GPUs and this job needs 1 more$/m);
    expect(jobsTable).not.toMatch(/alice\s+queued\s.*at their quota/);

    // `migpool users list` beside a running service: what each user holds now.
    expect(usersList).toMatch(/^NAME\s+ADMIN\s+WEIGHT\s+QUOTA-GPUS\s+HELD-GPUS\s+UNIX-USER/);
    expect(usersList).toMatch(/^alice\s+no\s+2\s+-\s+[01]\s/m);

    // /metrics while bob held his GPU: per-user allocation, live jobs, quota and weight.
    expect(value(scrape, 'migpool_user_allocated_gpus{user="bob"}')).toBe(1);
    expect(value(scrape, 'migpool_user_quota_gpus{user="bob"}')).toBe(1);
    expect(scrape).not.toContain('migpool_user_quota_gpus{user="alice"}');
    expect(value(scrape, 'migpool_user_weight{user="alice"}')).toBe(2);
    expect(value(scrape, 'migpool_user_weight{user="bob"}')).toBe(1);
    expect(value(scrape, 'migpool_jobs{state="running",priority="foreground",user="bob"}')).toBeLessThanOrEqual(1);
    expect(value(scrape, 'migpool_user_allocated_gpus{user="alice"}')).toBeDefined();
    // After the run: each user's finished jobs are counted under their name.
    const after = (await get(admin, '/metrics')).text;
    for (const u of ['alice', 'bob']) expect(value(after, `migpool_jobs_finished_total{outcome="succeeded",priority="foreground",user="${u}"}`), u).toBe(JOBS_EACH);
  });

  it("lets a user depend only on their own jobs: another's is refused like an unknown id; the admin may name any", { timeout: 120_000 }, async () => {
    const jobs = await allJobs(admin);
    const bobs = jobs.find((j) => j.owner === 'bob')!.id;
    const alices = jobs.find((j) => j.owner === 'alice')!.id;
    const others = await cli('submit', '--data-dir', dir, '--token', alice, '--after', bobs, '--', 'true');
    const unknown = await cli('submit', '--data-dir', dir, '--token', alice, '--after', '99999', '--', 'true');
    expect(others.code).toBe(2);
    expect(unknown.code).toBe(2);
    expect(others.err.trimEnd().split('\n')).toHaveLength(1);
    expect(others.err).toBe(unknown.err.replace('99999', bobs));
    const own = await cli('submit', '--data-dir', dir, '--token', alice, '--after', alices, '--json', '--', 'true');
    expect(own.code, own.err).toBe(0);
    const byAdmin = await cli('submit', '--data-dir', dir, '--after', bobs, '--json', '--', 'true');
    expect(byAdmin.code, byAdmin.err).toBe(0);
  });
});
