import { connect, type Socket } from 'node:net';
import { hostname } from 'node:os';
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakePoolService } from '../../test/fake-pool-service.js';
import { loopbackNames } from '../cli/pool.js';
import { buildServer, hostOf } from './app.js';

const TOKEN = 'a'.repeat(64);
const auth = { authorization: `Bearer ${TOKEN}` };
/** A GET with the token, as every read needs. */
const get = (url: string) => ({ method: 'GET' as const, url, headers: auth });

let fake: FakePoolService;
let app: FastifyInstance;

beforeEach(async () => {
  fake = new FakePoolService();
  fake.addGpu('NVIDIA A100-SXM4-40GB', 7, [
    ['2g.10gb', 0, 2],
    ['1g.5gb', 2, 1],
    ['3g.20gb', 4, 4],
  ]);
  fake.addGpu('NVIDIA H100 80GB HBM3', 7, []);
  app = await buildServer({ service: fake, token: TOKEN, processMetrics: false });
});

afterEach(async () => {
  await app.close();
});

const spec = { name: 'cifar', command: ['python', 'train.py'], resources: { profile: '1g.5gb' } };

async function submit(body: object = spec) {
  const res = await app.inject({ method: 'POST', url: '/v1/jobs', headers: auth, payload: body });
  expect(res.statusCode).toBe(201);
  return res.json<{ id: string }>();
}

describe('POST /v1/jobs/batch', () => {
  it('queues several jobs, or none when one is bad (named by its position)', async () => {
    const bad = await app.inject({ method: 'POST', url: '/v1/jobs/batch', headers: auth, payload: [spec, { ...spec, workload: 'nope' }] });
    expect(bad.statusCode).toBe(400);
    expect(bad.json<{ error: { message: string } }>().error.message).toMatch(/job spec 2: workload/);
    expect(await fake.listJobs()).toEqual([]);
    const ok = await app.inject({ method: 'POST', url: '/v1/jobs/batch', headers: auth, payload: [spec, { ...spec, name: 'second' }] });
    expect(ok.statusCode).toBe(201);
    expect(ok.json<{ jobs: { id: string }[] }>().jobs.map((j) => j.id)).toEqual(['1', '2']);
    const none = await app.inject({ method: 'POST', url: '/v1/jobs/batch', headers: auth, payload: [] });
    expect(none.statusCode).toBe(400);
    const anonymous = await app.inject({ method: 'POST', url: '/v1/jobs/batch', payload: [spec] });
    expect(anonymous.statusCode).toBe(401);
  });
});

