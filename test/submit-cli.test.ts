import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JobRecord } from '../src/store/types.js';
import { runMigpool, SERVE_START_MS, startServe, type ServeProcess } from './serve-harness.js';

/**
 * `migpool submit -- COMMAND` as a user runs it: the built CLI against a real `migpool serve` on
 * one simulated A100 (seven 1g.5gb slices): --wait ends with the job's exit status, an array's
 * running limit holds, --after chains jobs, and a resent submission is queued once.
 */
let dir: string;
let serve: ServeProcess | null = null;
let env: NodeJS.ProcessEnv;

const migpool = (...args: string[]) => runMigpool(args, env);

/** The API, read directly (quicker than a CLI process per poll on a busy machine). */
async function api<T>(path: string): Promise<T> {
  const { url, token } = serve!;
  return (await (await fetch(`${url}${path}`, { headers: { authorization: `Bearer ${token}` } })).json()) as T;
}

async function jobs(): Promise<JobRecord[]> {
  return (await api<{ jobs: JobRecord[] }>('/v1/jobs?limit=10000')).jobs;
}

function job(id: string): Promise<JobRecord> {
  return api<JobRecord>(`/v1/jobs/${id}`);
}

async function until(id: string, ok: (j: JobRecord) => boolean, ms = 30_000): Promise<JobRecord> {
  const t0 = Date.now();
  for (;;) {
    const j = await job(id);
    if (ok(j)) return j;
    if (Date.now() - t0 > ms) throw new Error(`job ${id} is ${j.state} (${j.pending ?? j.reason ?? ''})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const final = (j: JobRecord) => ['succeeded', 'failed', 'cancelled'].includes(j.state);

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'migpool-submit-'));
  env = { ...process.env, MIGPOOL_DATA_DIR: dir };
  delete env['MIGPOOL_URL'];
  delete env['MIGPOOL_TOKEN'];
  serve = await startServe({ dataDir: dir, args: ['--simulate', '1xA100-SXM4-40GB'] });
}, SERVE_START_MS + 30_000);

afterAll(async () => {
  await serve?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('migpool submit -- COMMAND', () => {
  it('--wait streams the output and exits with the job exit status', async () => {
    const failed = await migpool('submit', '--profile', '1g.5gb', '--wait', '--', 'sh', '-c', 'echo to-stdout; echo to-stderr >&2; exit 7');
    expect(failed.code).toBe(7);
    expect(failed.out).toBe('to-stdout\n');
    expect(failed.err).toContain('to-stderr\n');
    expect(failed.err).toMatch(/migpool: job \d+ \(sh\) failed: exit status 7/);
    const ok = await migpool('submit', '--wait', '--label', 'team=vision', '--env', 'GREETING=hi', '--', 'sh', '-c', 'echo $GREETING from $(pwd)');
    expect(ok.code).toBe(0);
    expect(ok.out).toBe(`hi from ${process.cwd()}\n`);
    const listed = await migpool('jobs');
    expect(listed.out).toMatch(/LABELS/);
    expect(listed.out).toMatch(/team=vision/);
  }, 60_000);

  it('runs an array with at most N of its jobs at once, each with its MIGPOOL_ARRAY_INDEX', async () => {
    const r = await migpool('submit', '--profile', '1g.5gb', '--array', '0-7%2', '--', 'sh', '-c', 'sleep 0.6; echo index=$MIGPOOL_ARRAY_INDEX');
    expect(r.code, r.err).toBe(0);
    const ids = r.out.trim().split('\n');
    expect(ids).toHaveLength(8);
    // While it runs, the held members say why they wait (reasons are refreshed once a second:
    // asked at once, the members just submitted may not have one yet).
    let held: Awaited<ReturnType<typeof jobs>> = [];
    for (let i = 0; i < 60 && held.length === 0; i++) {
      held = (await jobs()).filter((j) => ids.includes(j.id) && j.state === 'queued' && j.pending?.startsWith('array 0-7%2: '));
      if (held.length === 0) await new Promise((r) => setTimeout(r, 50));
    }
    expect(held.length).toBeGreaterThan(0);
    const done = await Promise.all(ids.map((id) => until(id, final)));
    expect(done.map((j) => j.state)).toEqual(Array(8).fill('succeeded'));
    // At any start, how many members were running: never more than 2 (the pool has 7 slices).
    const overlap = Math.max(...done.map((a) => done.filter((b) => b.startedAt! <= a.startedAt! && b.endedAt! > a.startedAt!).length));
    expect(overlap).toBeLessThanOrEqual(2);
    expect(overlap).toBe(2);
    const logs = await Promise.all(ids.map((id) => api<{ text: string }>(`/v1/jobs/${id}/logs`)));
    expect(logs.map((l) => l.text.trim()).sort()).toEqual([0, 1, 2, 3, 4, 5, 6, 7].map((i) => `index=${i}`));
  }, 90_000);

  it('--after starts a job once its dependency succeeded, and fails it when the dependency fails', async () => {
    // The first job runs until the test lets it end (a file appears), so its dependents are seen waiting.
    const go = join(dir, 'go');
    const first = (await migpool('submit', '--profile', '1g.5gb', '--', 'sh', '-c', `while [ ! -e ${go} ]; do sleep 0.05; done; echo first`)).out.trim();
    const second = (await migpool('submit', '--profile', '1g.5gb', '--after', first, '--', 'sh', '-c', 'echo second')).out.trim();
    const third = (await migpool('submit', '--profile', '1g.5gb', '--after', second, '--', 'sh', '-c', 'echo third')).out.trim();
    expect((await until(second, (j) => typeof j.pending === 'string')).pending).toBe(`waits for job ${first} to succeed (it is running)`);
    expect((await until(third, (j) => typeof j.pending === 'string')).pending).toBe(`waits for job ${second} to succeed (it is queued)`);
    writeFileSync(go, '');
    const [a, b, c] = await Promise.all([first, second, third].map((id) => until(id, final)));
    expect([a!.state, b!.state, c!.state]).toEqual(['succeeded', 'succeeded', 'succeeded']);
    expect(b!.startedAt!).toBeGreaterThanOrEqual(a!.endedAt!);
    expect(c!.startedAt!).toBeGreaterThanOrEqual(b!.endedAt!);

    const bad = (await migpool('submit', '--', 'sh', '-c', 'exit 4')).out.trim();
    const after = (await migpool('submit', '--wait', '--after', bad, '--', 'echo', 'never')).code;
    expect(after).toBe(1);
    const doomed = await job(String(Number(bad) + 1));
    expect(doomed.state).toBe('failed');
    expect(doomed.attempt).toBe(0);
    expect(doomed.reason).toBe(`dependency job ${bad} did not succeed (failed: exit status 4)`);
    const missing = await migpool('submit', '--after', '999999', '--', 'true');
    expect(missing.code).toBe(2);
    expect(missing.err).toBe('migpool: job spec: after: no job 999999: name jobs that exist (see `migpool jobs`)\n');
  }, 90_000);

  it('queues a resent submission once: the same idempotency key gives the same job', async () => {
    const before = (await jobs()).length;
    const one = await migpool('submit', '--idempotency-key', 'retry-me-1', '--', 'true');
    const two = await migpool('submit', '--idempotency-key', 'retry-me-1', '--', 'true');
    expect(one.code).toBe(0);
    expect(two.out).toBe(one.out);
    expect((await jobs()).length).toBe(before + 1);
    const other = await migpool('submit', '--idempotency-key', 'retry-me-1', '--', 'false');
    expect(other.code).toBe(2);
    expect(other.err).toContain(`Idempotency-Key 'retry-me-1' was used for a different submission (job ${one.out.trim()})`);
    // Without a key given, each invocation sends its own: two runs, two jobs.
    const a = await migpool('submit', '--', 'true');
    const b = await migpool('submit', '--', 'true');
    expect(a.out).not.toBe(b.out);
  }, 60_000);

  it('keeps spec flags for commands: a spec file with --profile is refused with the fix', async () => {
    const r = await migpool('submit', '--profile', '1g.5gb', 'job.yaml');
    expect(r.code).toBe(2);
    expect(r.err).toBe('migpool: --profile describes a job given after --; in a spec file, write it in the spec instead\n');
    const nothing = await migpool('submit');
    expect(nothing.code).toBe(2);
    expect(nothing.err).toContain('give job spec files, or the command to run after --');
  });
});
