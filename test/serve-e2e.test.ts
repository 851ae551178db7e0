import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runMigpool, startServe, type ServeProcess } from './serve-harness.js';

/**
 * `migpool serve` as a user runs it: the built CLI in its own process on simulated GPUs, driven
 * over HTTP and through the CLI client, killed with SIGKILL mid-run and started again.
 */
const node = process.execPath;
let dir: string;
let serve: ServeProcess | null = null;

const run = (...args: string[]) => runMigpool(args);
const runIn = (env: NodeJS.ProcessEnv, ...args: string[]) => runMigpool(args, env);

async function start(policy = 'exclusive'): Promise<ServeProcess> {
  serve = await startServe({ dataDir: dir, args: ['--simulate', '1xA100-SXM4-40GB', '--policy', policy] });
  return serve;
}

async function job(url: string, id: string): Promise<{ state: string; attempt: number; exitCode: number | null }> {
  const token = readFileSync(join(dir, 'token'), 'utf8').trim();
  return (await (await fetch(`${url}/v1/jobs/${id}`, { headers: { authorization: `Bearer ${token}` } })).json()) as { state: string; attempt: number; exitCode: number | null };
}

async function until(url: string, id: string, states: string[], ms = 20_000): Promise<{ state: string; attempt: number; exitCode: number | null }> {
  const t0 = Date.now();
  for (;;) {
    const j = await job(url, id);
    if (states.includes(j.state)) return j;
    if (Date.now() - t0 > ms) throw new Error(`job ${id} is ${j.state}, not ${states.join('|')}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'migpool-serve-'));
});

afterAll(async () => {
  await serve?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('migpool serve, end to end', () => {
  it('guards mutations with the token, rejects bad specs with the field path, survives kill -9 without losing or repeating a job', { timeout: 90_000 }, async () => {
    let { url, token } = await start();
    const starts = join(dir, 'starts.txt');
    writeFileSync(starts, '');
    const spec = (name: string, ms: number) => ({ name, command: [node, '-e', `require('fs').appendFileSync(${JSON.stringify(starts)}, ${JSON.stringify(name)} + '\\n'); setTimeout(() => console.log('bye'), ${ms})`] });
    const post = (body: unknown, auth = true) =>
      fetch(`${url}/v1/jobs`, { method: 'POST', headers: { 'content-type': 'application/json', ...(auth ? { authorization: `Bearer ${token}` } : {}) }, body: JSON.stringify(body) });

    expect((await post(spec('nope', 0), false)).status).toBe(401);
    expect((await fetch(`${url}/v1/jobs`)).status).toBe(401);
    const bad = await post({ name: 'bad', command: ['x'], resources: { gpus: 0 } });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(await bad.json())).toMatch(/resources\.gpus/);

    // One GPU, exclusive: the first job runs, the second waits in the queue.
    const a = (await (await post(spec('first', 2500))).json()) as { id: string };
    const b = (await (await post(spec('second', 200))).json()) as { id: string };
    await until(url, a.id, ['running']);
    expect((await job(url, b.id)).state).toBe('queued');

    await serve!.kill9();
    ({ url, token } = await start());
    const first = await until(url, a.id, ['succeeded', 'failed']);
    const second = await until(url, b.id, ['succeeded', 'failed']);
    expect(first).toMatchObject({ state: 'succeeded', attempt: 1, exitCode: 0 });
    expect(second).toMatchObject({ state: 'succeeded', attempt: 1 });
    expect(readFileSync(starts, 'utf8')).toBe('first\nsecond\n');
  });

  it('the CLI client submits, lists, shows logs and cancels against the running service', { timeout: 60_000 }, async () => {
    if (!serve || serve.proc.exitCode !== null) await start();
    const file = join(dir, 'job.yaml');
    writeFileSync(file, `name: talk\ncommand: [${JSON.stringify(node)}, -e, "console.log('hello from the job')"]\n`);
    const sub = await run('submit', file, '--data-dir', dir, '--json');
    expect(sub.code, sub.err).toBe(0);
    const id = String((JSON.parse(sub.out) as { id: string }[] | { id: string } | { jobs: { id: string }[] }) && /"id":\s*"(\d+)"/.exec(sub.out)?.[1]);
    const { url } = serve!;
    await until(url, id, ['succeeded']);
    const logs = await run('logs', id, '--data-dir', dir);
    expect(logs.out).toContain('hello from the job');
    const list = await run('jobs', '--data-dir', dir, '--json');
    expect(list.out).toContain('"talk"');

    writeFileSync(file, `name: sleeper\ncommand: [${JSON.stringify(node)}, -e, "setTimeout(() => {}, 60000)"]\n`);
    const sub2 = await run('submit', file, '--data-dir', dir, '--json');
    const id2 = /"id":\s*"(\d+)"/.exec(sub2.out)?.[1] ?? '';
    await until(url, id2, ['running']);
    const c = await run('cancel', id2, '--data-dir', dir);
    expect(c.code, c.err).toBe(0);
    expect((await until(url, id2, ['cancelled'])).state).toBe('cancelled');
  });

  it('demo removes its temporary data dir when it ends (unless --keep-data)', { timeout: 90_000 }, async () => {
    const tmp = mkdtempSync(join(tmpdir(), 'migpool-demo-tmp-'));
    try {
      const r = await runIn({ ...process.env, TMPDIR: tmp }, 'demo', '--jobs', '1', '--seconds', '1', '--exit-when-done', '--json');
      expect(r.code, r.err).toBe(0);
      expect(JSON.parse(r.out)).toMatchObject({ dataDir: null, succeeded: 1 });
      expect(readdirSync(tmp)).toEqual([]);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });
});