describe('POST /v1/jobs', () => {
  it('queues a JSON spec and answers 201 with the normalised record', async () => {
    const res = await app.inject({ method: 'POST', url: '/v1/jobs', headers: auth, payload: { ...spec, resources: { memory: '512MiB' }, maxRuntime: '2h' } });
    expect(res.statusCode).toBe(201);
    expect(res.headers['location']).toBe('/v1/jobs/1');
    expect(res.json()).toMatchObject({
      id: '1',
      state: 'queued',
      spec: { name: 'cifar', command: ['python', 'train.py'], resources: { memory: 0.5 }, maxRuntime: 7200, priority: 'foreground', retries: 0, env: {} },
      placement: null,
      process: null,
      cancelRequested: false,
    });
  });

  it('takes YAML with application/yaml and text/yaml', async () => {
    for (const type of ['application/yaml', 'text/yaml']) {
      const res = await app.inject({
        method: 'POST',
        url: '/v1/jobs',
        headers: { ...auth, 'content-type': type },
        payload: 'name: yaml-job\ncommand: [python, train.py]\nresources:\n  gpus: 2\npriority: background\n',
      });
      expect(res.statusCode).toBe(201);
      expect(res.json()).toMatchObject({ spec: { name: 'yaml-job', resources: { gpus: 2 }, priority: 'background' } });
    }
  });

  it('refuses a YAML body over 64 KiB at once (40000 anchors took the parser 12 s, the whole service stalled), and takes that much as JSON', async () => {
    const anchors = Array.from({ length: 4000 }, (_, i) => `k${i}: &a${i} [1]`).join('\n');
    const t0 = Date.now();
    const res = await app.inject({ method: 'POST', url: '/v1/jobs', headers: { ...auth, 'content-type': 'application/yaml' }, payload: anchors });
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(res.statusCode).toBe(413);
    expect(res.json<{ error: { message: string } }>().error.message).toMatch(/^the YAML body is \d+ bytes, more than 65536: .*JSON/);
    expect(fake.jobs.size).toBe(0);
    const padded = await app.inject({ method: 'POST', url: '/v1/jobs', headers: auth, payload: { ...spec, labels: Object.fromEntries(Array.from({ length: 32 }, (_, i) => [`k${i}`, 'v'.repeat(256)])), env: { PAD: 'x'.repeat(70_000) } } });
    expect(padded.statusCode).toBe(201);
  });

  it('answers 400 with the field path for a bad spec', async () => {
    const res = await app.inject({ method: 'POST', url: '/v1/jobs', headers: auth, payload: { ...spec, resources: { profile: 'big' } } });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      error: { code: 'BAD_INPUT', message: 'job spec: resources.profile: expected a MIG profile such as 1g.5gb', path: 'resources.profile' },
    });
    expect(fake.jobs.size).toBe(0);
  });

  it("words schema problems plainly (what was expected, what was sent), not in zod's terms", async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ ...spec, resources: { gpus: 1.5 } }, 'job spec: resources.gpus: expected a whole number, got 1.5'],
      [{ ...spec, resources: { gpus: -1 } }, 'job spec: resources.gpus: expected a number of at least 1, got -1'],
      // The real limit and its reason, not zod's safe-integer bound (9007199254740991).
      [{ ...spec, resources: { gpus: 1e308 } }, 'job spec: resources.gpus: 1e+308 is more GPUs than a job may ask for (at most 64 per job); ask for 64 or fewer'],
      [{ ...spec, resources: { gpus: 65 } }, 'job spec: resources.gpus: 65 is more GPUs than a job may ask for (at most 64 per job); ask for 64 or fewer'],
      [{ ...spec, retries: 1e308 }, 'job spec: retries: expected a number of at most 10, got 1e+308'],
      [{ ...spec, priority: 'high' }, "job spec: priority: expected foreground or background, got 'high'"],
      [{ ...spec, bogus: 1 }, "job spec: (top level): unknown field 'bogus': remove it or check the spelling"],
    ];
    for (const [payload, message] of cases) {
      const res = await app.inject({ method: 'POST', url: '/v1/jobs', headers: auth, payload });
      expect(res.statusCode).toBe(400);
      expect(res.json().error.message).toBe(message);
    }
    expect(fake.jobs.size).toBe(0);
  });

  it("passes on the service's own BAD_INPUT with its path", async () => {
    const res = await app.inject({ method: 'POST', url: '/v1/jobs', headers: auth, payload: { ...spec, workload: 'nope' } });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: { code: 'BAD_INPUT', path: 'workload' } });
  });

  it('answers 400 with a clear message for unparseable bodies', async () => {
    const json = await app.inject({ method: 'POST', url: '/v1/jobs', headers: { ...auth, 'content-type': 'application/json' }, payload: '{"name": ' });
    expect(json.statusCode).toBe(400);
    expect(json.json<{ error: { message: string } }>().error.message).toMatch(/^the body is not valid JSON \(.*\): send one job spec as JSON/);
    const yaml = await app.inject({ method: 'POST', url: '/v1/jobs', headers: { ...auth, 'content-type': 'application/yaml' }, payload: 'name: [unclosed\n' });
    expect(yaml.statusCode).toBe(400);
    expect(yaml.json<{ error: { message: string } }>().error.message).toMatch(/^the body is not valid YAML at line \d+, column \d+/);
    const empty = await app.inject({ method: 'POST', url: '/v1/jobs', headers: { ...auth, 'content-type': 'application/json' }, payload: '' });
    expect(empty.statusCode).toBe(400);
    expect(empty.json()).toMatchObject({ error: { code: 'BAD_INPUT', path: '(top level)' } });
    const text = await app.inject({ method: 'POST', url: '/v1/jobs', headers: { ...auth, 'content-type': 'text/plain' }, payload: 'hello' });
    expect(text.statusCode).toBe(415);
    expect(text.json<{ error: { message: string } }>().error.message).toContain('send JSON (application/json) or YAML (application/yaml)');
  });

  it('answers 401 without the token or with a wrong one, saying where the token is', async () => {
    for (const headers of [{}, { authorization: 'Bearer wrong' }, { authorization: `Basic ${TOKEN}` }, { authorization: `Bearer ${TOKEN}x` }]) {
      const res = await app.inject({ method: 'POST', url: '/v1/jobs', headers, payload: spec });
      expect(res.statusCode).toBe(401);
      expect(res.headers['www-authenticate']).toContain('Bearer');
      const body = res.json<{ error: { code: string; message: string } }>();
      expect(body.error.code).toBe('UNAUTHORIZED');
      expect(body.error.message).toContain('Authorization: Bearer <token>');
      expect(body.error.message).toContain('token');
    }
    expect((await app.inject({ method: 'POST', url: '/v1/jobs/1/cancel' })).statusCode).toBe(401);
    expect((await app.inject({ method: 'DELETE', url: '/v1/jobs/1' })).statusCode).toBe(401);
    expect(fake.jobs.size).toBe(0);
  });

  it('on a loopback listener, refuses Host names it does not answer to (DNS rebinding), also for reads', async () => {
    const guarded = await buildServer({ service: fake, token: TOKEN, processMetrics: false, allowedHosts: loopbackNames('127.0.0.1')! });
    for (const host of ['127.0.0.1:7070', 'localhost:7070', '[::1]:7070', 'LOCALHOST']) {
      expect((await guarded.inject({ method: 'GET', url: '/v1/jobs', headers: { host, ...auth } })).statusCode, host).toBe(200);
    }
    for (const host of ['evil.example:7070', 'evil.example', '127.0.0.1.evil.example', '[::2]:80']) {
      const res = await guarded.inject({ method: 'GET', url: '/v1/jobs', headers: { host, ...auth } });
      expect(res.statusCode, host).toBe(403);
      expect(res.json<{ error: { code: string; message: string } }>().error.message).toContain('--listen');
    }
    await guarded.close();
    expect(loopbackNames('0.0.0.0')).toBeNull();
    expect(hostOf('[::1]:80')).toBe('::1');
  });

  it('every read of data needs the token too: jobs, one job, logs, GPUs, stats, events, metrics; the page and the API description do not', async () => {
    await submit();
    for (const url of ['/v1/jobs', '/v1/jobs/1', '/v1/jobs/1/logs?stream=stdout&offset=0', '/v1/gpus', '/v1/stats', '/v1/events', '/metrics']) {
      const res = await app.inject({ method: 'GET', url });
      expect(res.statusCode, url).toBe(401);
      expect(res.json<{ error: { code: string } }>().error.code, url).toBe('UNAUTHORIZED');
      expect((await app.inject({ method: 'GET', url: url.replace(/\?.*/, '') + (url.includes('?') ? url.slice(url.indexOf('?')) : ''), headers: { authorization: 'Bearer wrong' } })).statusCode, url).toBe(401);
    }
    expect((await app.inject({ method: 'GET', url: '/v1/jobs?token=' + TOKEN })).statusCode).toBe(401);
    for (const url of ['/', '/assets/dashboard.js', '/v1/openapi.json']) expect((await app.inject({ method: 'GET', url })).statusCode, url).toBe(200);
  });

  it('never echoes env values back in full: submit, list, one job and cancel answers redact them', async () => {
    const secret = 'wandb-0123456789abcdef';
    const created = await app.inject({ method: 'POST', url: '/v1/jobs', headers: auth, payload: { ...spec, env: { WANDB_API_KEY: secret } } });
    expect(created.statusCode).toBe(201);
    const answers = [created.body, (await app.inject(get('/v1/jobs'))).body, (await app.inject(get('/v1/jobs/1'))).body, (await app.inject({ method: 'POST', url: '/v1/jobs/1/cancel', headers: auth })).body];
    for (const body of answers) {
      expect(body).not.toContain(secret);
      expect(body).toContain('"WANDB_API_KEY":"[redacted: 22 chars]"');
    }
  });

  it('names the token file it was given in 401s', async () => {
    const other = await buildServer({ service: fake, token: TOKEN, processMetrics: false, tokenFile: '/srv/migpool/token' });
    const res = await other.inject({ method: 'POST', url: '/v1/jobs', payload: spec });
    expect(res.json<{ error: { message: string } }>().error.message).toContain('/srv/migpool/token');
    await other.close();
  });
});

