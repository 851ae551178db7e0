import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import YAML from 'yaml';
import { parseJobSpec } from '../jobs/job-spec.js';
import { MigpoolError } from '../errors.js';
import { JOB_STATES, type JobFilter, type JobState } from '../store/types.js';
import { isPublicPath, MUTATING_METHODS, redactEnv, redactToken } from './auth.js';
import { bearerToken } from './auth.js';
import { callerOf, eventFilter, setCaller, singleTokenCaller, visibleJob, type CallerLookup } from './users.js';
import type { JobRecord } from '../store/types.js';
import { DASHBOARD_CSS } from './dashboard-style.js';
import { DASHBOARD_HTML } from './dashboard-page.js';
import { DASHBOARD_SCRIPT } from './dashboard-script.js';
import { streamEvents } from './event-stream.js';
import { visibleGpus } from './visible-gpus.js';
import { checkAfter, pageLimit, pageOf } from './job-page.js';
import { visibleRecord } from './visible-job.js';
import { createMetrics } from './metrics.js';
import { visibleMetrics } from './visible-metrics.js';
import { openApiDocument } from './openapi.js';
import { submitOptionsOf } from './idempotency.js';
import {
  callerSchema,
  errorSchema,
  eventQuerySchema,
  gpuListSchema,
  jobIdParamsSchema,
  jobListQuerySchema,
  jobListSchema,
  jobRecordSchema,
  jobSpecInputSchema,
  logChunkSchema,
  logQuerySchema,
  statsSchema,
} from './schemas.js';
import type { PoolService } from '../control/service-port.js';

/** Options of {@link buildServer}. */
export interface ServerOptions {
  readonly service: PoolService;
  /** With no `callers`: the one bearer token every call carries, an admin's (named `admin`). */
  readonly token?: string;
  /** Who a bearer token belongs to (the store's users, see `storeCallers`); absent: `token` alone. */
  readonly callers?: CallerLookup;
  /** fastify's logger: false (default), true, or pino options. `?token=` is redacted from logged URLs. */
  readonly logger?: boolean | object;
  /** Where the token is kept, named in 401 answers (default: "the `token` file of the data dir"). */
  readonly tokenFile?: string;
  /** Milliseconds between heartbeat comments on /v1/events. Default 15000. */
  readonly heartbeatMs?: number;
  /** Version in the OpenAPI document. Default {@link API_VERSION}. */
  readonly version?: string;
  /** Publish process metrics on /metrics. Default true. */
  readonly processMetrics?: boolean;
  /**
   * Host names (without port) requests may name in their Host header; others get 403. Guards a
   * loopback listener against DNS rebinding: a web page whose name is made to point at 127.0.0.1
   * would otherwise read the API from the user's browser. Absent: any host.
   */
  readonly allowedHosts?: readonly string[];
}

/** The host name of a Host header, without its port and brackets, lower-cased. */
export function hostOf(header: string | undefined): string {
  const h = (header ?? '').trim().toLowerCase();
  const bracketed = /^\[([^\]]*)\]/.exec(h);
  if (bracketed) return bracketed[1] ?? '';
  // A bare IPv6 address has colons of its own and no port.
  return h.split(':').length === 2 ? h.replace(/:\d*$/, '') : h;
}

/** A job as the API shows it: its env values redacted (they may hold API keys). */
function redacted(job: JobRecord): JobRecord {
  return { ...job, spec: { ...job.spec, env: redactEnv(job.spec.env ?? {}) } };
}

/**
 * Largest YAML body taken: 64 KiB. The YAML parser's time grows faster than its input (measured
 * here with yaml 2 on Node 20: 40000 anchors in 760 KB took 12 s, 1 MB of nested brackets 3 s,
 * each blocking the whole service; at 64 KiB the worst found took 0.3 s), while a job spec is a
 * few hundred bytes. JSON, parsed in linear time, keeps the 1 MiB limit.
 */
export const MAX_YAML_BODY_BYTES = 65_536;

