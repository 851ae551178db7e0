import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runMigpool, startServe, UNMAPPED_AS_ROOT, type ServeProcess } from './serve-harness.js';

/**
 * Two users on one `migpool serve` (the built CLI, in its own process): a user's own queued job
 * must not name another user's jobs by id in its pending reason (found on the live service with
 * `--policy static:7x1g.5gb`: bob's job said `held by job 1, 2, 3, ...`, alice's ids), as GET
 * /v1/gpus and /metrics already hide them.
 */
const SPEC = '1xA100-SXM4-40GB';
let dir: string;
let serve: ServeProcess | null = null;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'migpool-serve-users-pending-'));
});

afterAll(async () => {
  await serve?.stop();
  rmSync(dir, { recursive: true, force: true });
});

interface Job {
  id: string;
  state: string;
  pending: string | null;
}

describe("a user's pending reasons", () => {
  it("name another user's jobs as theirs, not by id; an admin sees the ids", { timeout: 90_000 }, async () => {
    const token = async (name: string) => {
      const r = await runMigpool(['users', 'add', name, '--data-dir', dir]);
      expect(r.code, r.err).toBe(0);
      return r.out.trim();
    };
    const alice = await token('alice');
    const bob = await token('bob');
    serve = await startServe({ dataDir: dir, args: ['--simulate', SPEC, '--policy', 'static:7x1g.5gb', ...UNMAPPED_AS_ROOT] });
    const as = (tok: string, command: string, ...args: string[]) => runMigpool([command, '--data-dir', dir, '--token', tok, ...args]);
    const a = await as(alice, 'submit', '--profile', '1g.5gb', '--array', '0-6', '--', 'sleep', '60');
    expect(a.code, a.err).toBe(0);
    const aliceIds = a.out.trim().split('\n');
    const list = async (tok: string): Promise<Job[]> => JSON.parse((await as(tok, 'jobs', '--json')).out).jobs as Job[];
    for (let t0 = Date.now(); (await list(alice)).filter((j) => j.state === 'running').length < 7; ) {
      if (Date.now() - t0 > 45_000) throw new Error('alice\'s jobs did not start');
      await new Promise((r) => setTimeout(r, 300));
    }
    const b = await as(bob, 'submit', '--profile', '1g.5gb', '--', 'sleep', '5');
    expect(b.code, b.err).toBe(0);
    const bobId = b.out.trim();
    let pending: string | null = null;
    for (let t0 = Date.now(); pending === null; ) {
      pending = (await list(bob)).find((j) => j.id === bobId)?.pending ?? null;
      if (pending === null && Date.now() - t0 > 20_000) throw new Error('bob\'s job has no pending reason');
      if (pending === null) await new Promise((r) => setTimeout(r, 300));
    }
    expect(pending).toContain("held by 3 jobs of other users, ...");
    expect(pending).not.toMatch(/\bjob \d/);
    // The CLI's NOTE column, and GET /v1/jobs/ID, say the same.
    expect((await as(bob, 'jobs')).out).toContain('held by 3 jobs of other users, ...');
    // The admin (the data dir's token) sees alice's ids.
    const admin = JSON.parse((await runMigpool(['jobs', '--data-dir', dir, '--json'])).out).jobs as Job[];
    expect(admin.find((j) => j.id === bobId)?.pending).toMatch(/held by job \d+, \d+, \d+, \.\.\./);
    for (const id of [...aliceIds, bobId]) await runMigpool(['cancel', id, '--data-dir', dir]);
  });
});
