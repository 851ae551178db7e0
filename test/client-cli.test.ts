import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command, CommanderError } from 'commander';
import type { FastifyInstance } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ServiceClient } from '../src/cli/client.js';
import { registerClient } from '../src/cli/commands/client.js';
import { registerSubmit } from '../src/cli/commands/submit.js';
import { exitCodeFor, MigpoolError } from '../src/errors.js';
import { buildServer } from '../src/server/app.js';
import { loadOrCreateToken, writeServerInfo } from '../src/server/files.js';
import { FakePoolService } from './fake-pool-service.js';

/**
 * The client commands are not registered in src/cli/main.ts by this test's author, so the test
 * builds its own program with registerClient and maps errors to exit codes as main() does.
 */
async function run(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const io = { out: (s: string) => void (out += `${s.replace(/\n$/, '')}\n`), err: (s: string) => void (err += `${s.replace(/\n$/, '')}\n`) };
  const program = new Command('migpool').exitOverride().configureOutput({ writeOut: io.out, writeErr: io.err });
  registerSubmit(program, io);
  registerClient(program, io);
  for (const cmd of program.commands) cmd.exitOverride().configureOutput({ writeOut: io.out, writeErr: io.err });
  try {
    await program.parseAsync(argv, { from: 'user' });
    return { code: 0, out, err };
  } catch (e) {
    if (e instanceof CommanderError) return { code: e.exitCode === 0 ? 0 : 2, out, err };
    if (e instanceof MigpoolError) {
      io.err(`migpool: ${e.message}`);
      return { code: exitCodeFor(e.code), out, err };
    }
    throw e;
  }
}

let fake: FakePoolService;
let app: FastifyInstance;
let dataDir: string;
let url: string;
let files: string;

beforeEach(async () => {
  fake = new FakePoolService();
  fake.addGpu('NVIDIA A100-SXM4-40GB', 7, [
    ['3g.20gb', 4, 4],
    ['1g.5gb', 0, 1],
  ]);
  dataDir = mkdtempSync(join(tmpdir(), 'migpool-client-data-'));
  files = mkdtempSync(join(tmpdir(), 'migpool-client-files-'));
  const token = await loadOrCreateToken(dataDir);
  app = await buildServer({ service: fake, token, processMetrics: false });
  url = await app.listen({ host: '127.0.0.1', port: 0 });
  await writeServerInfo(dataDir, { url, pid: process.pid });
});

afterEach(async () => {
  app.server.closeAllConnections();
  await app.close();
});

function file(name: string, text: string): string {
  const path = join(files, name);
  writeFileSync(path, text);
  return path;
}

const YAML_SPEC = 'name: resnet\ncommand: [python, train.py]\nresources:\n  profile: 3g.20gb\n';