describe('GET /v1/jobs', () => {
  beforeEach(async () => {
    await submit({ ...spec, name: 'a' });
    await submit({ ...spec, name: 'b', priority: 'background' });
    await submit({ ...spec, name: 'c' });
    await submit({ ...spec, name: 'd' });
    fake.startJob('2', 0, 2);
    fake.finishJob('2', 0);
    fake.startJob('3', 0, 0);
  });

  const names = (res: { json: <T>() => T }) => res.json<{ jobs: { spec: { name: string } }[] }>().jobs.map((j) => j.spec.name);

  it('lists all jobs by id, and filters by state, priority, after, limit and order', async () => {
    expect(names(await app.inject(get('/v1/jobs')))).toEqual(['a', 'b', 'c', 'd']);
    expect(names(await app.inject(get('/v1/jobs?state=queued')))).toEqual(['a', 'd']);
    expect(names(await app.inject(get('/v1/jobs?state=queued,running')))).toEqual(['a', 'c', 'd']);
    expect(names(await app.inject(get('/v1/jobs?state=queued&state=succeeded')))).toEqual(['a', 'b', 'd']);
    expect(names(await app.inject(get('/v1/jobs?priority=background')))).toEqual(['b']);
    expect(names(await app.inject(get('/v1/jobs?after=2&limit=1')))).toEqual(['c']);
    expect(names(await app.inject(get('/v1/jobs?order=desc&limit=2')))).toEqual(['d', 'c']);
  });

  it('answers 400 for a bad filter, naming the parameter', async () => {
    const state = await app.inject(get('/v1/jobs?state=queued,sleeping'));
    expect(state.statusCode).toBe(400);
    expect(state.json()).toMatchObject({ error: { code: 'BAD_INPUT', path: 'state' } });
    expect(state.json<{ error: { message: string } }>().error.message).toContain("unknown job state 'sleeping'");
    for (const bad of ['0', 'abc', '10001', '1.5', '-1', '']) {
      const limit = await app.inject(get(`/v1/jobs?limit=${bad}`));
      expect(limit.statusCode, bad).toBe(400);
      expect(limit.json(), bad).toMatchObject({ error: { code: 'BAD_INPUT', path: 'limit' } });
      const message = limit.json<{ error: { message: string } }>().error.message;
      expect(message, bad).toMatch(/^querystring limit .*: give a whole number from 1 to 10000 \(jobs per page, 500 when absent\), and ask for the following pages with \?after=<next>$/);
    }
    expect((await app.inject(get('/v1/jobs?limit=2&limit=3'))).json<{ error: { message: string } }>().error.message).toContain('querystring limit is given 2 times: give it once');
    const after = await app.inject(get('/v1/jobs?after=abc'));
    expect(after.statusCode).toBe(400);
    expect(after.json()).toMatchObject({ error: { code: 'BAD_INPUT', path: 'after', message: expect.stringContaining("querystring after 'abc' is not a job id: give the `next` of the page before") } });
    expect((await app.inject(get('/v1/jobs?order=up'))).json()).toMatchObject({ error: { path: 'order' } });
    expect((await app.inject(get('/v1/jobs?priority=urgent'))).statusCode).toBe(400);
    // Not the store's own wording ('store: listJobs: after must be ...').
    expect((await app.inject(get('/v1/jobs?after=zz'))).json()).toMatchObject({ error: { code: 'BAD_INPUT', path: 'after', message: expect.stringContaining("querystring after 'zz' is not a job id") } });
  });

  it('answers a page of 500 jobs by default, with `next` to follow until it is null', async () => {
    await fake.submitMany(Array.from({ length: 1196 }, (_, i) => ({ ...spec, name: `bulk-${i}` })));
    const page = async (url: string) => {
      const res = await app.inject(get(url));
      expect(res.statusCode, url).toBe(200);
      return res.json<{ jobs: { id: string }[]; next: string | null }>();
    };
    const first = await page('/v1/jobs');
    expect(first.jobs).toHaveLength(500);
    expect(first.next).toBe('500');
    const ids: string[] = [];
    let next: string | null = null;
    let pages = 0;
    do {
      const p = await page(`/v1/jobs${next === null ? '' : `?after=${next}`}`);
      ids.push(...p.jobs.map((j) => j.id));
      next = p.next;
      pages++;
    } while (next !== null);
    expect(pages).toBe(3);
    expect(ids).toEqual(Array.from({ length: 1200 }, (_, i) => String(i + 1)));
    // Other filters and the order page alike; an exact fit ends with next null.
    const desc = await page('/v1/jobs?order=desc&limit=2');
    expect([desc.jobs.map((j) => j.id), desc.next]).toEqual([['1200', '1199'], '1199']);
    expect((await page('/v1/jobs?order=desc&limit=2&after=1199')).jobs.map((j) => j.id)).toEqual(['1198', '1197']);
    expect(await page('/v1/jobs?state=running&limit=1')).toMatchObject({ jobs: [{ id: '3' }], next: null });
    expect((await page('/v1/jobs?limit=10000')).jobs).toHaveLength(1200);
  });

  it('serialises placements of both kinds', async () => {
    fake.startJob('4', 1, null);
    const jobs = (await app.inject(get('/v1/jobs?state=running'))).json<{ jobs: { id: string; placement: unknown }[] }>().jobs;
    expect(jobs).toEqual([
      expect.objectContaining({ id: '3', placement: { kind: 'instance', gpu: 0, start: 0, profile: '2g.10gb', devices: ['MIG-0-0'] } }),
      expect.objectContaining({ id: '4', placement: { kind: 'gpus', gpus: [1], sharing: 'exclusive', devices: [fake.gpuList[1]!.uuid] } }),
    ]);
  });
});

