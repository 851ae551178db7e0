import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runMigpool, startServe, type ServeProcess } from './serve-harness.js';

/**
 * Five `migpool preempt ID` started together against `migpool serve --simulate` (the attack round's
 * finding: the job was moved twice, the second preempt killing the fresh second attempt). Each CLI
 * process takes most of a second to start on a loaded machine, longer than the job takes to stop
 * and start again, so later requests arrive after the restart: they say when they were asked.
 */
let dir: string;
let serve: ServeProcess | null = null;

interface Job {
  id: string;
  state: string;
  attempt: number;
  preemptions?: number;
  reason: string | null;
}

const job = async (id: string): Promise<Job | undefined> => {
  const r = await runMigpool(['jobs', '--data-dir', dir, '--json']);
  expect(r.code, r.err).toBe(0);
  return (JSON.parse(r.out) as { jobs: Job[] }).jobs.find((j) => j.id === id);
};

async function until(what: string, ok: () => Promise<boolean>, ms = 30_000): Promise<void> {
  const t0 = Date.now();
  while (!(await ok())) {
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'migpool-serve-preempt-'));
});

afterAll(async () => {
  await runMigpool(['cancel', '1', '--data-dir', dir]);
  await serve?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('migpool preempt, five at once', () => {
  it('moves the job once: every command answers with the job, the second attempt runs on', { timeout: 90_000 }, async () => {
    serve = await startServe({ dataDir: dir, args: ['--simulate', '1xA100-SXM4-40GB', '--policy', 'exclusive'] });
    const submitted = await runMigpool(['submit', '--data-dir', dir, '--preemptible', '--name', 'mover', '--', process.execPath, '-e', 'process.on("SIGTERM", () => process.exit(143)); setTimeout(() => {}, 600000)']);
    expect(submitted.code, submitted.err).toBe(0);
    await until('job 1 running', async () => (await job('1'))?.state === 'running');
    const answers = await Promise.all([1, 2, 3, 4, 5].map(() => runMigpool(['preempt', '1', '--data-dir', dir, '--json'])));
    for (const a of answers) expect(a.code, a.err).toBe(0);
    await until('job 1 running again', async () => {
      const j = await job('1');
      return j?.state === 'running' && j.attempt >= 2;
    });
    // Longer than a stop and a restart take here: a second move would show.
    await new Promise((r) => setTimeout(r, 2000));
    expect(await job('1')).toMatchObject({ state: 'running', attempt: 2, preemptions: 1 });
  });
});