describe('migpool submit', () => {
  it('queues specs from YAML and JSON files (one spec or a list) and prints the ids', async () => {
    const one = file('one.yaml', YAML_SPEC);
    const list = file('list.yml', '- name: a\n  command: [python, a.py]\n- name: b\n  command: [python, b.py]\n  priority: background\n');
    const json = file('c.json', JSON.stringify({ name: 'c', command: ['python', 'c.py'], resources: { memory: '8GiB' } }));
    const r = await run('submit', one, list, json, '--data-dir', dataDir);
    expect(r).toEqual({ code: 0, out: '1\n2\n3\n4\n', err: '' });
    expect([...fake.jobs.values()].map((j) => [j.spec.name, j.spec.priority])).toEqual([
      ['resnet', 'foreground'],
      ['a', 'foreground'],
      ['b', 'background'],
      ['c', 'foreground'],
    ]);
  });

  it('reads several YAML documents, and prints the jobs with --json', async () => {
    const docs = file('docs.yaml', `${YAML_SPEC}---\nname: second\ncommand: [python, x.py]\n`);
    const r = await run('submit', docs, '--data-dir', dataDir, '--json');
    expect(r.code).toBe(0);
    const { jobs } = JSON.parse(r.out) as { jobs: { id: string; state: string; spec: { name: string } }[] };
    expect(jobs.map((j) => [j.id, j.state, j.spec.name])).toEqual([
      ['1', 'queued', 'resnet'],
      ['2', 'queued', 'second'],
    ]);
  });

  it('names the file, the job and the field of a bad spec, and queues nothing (exit 2)', async () => {
    const good = file('good.yaml', YAML_SPEC);
    const bad = file('bad.yaml', '- name: ok\n  command: [python]\n- name: big\n  command: [python]\n  resources: {profile: big}\n');
    const r = await run('submit', good, bad, '--data-dir', dataDir);
    expect(r.code).toBe(2);
    expect(r.err).toBe(`migpool: ${bad}: job 2: resources.profile: expected a MIG profile such as 1g.5gb\n`);
    expect(fake.jobs.size).toBe(0);
  });

  it('names the file and line of a syntax error, and a missing file', async () => {
    const broken = file('broken.yaml', 'name: x\ncommand: [python\n');
    const r = await run('submit', broken, '--data-dir', dataDir);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(new RegExp(`^migpool: ${broken.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:\\d+:\\d+: not valid YAML: `));
    const json = await run('submit', file('x.json', '{"name": '), '--data-dir', dataDir);
    expect(json.err).toMatch(/x\.json: not valid JSON \(.*\); fix it/);
    const missing = await run('submit', join(files, 'nope.yaml'), '--data-dir', dataDir);
    expect(missing).toMatchObject({ code: 2, err: `migpool: cannot read '${join(files, 'nope.yaml')}': ENOENT; give a YAML or JSON job spec file\n` });
    expect((await run('submit', file('empty.yaml', '# nothing\n'), '--data-dir', dataDir)).err).toContain('empty.yaml: no job spec in the file');
  });

  it("prints the server's 400 with the field path, naming the file (exit 2), and queues none of the files' jobs", async () => {
    const first = file('first.yaml', YAML_SPEC);
    const unknown = file('w.yaml', 'name: w\ncommand: [python]\nworkload: nope\n');
    const before = (await fake.listJobs()).length;
    const r = await run('submit', first, unknown, '--data-dir', dataDir);
    expect(r.code).toBe(2);
    expect(r.err).toBe(`migpool: ${unknown}: workload: unknown workload 'nope': use one of small, resnet50-b64, bert-large (nothing was queued)\n`);
    expect((await fake.listJobs()).length).toBe(before);
  });

  it('says when the token is wrong or missing', async () => {
    const spec = file('s.yaml', YAML_SPEC);
    const wrong = await run('submit', spec, '--data-dir', dataDir, '--token', 'not-the-token-at-all');
    expect(wrong.code).toBe(2);
    expect(wrong.err).toBe(`migpool: the migpool service at ${url} refused the token from --token: it is no user's token; pass --token (or $MIGPOOL_TOKEN) with the one \`migpool users add\` or \`users rotate\` printed, or --data-dir with the service's data dir for the admin's\n`);
    const noToken = mkdtempSync(join(tmpdir(), 'migpool-client-empty-'));
    const missing = await run('submit', spec, '--data-dir', noToken, '--url', url);
    expect(missing.code).toBe(2);
    expect(missing.err).toContain(`no token in ${noToken}`);
    expect(fake.jobs.size).toBe(0);
  });
});