describe('one job', () => {
  it('GET /v1/jobs/:id answers the job, or 404 as JSON', async () => {
    const { id } = await submit();
    expect((await app.inject(get(`/v1/jobs/${id}`))).json()).toMatchObject({ id, state: 'queued' });
    const missing = await app.inject(get('/v1/jobs/99'));
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toEqual({ error: { code: 'NOT_FOUND', message: 'no job 99: list the jobs with GET /v1/jobs (or `migpool jobs`)' } });
    expect((await app.inject(get('/v1/jobs/a%20b'))).statusCode).toBe(400);
  });

  it('POST /v1/jobs/:id/cancel cancels a queued job and asks a running one to stop', async () => {
    const { id: queued } = await submit();
    const { id: running } = await submit();
    fake.startJob(running, 0, 2);
    const a = await app.inject({ method: 'POST', url: `/v1/jobs/${queued}/cancel`, headers: auth });
    expect(a.statusCode).toBe(200);
    expect(a.json()).toMatchObject({ state: 'cancelled' });
    const b = await app.inject({ method: 'POST', url: `/v1/jobs/${running}/cancel`, headers: { ...auth, 'content-type': 'application/json' }, payload: '' });
    expect(b.json()).toMatchObject({ state: 'running', cancelRequested: true });
    expect((await app.inject({ method: 'POST', url: '/v1/jobs/42/cancel', headers: auth })).statusCode).toBe(404);
  });

  it('GET /v1/jobs/:id/logs reads from an offset, either stream', async () => {
    const { id } = await submit();
    fake.startJob(id, 0, 2);
    fake.appendLog(id, 'stdout', 'epoch 1\nepoch 2\n');
    fake.appendLog(id, 'stderr', 'warning\n');
    expect((await app.inject(get(`/v1/jobs/${id}/logs`))).json()).toEqual({ text: 'epoch 1\nepoch 2\n', nextOffset: 16, done: false });
    expect((await app.inject(get(`/v1/jobs/${id}/logs?offset=8&limit=4`))).json()).toEqual({ text: 'epoc', nextOffset: 12, done: false });
    expect((await app.inject(get(`/v1/jobs/${id}/logs?stream=stderr`))).json()).toEqual({ text: 'warning\n', nextOffset: 8, done: false });
    fake.finishJob(id, 0);
    expect((await app.inject(get(`/v1/jobs/${id}/logs?offset=16`))).json()).toEqual({ text: '', nextOffset: 16, done: true });
    expect((await app.inject(get(`/v1/jobs/${id}/logs?stream=stdin`))).json()).toMatchObject({ error: { code: 'BAD_INPUT', path: 'stream' } });
    expect((await app.inject(get(`/v1/jobs/${id}/logs?offset=-1`))).statusCode).toBe(400);
    expect((await app.inject(get('/v1/jobs/77/logs'))).statusCode).toBe(404);
  });
});

describe('GPUs, stats, unknown routes, errors', () => {
  it('GET /v1/gpus lists the GPUs with their instances', async () => {
    const { id } = await submit();
    fake.startJob(id, 0, 4);
    const { gpus } = (await app.inject(get('/v1/gpus'))).json<{ gpus: { migEnabled: boolean; instances: { profile: string; job: string | null }[] }[] }>();
    expect(gpus).toHaveLength(2);
    expect(gpus[0]!.instances.map((i) => [i.profile, i.job])).toEqual([
      ['2g.10gb', null],
      ['1g.5gb', null],
      ['3g.20gb', id],
    ]);
    expect(gpus[1]).toMatchObject({ migEnabled: false, instances: [], wholeGpuJobs: [] });
  });

  it('GET /v1/stats answers the service stats', async () => {
    const stats = (await app.inject(get('/v1/stats'))).json<{ policy: string; timeline: unknown[] }>();
    expect(stats.policy).toBe('fake-fifo');
    expect(stats.timeline).toHaveLength(30);
  });

  it('answers JSON 404s for unknown routes and 500s for service failures', async () => {
    const res = await app.inject(get('/v2/nothing?token=secret'));
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ error: { code: 'NOT_FOUND', message: 'no route GET /v2/nothing: the API is described at /v1/openapi.json' } });
    fake.gpus = async () => {
      throw new Error('driver gone\nsecond line');
    };
    const failed = await app.inject(get('/v1/gpus'));
    expect(failed.statusCode).toBe(500);
    expect(failed.json()).toEqual({ error: { code: 'INTERNAL', message: 'internal error: driver gone' } });
  });
});

describe('GET /v1/openapi.json', () => {
  it('is an OpenAPI 3.1 document with the paths, bearer security and schemas', async () => {
    const res = await app.inject(get('/v1/openapi.json'));
    expect(res.statusCode).toBe(200);
    const doc = JSON.parse(res.body) as {
      openapi: string;
      paths: Record<string, Record<string, { security?: unknown[] }>>;
      components: { securitySchemes: Record<string, unknown>; schemas: Record<string, { properties?: Record<string, unknown> }> };
    };
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining(['/v1/jobs', '/v1/jobs/{id}', '/v1/jobs/{id}/cancel', '/v1/jobs/{id}/logs', '/v1/gpus', '/v1/stats', '/v1/events', '/v1/openapi.json', '/metrics']),
    );
    expect(doc.paths['/v1/jobs']!['post']!.security).toEqual([{ bearer: [] }]);
    expect(doc.paths['/v1/jobs']!['get']!.security).toBeUndefined();
    expect(doc.components.securitySchemes['bearer']).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(Object.keys(doc.components.schemas)).toEqual(expect.arrayContaining(['JobSpec', 'JobRecord', 'Error', 'GpuSnapshot', 'ServiceStats', 'EventRecord', 'LogChunk']));
    expect(doc.components.schemas['JobSpec']!.properties).toHaveProperty('resources');
    expect(doc.components.schemas['JobRecord']!.properties!['spec']).toEqual({ $ref: '#/components/schemas/JobSpecNormalized' });
    const refs = [...res.body.matchAll(/"\$ref":"#\/components\/schemas\/(\w+)"/g)].map((m) => m[1]!);
    for (const name of refs) expect(doc.components.schemas).toHaveProperty(name);
  });
});