/** Version of the HTTP API published in the OpenAPI document. */
export const API_VERSION = '0.1.0';

/** An HTTP answer other than 2xx, with the `code` of the error body. */
class ApiError extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: string,
    message: string,
    readonly path?: string,
  ) {
    super(message);
  }
}

interface ErrorBody {
  error: { code: string; message: string; path?: string };
}

function errorBody(code: string, message: string, path?: string): ErrorBody {
  return { error: path === undefined ? { code, message } : { code, message, path } };
}

function validationPath(v: { instancePath?: string; params?: Record<string, unknown> }): string | undefined {
  const base = (v.instancePath ?? '').replace(/^\//, '').replace(/\//g, '.');
  const extra = v.params?.['missingProperty'] ?? v.params?.['additionalProperty'];
  const full = [base, typeof extra === 'string' ? extra : ''].filter((p) => p !== '').join('.');
  return full === '' ? undefined : full;
}

/** The status and body of any error a route or hook throws. */
function describeError(error: unknown): { status: number; body: ErrorBody } {
  if (error instanceof ApiError) return { status: error.statusCode, body: errorBody(error.code, error.message, error.path) };
  if (error instanceof MigpoolError) {
    const path = typeof error.details['path'] === 'string' ? error.details['path'] : undefined;
    const own = error.details['httpStatus'];
    const status = typeof own === 'number' && own >= 400 && own < 500 ? own : error.code === 'BAD_INPUT' ? 400 : error.code === 'CHECK_FAILED' ? 409 : 500;
    return { status, body: errorBody(error.code, error.message, path) };
  }
  const e = error as Partial<FastifyError>;
  if (Array.isArray(e.validation) && e.validation.length > 0) {
    const first = e.validation[0] as { instancePath?: string; message?: string; params?: Record<string, unknown> };
    const path = validationPath(first);
    const where = e.validationContext ?? 'request';
    return { status: 400, body: errorBody('BAD_INPUT', `${where}${path !== undefined ? ` ${path}` : ''}: ${first.message ?? 'is not valid'}; see /v1/openapi.json`, path) };
  }
  if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    if (e.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return { status: 415, body: errorBody('BAD_INPUT', `${e.message}: send JSON (application/json) or YAML (application/yaml)`) };
    if (e.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return { status: 413, body: errorBody('BAD_INPUT', 'the body is too large (1 MiB at most): send one job spec per request') };
    return { status: e.statusCode, body: errorBody('BAD_INPUT', e.message ?? 'bad request') };
  }
  return { status: 500, body: errorBody('INTERNAL', `internal error: ${(error instanceof Error ? error.message : String(error)).split('\n')[0]}`) };
}

function notFound(what: string): ApiError {
  return new ApiError(404, 'NOT_FOUND', what);
}

const errorResponses = { '4xx': errorSchema, '5xx': errorSchema };

function loggerOption(logger: boolean | object | undefined): FastifyServerOptions['logger'] {
  if (logger === undefined || logger === false) return false;
  const base = logger === true ? {} : (logger as { serializers?: Record<string, unknown> });
  return {
    ...base,
    serializers: {
      ...(base.serializers ?? {}),
      req: (req: FastifyRequest) => ({ method: req.method, url: redactToken(req.url), host: req.host, remoteAddress: req.ip, remotePort: req.socket?.remotePort }),
    },
  } as FastifyServerOptions['logger'];
}

function parseStates(values: readonly string[] | undefined): JobState[] | undefined {
  if (values === undefined) return undefined;
  const states = values.flatMap((v) => v.split(',')).map((s) => s.trim()).filter((s) => s !== '');
  for (const s of states) {
    if (!(JOB_STATES as readonly string[]).includes(s)) {
      throw new ApiError(400, 'BAD_INPUT', `querystring state: unknown job state '${s}': use one or more of ${JOB_STATES.join(', ')}, separated by commas`, 'state');
    }
  }
  return states.length > 0 ? (states as JobState[]) : undefined;
}

/** The token a request carries: its bearer token, or for the event stream alone also `?token=`. */
function tokenOf(request: FastifyRequest): string | undefined {
  // EventSource cannot send headers: the event stream alone also takes `?token=` (redacted from logs).
  const path = request.url.split('?')[0] ?? '';
  const queryToken = request.method === 'GET' && path === '/v1/events' ? (request.query as { token?: unknown }).token : undefined;
  return bearerToken(request.headers.authorization) ?? (typeof queryToken === 'string' && queryToken !== '' ? queryToken : undefined);
}

let echartsBundle: Promise<Buffer | null> | null = null;

/** echarts' browser bundle from node_modules (resolved from this module, in src/ or dist/), or null. */
function readEcharts(): Promise<Buffer | null> {
  echartsBundle ??= (async () => {
    try {
      return await readFile(createRequire(import.meta.url).resolve('echarts/dist/echarts.min.js'));
    } catch {
      return null;
    }
  })();
  return echartsBundle;
}

const DASHBOARD_CSP = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/**
 * The HTTP face of `migpool serve`: the REST API under /v1 (see `openapi.ts`), server-sent events,
 * Prometheus metrics at /metrics and the web dashboard at /. Every call but the dashboard's page,
 * its assets and the OpenAPI document is made as a user, named by `Authorization: Bearer <token>`
 * (the event stream also takes `?token=`, for browsers' EventSource): a user sees only their own
 * jobs, admins all, and others' jobs answer 404 (see `users.ts`). Env values are redacted in
 * answers. The caller listens (loopback by default) and closes; closing ends open event streams.
 */
export async function buildServer(opts: ServerOptions): Promise<FastifyInstance> {
  const { service } = opts;
  if (opts.callers === undefined && opts.token === undefined) throw new Error('buildServer: give callers or a token');
  const callers = opts.callers ?? singleTokenCaller(opts.token!);
  const tokenWhere = opts.tokenFile ?? 'the `token` file of the data dir that `migpool serve` uses (~/.local/share/migpool/token by default)';
  const app = Fastify({ logger: loggerOption(opts.logger) });
  const metrics = createMetrics(service, { processMetrics: opts.processMetrics ?? true });
  const streams = new Set<() => void>();

  const defaultJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('text/plain');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    const text = body as string;
    if (text.trim() === '') return done(null, undefined);
    defaultJson(req, text, (err, value) => {
      if (err) return done(new ApiError(400, 'BAD_INPUT', `the body is not valid JSON (${err.message}): send one job spec as JSON, or as YAML with Content-Type application/yaml`), undefined);
      done(null, value);
    });
  });
  app.addContentTypeParser(['application/yaml', 'application/x-yaml', 'text/yaml', 'text/x-yaml'], { parseAs: 'string' }, (_req, body, done) => {
    const bytes = Buffer.byteLength(body as string);
    if (bytes > MAX_YAML_BODY_BYTES) {
      return done(new ApiError(413, 'BAD_INPUT', `the YAML body is ${bytes} bytes, more than ${MAX_YAML_BODY_BYTES}: a job spec is a few lines; send bigger ones as JSON (application/json, 1 MiB at most)`), undefined);
    }
    try {
      done(null, YAML.parse(body as string));
    } catch (e) {
      const where = e instanceof YAML.YAMLError && e.linePos ? ` at line ${e.linePos[0].line}, column ${e.linePos[0].col}` : '';
      const message = (e instanceof Error ? e.message : String(e)).split('\n')[0];
      done(new ApiError(400, 'BAD_INPUT', `the body is not valid YAML${where} (${message}): send one job spec as a YAML mapping`), undefined);
    }
  });

  const allowedHosts = opts.allowedHosts ? new Set(opts.allowedHosts.map((h) => hostOf(h))) : null;
  app.addHook('onRequest', async (request) => {
    if (allowedHosts && !allowedHosts.has(hostOf(request.headers.host))) {
      throw new ApiError(
        403,
        'FORBIDDEN_HOST',
        `Host '${request.headers.host ?? ''}' is not a name of this service (it answers to ${[...allowedHosts].join(', ')}): use one of those, or start migpool serve with --listen on the address you want to reach it by`,
      );
    }
    const path = request.url.split('?')[0] ?? '';
    if (!MUTATING_METHODS.has(request.method) && isPublicPath(path)) return;
    const token = tokenOf(request);
    const caller = token === undefined ? null : await callers(token);
    if (caller === null) {
      const how = `send \`Authorization: Bearer <token>\` with your user's token (\`migpool users add NAME\` prints one; the admin's is in ${tokenWhere}; open the dashboard as /?token=...)`;
      throw new ApiError(
        401,
        'UNAUTHORIZED',
        token === undefined ? `${request.method} ${path} needs a token: ${how}` : `${request.method} ${path}: the token sent is no user's token (mistyped, rotated or its user removed): ${how}`,
      );
    }
    setCaller(request, caller);
  });
  app.addHook('onSend', async (_request, reply) => {
    reply.header('x-content-type-options', 'nosniff');
    reply.header('referrer-policy', 'no-referrer');
  });
  app.addHook('preClose', async () => {
    for (const stop of [...streams]) stop();
    metrics.close();
  });

  app.setErrorHandler((error, request, reply) => {
    const { status, body } = describeError(error);
    if (status >= 500) request.log.error({ err: error }, 'request failed');
    if (status === 401) reply.header('www-authenticate', 'Bearer realm="migpool"');
    return reply.code(status).send(body);
  });
  app.setNotFoundHandler((request, reply) => {
    const { status, body } = describeError(notFound(`no route ${request.method} ${redactToken(request.url).split('?')[0]}: the API is described at /v1/openapi.json`));
    return reply.code(status).send(body);
  });

  app.post(
    '/v1/jobs',
    {
      schema: { body: jobSpecInputSchema, response: { 201: jobRecordSchema, ...errorResponses } },
      // The body is checked with the zod schema the service itself uses, for its messages and field paths.
      validatorCompiler: () => (data: unknown) => {
        try {
          parseJobSpec(data);
          return true;
        } catch (e) {
          return { error: e as Error };
        }
      },
    },
    async (request, reply) => {
      const job = await service.submit(request.body, { ...submitOptionsOf(request.headers), owner: callerOf(request).name, seesAllJobs: callerOf(request).admin });
      return reply.code(201).header('location', `/v1/jobs/${encodeURIComponent(job.id)}`).send(redacted(job));
    },
  );

  app.post(
    '/v1/jobs/batch',
    {
      schema: { body: { type: 'array', minItems: 1, maxItems: 10_000, items: jobSpecInputSchema }, response: { 201: { type: 'object', required: ['jobs'], properties: { jobs: { type: 'array', items: jobRecordSchema } } }, ...errorResponses } },
      // Every spec is checked by the service (all or none), with `job spec N` in its message.
      validatorCompiler: () => (data: unknown) => (Array.isArray(data) && data.length > 0 && data.length <= 10_000 ? true : { error: new Error('give a list of 1 to 10000 job specs') }),
    },
    async (request, reply) => {
      const jobs = await service.submitMany(request.body as unknown[], { ...submitOptionsOf(request.headers), owner: callerOf(request).name, seesAllJobs: callerOf(request).admin });
      return reply.code(201).send({ jobs: jobs.map(redacted) });
    },
  );

  app.get<{ Querystring: { state?: string[]; priority?: 'foreground' | 'background'; user?: string; after?: string; limit?: number; order?: 'asc' | 'desc' } }>(
    '/v1/jobs',
    {
      schema: { querystring: jobListQuerySchema, response: { 200: jobListSchema, ...errorResponses } },
      // `limit` and `after` are checked before the schema, for messages that name the fix (paging).
      preValidation: async (request) => {
        const raw = request.query as Record<string, unknown>;
        pageLimit(raw['limit']);
        checkAfter(raw['after']);
      },
    },
    async (request) => {
      const q = request.query;
      const states = parseStates(q.state);
      // Users list their own jobs; admins everyone's, or one user's with `?user=`.
      const caller = callerOf(request);
      const owner = caller.admin ? q.user : caller.name;
      const limit = pageLimit(q.limit);
      const filter: JobFilter = {
        ...(states !== undefined ? { states } : {}),
        ...(q.priority !== undefined ? { priority: q.priority } : {}),
        ...(owner !== undefined ? { owner } : {}),
        ...(q.after !== undefined ? { after: q.after } : {}),
        // One more than the page, to know whether another follows.
        limit: limit + 1,
        ...(q.order !== undefined ? { order: q.order } : {}),
      };
      const page = pageOf(await service.listJobs(filter), limit);
      const seen = new Map<string, Promise<boolean>>();
      return { jobs: await Promise.all(page.jobs.map(async (j) => redacted(await visibleRecord(service, caller, j, seen)))), next: page.next };
    },
  );

  app.get<{ Params: { id: string } }>('/v1/jobs/:id', { schema: { params: jobIdParamsSchema, response: { 200: jobRecordSchema, ...errorResponses } } }, async (request) => {
    const job = await visibleJob(service, callerOf(request), request.params.id);
    if (job === null) throw notFound(`no job ${request.params.id}: list the jobs with GET /v1/jobs (or \`migpool jobs\`)`);
    return redacted(await visibleRecord(service, callerOf(request), job));
  });

  app.post<{ Params: { id: string } }>('/v1/jobs/:id/cancel', { schema: { params: jobIdParamsSchema, response: { 200: jobRecordSchema, ...errorResponses } } }, async (request) => {
    const job = (await visibleJob(service, callerOf(request), request.params.id)) && (await service.cancel(request.params.id));
    if (job === null) throw notFound(`no job ${request.params.id} to cancel: list the jobs with GET /v1/jobs (or \`migpool jobs\`)`);
    return redacted(await visibleRecord(service, callerOf(request), job));
  });

  app.post<{ Params: { id: string } }>('/v1/jobs/:id/preempt', { schema: { params: jobIdParamsSchema, response: { 200: jobRecordSchema, ...errorResponses } } }, async (request, reply) => {
    if (!service.preempt) throw new ApiError(501, 'NOT_IMPLEMENTED', 'this service cannot preempt jobs');
    // When it was asked: as the request came (before authentication and the look-up), or earlier
    // as the client says (Migpool-Asked-At; never later). An attempt started since is not the one it asked to move.
    const receivedAt = Date.now() - reply.elapsedTime;
    const header = request.headers['migpool-asked-at'];
    if (header !== undefined && (typeof header !== 'string' || !/^\d{1,15}$/.test(header))) {
      throw new ApiError(400, 'BAD_INPUT', `Migpool-Asked-At '${String(header)}' is not a time: send when the preempt was asked, in milliseconds since the epoch, or no such header`, 'Migpool-Asked-At');
    }
    const askedAt = header === undefined ? receivedAt : Math.min(receivedAt, Number(header));
    const job = (await visibleJob(service, callerOf(request), request.params.id)) && (await service.preempt(request.params.id, askedAt));
    if (job === null) throw notFound(`no job ${request.params.id} to preempt: list the jobs with GET /v1/jobs (or \`migpool jobs\`)`);
    return redacted(await visibleRecord(service, callerOf(request), job));
  });

  app.get<{ Params: { id: string }; Querystring: { stream: 'stdout' | 'stderr'; offset: number; limit?: number } }>(
    '/v1/jobs/:id/logs',
    { schema: { params: jobIdParamsSchema, querystring: logQuerySchema, response: { 200: logChunkSchema, ...errorResponses } } },
    async (request) => {
      const { stream, offset, limit } = request.query;
      const chunk = (await visibleJob(service, callerOf(request), request.params.id)) && (await service.readLog(request.params.id, stream, offset, limit));
      if (chunk === null) throw notFound(`no job ${request.params.id}: list the jobs with GET /v1/jobs (or \`migpool jobs\`)`);
      return chunk;
    },
  );

  app.get('/v1/whoami', { schema: { response: { 200: callerSchema, ...errorResponses } } }, async (request) => callerOf(request));

  // The pool's GPUs, with the ids of the jobs the caller may see (other users' jobs only as occupied).
  app.get('/v1/gpus', { schema: { response: { 200: gpuListSchema, ...errorResponses } } }, async (request) => ({ gpus: await visibleGpus(service, callerOf(request), await service.gpus()) }));
  app.get('/v1/stats', { schema: { response: { 200: statsSchema, ...errorResponses } } }, async () => service.stats());

  app.get<{ Querystring: { after?: number } }>('/v1/events', { schema: { querystring: eventQuerySchema } }, (request, reply) => {
    const header = request.headers['last-event-id'];
    let afterSeq: number | null = request.query.after ?? null;
    // A seq past the whole numbers a JSON number holds exactly (1e20, 1e400 read as Infinity) is no event's.
    if (afterSeq !== null && !Number.isSafeInteger(afterSeq)) {
      throw new ApiError(400, 'BAD_INPUT', `querystring after: ${String(request.query.after)} is not an event seq: give the seq of the last event received (at most ${Number.MAX_SAFE_INTEGER}), or none`, 'after');
    }
    if (typeof header === 'string' && header.trim() !== '') {
      if (!/^\d+$/.test(header.trim()) || !Number.isSafeInteger(Number(header.trim()))) {
        throw new ApiError(400, 'BAD_INPUT', `Last-Event-ID '${header}' is not an event seq: send the id of the last event received, or none`, 'Last-Event-ID');
      }
      afterSeq = Number(header.trim());
    }
    reply.hijack();
    const caller = callerOf(request);
    const filter = eventFilter(service, caller);
    // A stream outlives its request: it ends once its token stops being this user's as they were
    // (rotated, user removed, admin taken away), as the next request would be refused.
    const token = tokenOf(request)!;
    const authorized = async () => {
      const now = await callers(token);
      return now !== null && now.name === caller.name && now.admin === caller.admin;
    };
    const stop = streamEvents(service, reply.raw, { afterSeq, heartbeatMs: opts.heartbeatMs ?? 15_000, authorized, ...(filter ? { filter } : {}) });
    // A client gone before its stream began (reply.raw destroyed: no 'close' comes again) is stopped already.
    if (reply.raw.destroyed) return;
    streams.add(stop);
    reply.raw.on('close', () => streams.delete(stop));
  });

  const document = openApiDocument(opts.version ?? API_VERSION);
  app.get('/v1/openapi.json', async () => document);

  // All series for an admin; for another user, their own jobs' and name's, other users' summed without names (visible-metrics.ts).
  app.get('/metrics', async (request, reply) => reply.type(metrics.registry.contentType).send(await visibleMetrics(metrics, service, callerOf(request))));

  const page = (reply: FastifyReply, type: string, body: string | Buffer, cache: string) => reply.type(type).header('cache-control', cache).send(body);
  app.get('/', async (_request, reply) => page(reply.header('content-security-policy', DASHBOARD_CSP).header('x-frame-options', 'DENY'), 'text/html; charset=utf-8', DASHBOARD_HTML, 'no-cache'));
  app.get('/assets/dashboard.js', async (_request, reply) => page(reply, 'text/javascript; charset=utf-8', DASHBOARD_SCRIPT, 'no-cache'));
  app.get('/assets/dashboard.css', async (_request, reply) => page(reply, 'text/css; charset=utf-8', DASHBOARD_CSS, 'no-cache'));
  app.get('/assets/echarts.min.js', async (_request, reply) => {
    const bundle = await readEcharts();
    if (bundle === null) throw notFound('echarts is not installed beside migpool (node_modules/echarts): the dashboard works without its charts');
    return page(reply, 'text/javascript; charset=utf-8', bundle, 'public, max-age=86400');
  });

  return app;
}