describe('migpool jobs', () => {
  beforeEach(async () => {
    await fake.submit({ name: 'resnet', command: ['python'], resources: { profile: '3g.20gb' } }, { owner: 'alice' });
    await fake.submit({ name: 'tiny', command: ['python'], resources: { profile: '1g.5gb' }, priority: 'background' }, { owner: 'bob' });
    await fake.submit({ name: 'waiting', command: ['python'] });
    fake.now = Date.now() - 90_000;
    fake.startJob('1', 0, 4);
    fake.startJob('2', 0, 0);
    fake.now = Date.now() - 30_000;
    fake.finishJob('2', 3);
  });

  it('prints a table, newest first', async () => {
    const r = await run('jobs', '--data-dir', dataDir);
    expect(r.code).toBe(0);
    const lines = r.out.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID\s+NAME\s+USER\s+STATE\s+PRIORITY\s+PLACEMENT\s+ATTEMPT\s+SUBMITTED\s+STARTED\s+ENDED\s+EXIT\s+NOTE$/);
    expect(lines[3]).toMatch(/^1\s+resnet\s+alice\s+running\s+foreground\s+gpu 0 3g\.20gb@4\s+1\s+\S+ ago\s+1m ago\s+-\s+-\s+-$/);
    expect(lines[2]).toMatch(/^2\s+tiny\s+bob\s+failed\s+background\s+gpu 0 1g\.5gb@0\s+1\s+\S+ ago\s+1m ago\s+30s ago\s+3\s+exited with 3$/);
    expect(lines[1]).toMatch(/^3\s+waiting\s+-\s+queued\s+foreground\s+-\s+0\s+\S+ ago\s+-\s+-\s+-\s+-$/);
    expect(lines).toHaveLength(4);
  });

  it('filters by state and priority, limits, and prints JSON', async () => {
    const states = await run('jobs', '--data-dir', dataDir, '--state', 'queued,running', '--json');
    expect((JSON.parse(states.out) as { jobs: { id: string }[] }).jobs.map((j) => j.id)).toEqual(['3', '1']);
    const bg = await run('jobs', '--data-dir', dataDir, '--priority', 'background', '--json');
    expect((JSON.parse(bg.out) as { jobs: { id: string }[] }).jobs.map((j) => j.id)).toEqual(['2']);
    const latest = await run('jobs', '--data-dir', dataDir, '--limit', '2', '--json');
    expect(JSON.parse(latest.out)).toMatchObject({ jobs: [{ id: '3' }, { id: '2' }], next: '2' });
    const page2 = await run('jobs', '--data-dir', dataDir, '--limit', '2', '--after', '2', '--json');
    expect(JSON.parse(page2.out)).toMatchObject({ jobs: [{ id: '1' }], next: null });
    const table = await run('jobs', '--data-dir', dataDir, '--limit', '2');
    expect(table.out.trimEnd().split('\n').at(-1)).toBe('more: migpool jobs --after 2');
    expect((await run('jobs', '--data-dir', dataDir, '--after', 'x')).code).toBe(2);
    expect((await run('jobs', '--data-dir', dataDir, '--state', 'done')).err).toBe(
      'migpool: --state \'done\' is not a job state: use one or more of queued, starting, running, succeeded, failed, cancelled, separated by commas\n',
    );
    expect((await run('jobs', '--data-dir', dataDir, '--limit', '0')).code).toBe(2);
  });

  it("follows the service's pages: every job without a limit, and a --limit above one page", async () => {
    // 10003 jobs: more than the service's largest page (10000) and its default one (500).
    await fake.submitMany(Array.from({ length: 10_000 }, (_, i) => ({ name: `bulk-${i}`, command: ['true'] })));
    const client = await ServiceClient.connect({ dataDir });
    const all = await client.listJobs();
    expect(all).toHaveLength(10_003);
    expect(all.map((j) => Number(j.id))).toEqual(Array.from({ length: 10_003 }, (_, i) => i + 1));
    expect(await client.collectJobs({ states: ['queued'], limit: 3, order: 'desc' })).toMatchObject({ jobs: [{ id: '10003' }, { id: '10002' }, { id: '10001' }], next: '10001' });
    const big = await run('jobs', '--data-dir', dataDir, '--limit', '10002', '--json');
    expect(big.code, big.err).toBe(0);
    const page = JSON.parse(big.out) as { jobs: { id: string }[]; next: string | null };
    expect([page.jobs.length, page.jobs[0]?.id, page.jobs.at(-1)?.id, page.next]).toEqual([10_002, '10003', '2', '2']);
    const rest = JSON.parse((await run('jobs', '--data-dir', dataDir, '--limit', '10002', '--after', '2', '--json')).out) as { jobs: { id: string }[]; next: string | null };
    expect(rest).toMatchObject({ jobs: [{ id: '1' }], next: null });
  }, 60_000);

  it('says "no jobs" when none match', async () => {
    expect((await run('jobs', '--data-dir', dataDir, '--state', 'cancelled')).out).toBe('no jobs\n');
  });
});