describe('GET /metrics', () => {
  it('publishes live gauges, counters and histograms with their labels, and process metrics', async () => {
    const withProcess = await buildServer({ service: fake, token: TOKEN });
    await submit();
    await submit({ ...spec, priority: 'background' });
    fake.now += 60_000;
    fake.startJob('1', 0, 0);
    fake.reconfigurations = 3;
    fake.pass(0.004);
    const res = await withProcess.inject(get('/metrics'));
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toContain('text/plain');
    const text = res.body;
    expect(text).toContain('migpool_jobs{state="running",priority="foreground",user="default"} 1');
    expect(text).toContain('migpool_jobs{state="queued",priority="background",user="default"} 1');
    expect(text).toContain('migpool_jobs{state="queued",priority="foreground",user="default"} 0');
    expect(text).toContain(`migpool_running_job_info{hpc_job="1",user="default",priority="foreground",Hostname="${hostname()}"} 1`);
    expect(text).toContain('migpool_slices{profile="2g.10gb",state="busy"} 1');
    expect(text).toContain('migpool_slices{profile="1g.5gb",state="idle"} 1');
    expect(text).toContain('# TYPE migpool_reconfigurations_total counter');
    expect(text).toContain('migpool_reconfigurations_total 3');
    expect(text).toContain('# TYPE migpool_queue_wait_seconds histogram');
    expect(text).toContain('migpool_queue_wait_seconds_bucket{le="30",priority="foreground",user="default"} 0');
    expect(text).toContain('migpool_queue_wait_seconds_bucket{le="60",priority="foreground",user="default"} 1');
    expect(text).toContain('migpool_scheduling_pass_seconds_bucket{le="0.005"} 1');
    expect(text).toContain('migpool_scheduling_pass_seconds_count 1');
    expect(text).toContain('migpool_jobs_finished_total{outcome="failed",priority="foreground",user="default"} 0');
    expect(text).toMatch(/migpool_build_info\{version="\d+\.\d+\.\d+",nodejs_version="[\d.]+"\} 1/);
    expect(text).toContain('migpool_service_start_time_seconds 1699996460');
    expect(text).toContain('process_cpu_user_seconds_total');
    expect(text).not.toMatch(/quantile=|_window_samples|utilization/);
    await withProcess.close();
  });

  it('calls stats() once per scrape', async () => {
    let calls = 0;
    const stats = fake.stats.bind(fake);
    fake.stats = async () => {
      calls++;
      return stats();
    };
    await app.inject(get('/metrics'));
    expect(calls).toBe(1);
    await app.inject(get('/metrics'));
    expect(calls).toBe(2);
  });
});

describe('logging', () => {
  it('keeps ?token= out of the request log', async () => {
    let logged = '';
    const stream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        logged += chunk.toString();
        done();
      },
    });
    const logging = await buildServer({ service: fake, token: TOKEN, processMetrics: false, logger: { level: 'info', stream } });
    expect((await logging.inject(`/?token=${TOKEN}&x=1`)).statusCode).toBe(200);
    await logging.close();
    expect(logged).toContain('"url":"/?token=[redacted]&x=1"');
    expect(logged).not.toContain(TOKEN);
  });
});

describe('dashboard assets', () => {
  it('serves the page with a strict CSP, its script, its styles and echarts', async () => {
    const page = await app.inject('/');
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toContain('text/html');
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    expect(page.body).toContain('<script src="/assets/dashboard.js" defer></script>');
    const script = await app.inject('/assets/dashboard.js');
    expect(script.headers['content-type']).toContain('javascript');
    expect(() => new Function(script.body)).not.toThrow();
    expect((await app.inject('/assets/dashboard.css')).headers['content-type']).toContain('text/css');
    const echarts = await app.inject('/assets/echarts.min.js');
    expect(echarts.statusCode).toBe(200);
    expect(echarts.body.length).toBeGreaterThan(100_000);
  });
});

describe('GET /v1/events', () => {
  interface Frame {
    id?: string;
    event?: string;
    data?: string;
    comment?: string;
  }

  /** Reads server-sent event frames from a live server until `until` says stop. */
  async function readFrames(url: string, headers: Record<string, string>, until: (frames: Frame[]) => boolean, onOpen?: () => void): Promise<Frame[]> {
    const controller = new AbortController();
    const res = await fetch(url, { headers: { ...auth, ...headers }, signal: controller.signal });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    const frames: Frame[] = [];
    let buffer = '';
    let opened = false;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const frame: Frame = {};
        for (const line of block.split('\n')) {
          if (line.startsWith(':')) frame.comment = line.slice(1).trim();
          else if (line.startsWith('retry:')) continue;
          else {
            const i = line.indexOf(': ');
            (frame as Record<string, string>)[line.slice(0, i)] = line.slice(i + 2);
          }
        }
        frames.push(frame);
        if (!opened) {
          opened = true;
          onOpen?.();
        }
      }
      if (until(frames)) break;
    }
    controller.abort();
    return frames;
  }

  /**
   * Closes a server whose streams have ended. fetch (undici) opens a spare connection that sends
   * no request; Node does not count it as idle, and close() would wait seconds for it.
   */
  async function closeNow(server: FastifyInstance): Promise<void> {
    server.server.closeAllConnections();
    await server.close();
  }

  async function listen(heartbeatMs = 15_000): Promise<{ server: FastifyInstance; url: string }> {
    const server = await buildServer({ service: fake, token: TOKEN, processMetrics: false, heartbeatMs });
    const address = await server.listen({ host: '127.0.0.1', port: 0 });
    return { server, url: `${address}/v1/events` };
  }

  it('replays the events after Last-Event-ID, then sends live ones, once each and in order', async () => {
    for (let k = 0; k < 3; k++) await fake.submit({ ...spec, name: `j${k}` });
    const { server, url } = await listen();
    const events = (f: Frame[]) => f.filter((x) => x.event !== undefined);
    const frames = await readFrames(url, { 'last-event-id': '1' }, (f) => events(f).length >= 3, () => fake.startJob('1', 0, 2));
    const got = events(frames);
    expect(got.map((f) => [f.id, f.event])).toEqual([
      ['2', 'job-submitted'],
      ['3', 'job-submitted'],
      ['4', 'job-started'],
    ]);
    expect(JSON.parse(got[2]!.data!)).toEqual({ seq: 4, time: fake.now, type: 'job-started', jobId: '1', data: { state: 'running' } });
    await server.close();
    expect(fake.subscribers).toBe(0);
  });

  it('sends only live events without Last-Event-ID, heartbeats, and unsubscribes when the client goes', async () => {
    await fake.submit(spec);
    const { server, url } = await listen(50);
    const frames = await readFrames(url, {}, (f) => f.some((x) => x.comment?.startsWith('heartbeat') === true) && f.some((x) => x.event !== undefined), () => {
      fake.emit('gpu-reconfiguring', null, { gpu: 0 });
    });
    expect(frames.filter((f) => f.event !== undefined).map((f) => f.event)).toEqual(['gpu-reconfiguring']);
    for (let i = 0; i < 50 && fake.subscribers > 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(fake.subscribers).toBe(0);
    await closeNow(server);
  });

  it('replays from ?after= and refuses a malformed Last-Event-ID', async () => {
    await fake.submit(spec);
    await fake.submit(spec);
    const { server, url } = await listen();
    const frames = await readFrames(`${url}?after=1`, {}, (f) => f.some((x) => x.event !== undefined));
    expect(frames.find((f) => f.event)!.id).toBe('2');
    const bad = await fetch(url, { headers: { ...auth, 'last-event-id': 'abc' } });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { path: string } }).error.path).toBe('Last-Event-ID');
    // Seqs beyond the safe integers were taken, and the stream then said only 'replay failed: store: listEvents: ...'.
    for (const after of ['1e400', '1e20', '9007199254740993']) {
      const huge = await fetch(`${url}?after=${after}`, { headers: auth });
      expect(huge.status, after).toBe(400);
      expect(((await huge.json()) as { error: { path: string; message: string } }).error).toMatchObject({ path: 'after', message: expect.stringMatching(/is not an event seq/) as unknown });
      const header = await fetch(url, { headers: { ...auth, 'last-event-id': '100000000000000000000' } });
      expect(header.status).toBe(400);
    }
    await closeNow(server);
  });

  it('holds no subscriber of clients that went while their token was looked up', async () => {
    // The look-up of each token waits until the client's connection has closed on the server's side.
    let release: () => void = () => undefined;
    let gate = new Promise<void>((r) => (release = r));
    const callers = async (token: string) => {
      await gate;
      return token === TOKEN ? { name: 'admin', admin: true } : null;
    };
    const server = await buildServer({ service: fake, callers, processMetrics: false, heartbeatMs: 15_000 });
    const address = await server.listen({ host: '127.0.0.1', port: 0 });
    let closedOnServer = 0;
    server.server.on('connection', (socket: Socket) => socket.once('close', () => closedOnServer++));
    let subscribed = 0;
    const subscribe = fake.subscribe.bind(fake);
    fake.subscribe = (listener) => (subscribed++, subscribe(listener));
    const n = 20;
    for (let i = 0; i < n; i++) {
      gate = new Promise<void>((r) => (release = r));
      const client = connect(Number(new URL(address).port), '127.0.0.1');
      client.on('error', () => undefined);
      await new Promise<void>((r) => client.once('connect', () => r()));
      client.write(`GET /v1/events${i % 2 === 0 ? '' : '?after=0'} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${TOKEN}\r\n\r\n`);
      // Half drop the connection with a reset, half with a clean close.
      if (i % 4 < 2) client.resetAndDestroy();
      else client.end();
      while (closedOnServer <= i) await new Promise((r) => setTimeout(r, 5));
      release();
      while (subscribed <= i) await new Promise((r) => setTimeout(r, 5));
    }
    expect(subscribed).toBe(n);
    expect(fake.subscribers).toBe(0);
    await server.close();
  });

  it('ends open streams when the server closes', async () => {
    const { server, url } = await listen();
    const res = await fetch(url, { headers: auth });
    const reader = res.body!.getReader();
    await reader.read();
    expect(fake.subscribers).toBe(1);
    await server.close();
    for (;;) if ((await reader.read()).done) break;
    expect(fake.subscribers).toBe(0);
  });
});