describe('migpool logs', () => {
  it('prints the log so far, or stderr', async () => {
    await fake.submit({ name: 'j', command: ['python'] });
    fake.startJob('1', 0, 4);
    fake.appendLog('1', 'stdout', 'epoch 1\nepoch 2\npartial');
    fake.appendLog('1', 'stderr', 'warn\n');
    expect(await run('logs', '1', '--data-dir', dataDir)).toEqual({ code: 0, out: 'epoch 1\nepoch 2\npartial\n', err: '' });
    expect((await run('logs', '1', '--stderr', '--data-dir', dataDir)).out).toBe('warn\n');
    expect(JSON.parse((await run('logs', '1', '--json', '--data-dir', dataDir)).out)).toEqual({ id: '1', stream: 'stdout', text: 'epoch 1\nepoch 2\npartial', nextOffset: 23, done: false });
  });

  it('with -f keeps polling until the job has ended and the log is drained', async () => {
    await fake.submit({ name: 'j', command: ['python'] });
    fake.startJob('1', 0, 4);
    fake.appendLog('1', 'stdout', 'start\n');
    let polls = 0;
    const readLog = fake.readLog.bind(fake);
    fake.readLog = async (...args) => {
      polls++;
      if (polls === 3) fake.appendLog('1', 'stdout', 'middle, ');
      if (polls === 5) {
        fake.appendLog('1', 'stdout', 'end\n');
        fake.finishJob('1', 0);
      }
      return readLog(...args);
    };
    const r = await run('logs', '1', '-f', '--interval', '0.01', '--data-dir', dataDir);
    expect(r).toEqual({ code: 0, out: 'start\nmiddle, end\n', err: '' });
    expect(polls).toBeGreaterThanOrEqual(5);
  });

  it('says when there is no such job (exit 2)', async () => {
    expect(await run('logs', '42', '--data-dir', dataDir)).toEqual({ code: 2, out: '', err: 'migpool: no job 42: list the jobs with GET /v1/jobs (or `migpool jobs`)\n' });
  });
});

describe('migpool cancel', () => {
  it('cancels a queued job and asks a running one to stop', async () => {
    await fake.submit({ name: 'queued-one', command: ['python'] });
    await fake.submit({ name: 'running-one', command: ['python'] });
    fake.startJob('2', 0, 4);
    expect((await run('cancel', '1', '--data-dir', dataDir)).out).toBe('cancelled job 1 (queued-one)\n');
    expect((await run('cancel', '2', '--data-dir', dataDir)).out).toBe('asked job 2 (running-one) to stop: it is running\n');
    expect(JSON.parse((await run('cancel', '2', '--data-dir', dataDir, '--json')).out)).toMatchObject({ id: '2', cancelRequested: true });
    expect((await run('cancel', '9', '--data-dir', dataDir)).code).toBe(2);
  });

  it('preempts a running job whose spec allows it, and refuses others in one line', async () => {
    await fake.submit({ name: 'mover', command: ['python'], preemptible: true });
    await fake.submit({ name: 'stayer', command: ['python'] });
    fake.startJob('1', 0, 4);
    fake.startJob('2', 0, 0);
    expect((await run('preempt', '1', '--data-dir', dataDir)).out).toBe('asked job 1 (mover) to stop; it will be requeued\n');
    const refused = await run('preempt', '2', '--data-dir', dataDir);
    expect(refused.code).toBe(1);
    expect(refused.err).toBe('migpool: job 2 may not be moved: its spec does not say preemptible: true\n');
  });
});

describe('finding the service', () => {
  async function closedPort(): Promise<number> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    await new Promise((resolve) => server.close(resolve));
    return port;
  }

  it('says in one line that the service cannot be reached (exit 3)', async () => {
    const port = await closedPort();
    const r = await run('jobs', '--url', `http://127.0.0.1:${port}`, '--data-dir', dataDir);
    expect(r.code).toBe(3);
    expect(r.err).toBe(`migpool: cannot reach the migpool service at http://127.0.0.1:${port}: is \`migpool serve\` running? (connect ECONNREFUSED 127.0.0.1:${port})\n`);
  });

  it('says when the data dir has no service (exit 3), and checks --url', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'migpool-client-none-'));
    expect(await run('jobs', '--data-dir', empty)).toEqual({ code: 3, out: '', err: `migpool: no migpool service found in ${empty}: start one with \`migpool serve\` (or pass --url)\n` });
    expect((await run('jobs', '--url', 'ftp://x', '--data-dir', empty)).err).toBe("migpool: --url 'ftp://x' is not an http(s) URL: give one such as http://127.0.0.1:8470\n");
  });

  it('takes the URL and the token from flags over the data dir', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'migpool-client-none-'));
    const token = await loadOrCreateToken(dataDir);
    const spec = file('s.yaml', YAML_SPEC);
    expect(await run('submit', spec, '--data-dir', empty, '--url', url, '--token', token)).toEqual({ code: 0, out: '1\n', err: '' });
  });
});