describe('users', () => {
  const tokens: Record<string, { name: string; admin: boolean }> = { 'alice-token': { name: 'alice', admin: false }, 'bob-token': { name: 'bob', admin: false }, 'root-token': { name: 'root', admin: true } };
  let shared: FastifyInstance;
  const as = (token: string, method: 'GET' | 'POST', url: string, payload?: object) => shared.inject({ method, url, headers: { authorization: `Bearer ${token}` }, ...(payload ? { payload } : {}) });

  beforeEach(async () => {
    shared = await buildServer({ service: fake, callers: async (t) => tokens[t] ?? null, processMetrics: false });
  });
  afterEach(async () => {
    await shared.close();
  });

  it('records the caller as the owner of what they submit, one job or a batch', async () => {
    expect((await as('alice-token', 'POST', '/v1/jobs', spec)).json()).toMatchObject({ id: '1', owner: 'alice' });
    const batch = await as('bob-token', 'POST', '/v1/jobs/batch', [spec, spec] as unknown as object);
    expect(batch.json<{ jobs: { owner: string }[] }>().jobs.map((j) => j.owner)).toEqual(['bob', 'bob']);
    expect((await as('bob-token', 'GET', '/v1/whoami')).json()).toEqual({ name: 'bob', admin: false });
  });

  it('hands the service when a preempt was asked: as it came, or earlier as Migpool-Asked-At says; a malformed one answers 400', async () => {
    const asked: (number | undefined)[] = [];
    const preempt = fake.preempt.bind(fake);
    fake.preempt = (id: string, at?: number) => {
      asked.push(at);
      return preempt(id);
    };
    await submit({ ...spec, preemptible: true });
    const before = Date.now();
    await app.inject({ method: 'POST', url: '/v1/jobs/1/preempt', headers: auth });
    await app.inject({ method: 'POST', url: '/v1/jobs/1/preempt', headers: { ...auth, 'migpool-asked-at': '1000' } });
    await app.inject({ method: 'POST', url: '/v1/jobs/1/preempt', headers: { ...auth, 'migpool-asked-at': String(Date.now() + 3_600_000) } });
    expect(asked[0]).toBeGreaterThanOrEqual(before);
    expect(asked[1]).toBe(1000);
    // Never later than it came: a client clock ahead does not make a request newer.
    expect(asked[2]).toBeLessThanOrEqual(Date.now());
    const bad = await app.inject({ method: 'POST', url: '/v1/jobs/1/preempt', headers: { ...auth, 'migpool-asked-at': 'soon' } });
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toMatchObject({ error: { code: 'BAD_INPUT', message: expect.stringContaining("Migpool-Asked-At 'soon' is not a time") as unknown } });
    expect(asked).toHaveLength(3);
  });

  it("answers another user's job as a missing one: record, logs, cancel, preempt", async () => {
    await as('alice-token', 'POST', '/v1/jobs', { ...spec, env: { KEY: 'alice-secret' } });
    fake.appendLog('1', 'stdout', 'alice log line\n');
    for (const [method, url] of [['GET', '/v1/jobs/1'], ['GET', '/v1/jobs/1/logs'], ['POST', '/v1/jobs/1/cancel'], ['POST', '/v1/jobs/1/preempt']] as const) {
      const res = await as('bob-token', method, url);
      expect(res.statusCode, url).toBe(404);
      expect(res.body, url).not.toMatch(/alice|KEY/);
    }
    expect(fake.jobs.get('1')!.state).toBe('queued');
    expect((await as('bob-token', 'GET', '/v1/jobs')).json()).toEqual({ jobs: [], next: null });
    expect((await as('alice-token', 'GET', '/v1/jobs/1/logs')).json<{ text: string }>().text).toBe('alice log line\n');
    expect((await as('root-token', 'GET', '/v1/jobs/1/logs')).json<{ text: string }>().text).toBe('alice log line\n');
    expect((await as('root-token', 'POST', '/v1/jobs/1/cancel')).json()).toMatchObject({ state: 'cancelled', owner: 'alice' });
  });

  it("shows a user the GPUs with their own jobs' ids and other users' jobs only as occupied; admins see every id", async () => {
    fake.addGpu('NVIDIA A100-SXM4-40GB', 7, []); // GPU 2, MIG off
    for (const token of ['alice-token', 'bob-token', 'bob-token', 'alice-token']) await as(token, 'POST', '/v1/jobs', spec);
    fake.startJob('1', 0, 2); // alice's on a 1g.5gb slice
    fake.startJob('2', 0, 4); // bob's on a 3g.20gb slice
    fake.startJob('3', 2, null); // bob's and alice's sharing GPU 2 whole
    fake.startJob('4', 2, null);
    type Gpus = { gpus: { instances: { profile: string; job: string | null; busy: boolean }[]; wholeGpuJobs: string[]; wholeGpuOtherJobs: number }[] };
    const seen = async (token: string) => (await as(token, 'GET', '/v1/gpus')).json<Gpus>().gpus;
    const alice = await seen('alice-token');
    expect(alice[0]!.instances.map((i) => [i.profile, i.job, i.busy])).toEqual([
      ['2g.10gb', null, false],
      ['1g.5gb', '1', true],
      ['3g.20gb', null, true],
    ]);
    expect(alice[2]).toMatchObject({ wholeGpuJobs: ['4'], wholeGpuOtherJobs: 1 });
    const bob = await seen('bob-token');
    expect(bob[0]!.instances.map((i) => [i.job, i.busy])).toEqual([
      [null, false],
      [null, true],
      ['2', true],
    ]);
    expect(bob[2]).toMatchObject({ wholeGpuJobs: ['3'], wholeGpuOtherJobs: 1 });
    // Nothing of the other user's jobs leaks: no id, no owner.
    const body = (await as('bob-token', 'GET', '/v1/gpus')).body;
    expect(body).not.toMatch(/"(1|4)"|alice/);
    const root = await seen('root-token');
    expect(root[0]!.instances.map((i) => i.job)).toEqual([null, '1', '2']);
    expect(root[2]).toMatchObject({ wholeGpuJobs: ['3', '4'], wholeGpuOtherJobs: 0 });
  });

  it('lists processes migpool did not start per slice and per MIG-off GPU: pids for admins, a count for other users', async () => {
    fake.addGpu('NVIDIA A100-SXM4-40GB', 7, []); // GPU 2, MIG off
    fake.gpuList[0]!.instances[1]!.foreignPids = [4000];
    fake.gpuList[2]!.foreignPids = [4001, 4002];
    type Foreign = { foreignProcesses: number; foreignPids: number[] };
    type Gpus = { gpus: (Foreign & { instances: (Foreign & { profile: string })[] })[] };
    const seen = async (token: string) => (await as(token, 'GET', '/v1/gpus')).json<Gpus>().gpus;
    const root = await seen('root-token');
    expect(root[0]!.instances.map((i) => [i.profile, i.foreignProcesses, i.foreignPids])).toEqual([
      ['2g.10gb', 0, []],
      ['1g.5gb', 1, [4000]],
      ['3g.20gb', 0, []],
    ]);
    expect(root.map((g) => [g.foreignProcesses, g.foreignPids])).toEqual([
      [0, []],
      [0, []],
      [2, [4001, 4002]],
    ]);
    const alice = await seen('alice-token');
    expect(alice[0]!.instances.map((i) => [i.foreignProcesses, i.foreignPids])).toEqual([
      [0, []],
      [1, []],
      [0, []],
    ]);
    expect(alice[2]).toMatchObject({ foreignProcesses: 2, foreignPids: [] });
    expect((await as('alice-token', 'GET', '/v1/gpus')).body).not.toMatch(/400[0-2]/);
  });

  it("serves a user the pool's metrics, their own jobs' and name's series, and other users' summed without names; admins get every series", async () => {
    for (const token of ['alice-token', 'bob-token', 'alice-token']) await as(token, 'POST', '/v1/jobs', spec);
    for (const [id, owner] of [['1', 'alice'], ['2', 'bob'], ['3', 'alice']]) fake.owners.set(id!, owner!); // JobSpec.user, as the service sets it
    fake.now += 60_000;
    fake.startJob('1', 0, 2); // alice's on the 1g.5gb
    fake.startJob('2', 0, 4); // bob's on the 3g.20gb
    const stats = fake.stats.bind(fake);
    fake.stats = async () => ({ ...(await stats()), multiplex: { backoffs: 0, daemons: 1, slowdowns: [{ job: '1', gpu: 0, slowdown: 1.25 }, { job: '2', gpu: 0, slowdown: 1.5 }] } });
    const scrape = async (token: string) => {
      const res = await as(token, 'GET', '/metrics');
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toContain('text/plain; version=0.0.4');
      return res.body;
    };
    const [root, alice, bob] = [await scrape('root-token'), await scrape('alice-token'), await scrape('bob-token')];
    // The admin (as Prometheus with the data dir's token) gets every job and user.
    expect(root).toContain(`migpool_running_job_info{hpc_job="1",user="alice",priority="foreground",Hostname="${hostname()}"} 1`);
    expect(root).toContain(`migpool_running_job_info{hpc_job="2",user="bob",priority="foreground",Hostname="${hostname()}"} 1`);
    expect(root).toContain('migpool_mps_foreground_slowdown_ratio{job="1",gpu="0"} 1.25');
    expect(root).toContain('migpool_jobs{state="queued",priority="foreground",user="alice"} 1');
    // A user gets their own jobs' series and their own per-user series...
    expect(bob).toContain(`migpool_running_job_info{hpc_job="2",user="bob",priority="foreground",Hostname="${hostname()}"} 1`);
    expect(bob).toContain('migpool_mps_foreground_slowdown_ratio{job="2",gpu="0"} 1.5');
    expect(bob).toContain('migpool_jobs{state="running",priority="foreground",user="bob"} 1');
    expect(bob).toContain('migpool_queue_wait_seconds_count{priority="foreground",user="bob"} 1');
    expect(alice).toContain('migpool_jobs{state="queued",priority="foreground",user="alice"} 1');
    expect(alice).toContain('migpool_mps_foreground_slowdown_ratio{job="1",gpu="0"} 1.25');
    // ...and the pool's series, where the other user's job counts without its id or owner.
    expect(bob).toContain('migpool_slices{profile="1g.5gb",state="busy"} 1');
    expect(bob).toMatch(/^migpool_gpu_instance_allocated\{[^}]*GPU_I_PROFILE="1g\.5gb"\} 1$/m);
    expect(bob).toContain('migpool_scheduling_pass_seconds_count 0');
    expect(bob).toContain('migpool_allocation_ratio ');
    // Other users' per-user series are summed under one name that is no user's, so the pool's totals stay.
    expect(bob).toContain('migpool_jobs{state="running",priority="foreground",user="(others)"} 1');
    expect(bob).toContain('migpool_jobs{state="queued",priority="foreground",user="(others)"} 1');
    expect(bob).toContain('migpool_queue_wait_seconds_count{priority="foreground",user="(others)"} 1');
    expect(alice).toContain('migpool_jobs{state="running",priority="foreground",user="(others)"} 1');
    const total = (text: string, metric: string) => [...text.matchAll(new RegExp(`^${metric}(?:\\{[^}]*\\})? (\\S+)$`, 'gm'))].reduce((sum, m) => sum + Number(m[1]), 0);
    expect(total(root, 'migpool_jobs')).toBe(3);
    expect(total(root, 'migpool_queue_wait_seconds_count')).toBe(2);
    for (const metric of ['migpool_jobs', 'migpool_queue_wait_seconds_count', 'migpool_queue_wait_seconds_bucket', 'migpool_jobs_finished_total', 'migpool_user_allocated_gpus']) {
      expect(total(bob, metric), metric).toBeCloseTo(total(root, metric), 9);
      expect(total(alice, metric), metric).toBeCloseTo(total(root, metric), 9);
    }
    // Nothing names another user or their jobs (nor jobs of no user: the default user's).
    expect(bob).not.toMatch(/alice|default|hpc_job="[13]"|job="[13]"/);
    expect(alice).not.toMatch(/bob|default|hpc_job="2"|job="2"/);
    // Written as the admin's scrape is: every line of a user's, others' sums aside, is a line of the admin's.
    const rootLines = new Set(root.split('\n'));
    for (const line of [...alice.split('\n'), ...bob.split('\n')]) if (!line.includes('(others)')) expect(rootLines.has(line), line).toBe(true);
  });

  it('lets admins list one user with ?user=; users always get their own', async () => {
    await as('alice-token', 'POST', '/v1/jobs', spec);
    await as('bob-token', 'POST', '/v1/jobs', spec);
    const ids = async (token: string, url: string) => (await as(token, 'GET', url)).json<{ jobs: { id: string }[] }>().jobs.map((j) => j.id);
    expect(await ids('root-token', '/v1/jobs')).toEqual(['1', '2']);
    expect(await ids('root-token', '/v1/jobs?user=bob')).toEqual(['2']);
    expect(await ids('alice-token', '/v1/jobs?user=bob')).toEqual(['1']);
  });

  it('tells a missing token from a wrong one, in one line each', async () => {
    const missing = await shared.inject({ method: 'GET', url: '/v1/jobs' });
    expect(missing.json<{ error: { message: string } }>().error.message).toMatch(/^GET \/v1\/jobs needs a token: send `Authorization: Bearer <token>` with your user's token \(`migpool users add NAME` prints one/);
    const wrong = await as('mallory-token', 'GET', '/v1/jobs');
    expect(wrong.statusCode).toBe(401);
    expect(wrong.json<{ error: { message: string } }>().error.message).toMatch(/^GET \/v1\/jobs: the token sent is no user's token \(mistyped, rotated or its user removed\)/);
  });
  it('ends an open event stream once its token is no longer its user\'s: rotated, removed, or admin taken away', async () => {
    const live: Record<string, { name: string; admin: boolean }> = { 'alice-token': { name: 'alice', admin: false }, 'root-token': { name: 'root', admin: true } };
    const server = await buildServer({ service: fake, callers: async (t) => live[t] ?? null, processMetrics: false });
    const address = await server.listen({ host: '127.0.0.1', port: 0 });
    await fake.submit(spec, { owner: 'alice' });
    /** Opens a stream as `token`, runs `change`, emits an event of job 1 and reads to the stream's end. */
    const afterChange = async (token: string, change: () => void): Promise<string> => {
      const res = await fetch(`${address}/v1/events`, { headers: { authorization: `Bearer ${token}` } });
      expect(res.status).toBe(200);
      const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
      let text = (await reader.read()).value ?? '';
      change();
      fake.emit('job-started', '1', { state: 'running' });
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return text;
        text += value;
      }
    };
    expect(await afterChange('alice-token', () => delete live['alice-token'])).not.toContain('job-started');
    expect(await afterChange('root-token', () => (live['root-token'] = { name: 'root', admin: false }))).not.toContain('job-started');
    server.server.closeAllConnections();
    await server.close();
  });
});
