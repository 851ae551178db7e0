import {
  callerSchema,
  errorSchema,
  eventQuerySchema,
  eventRecordSchema,
  gpuListSchema,
  gpuSnapshotSchema,
  jobIdParamsSchema,
  jobListQuerySchema,
  jobListSchema,
  jobRecordSchema,
  jobSpecInputSchema,
  jobSpecNormalizedSchema,
  logChunkSchema,
  logQuerySchema,
  statsSchema,
  type JsonSchema,
} from './schemas.js';
import { DEFAULT_JOB_PAGE, MAX_JOB_PAGE } from './job-page.js';

/**
 * The OpenAPI 3.1 document of the HTTP API (served at `GET /v1/openapi.json`). It is built from
 * the same schema objects the routes validate and serialise with; shared ones become
 * `#/components/schemas/...` references.
 */

const COMPONENTS: Readonly<Record<string, JsonSchema>> = {
  JobSpec: jobSpecInputSchema,
  JobSpecNormalized: jobSpecNormalizedSchema,
  JobRecord: jobRecordSchema,
  JobList: jobListSchema,
  LogChunk: logChunkSchema,
  GpuSnapshot: gpuSnapshotSchema,
  GpuList: gpuListSchema,
  ServiceStats: statsSchema,
  EventRecord: eventRecordSchema,
  Caller: callerSchema,
  Error: errorSchema,
};

/** Replaces every nested schema that is a component by a reference to it (the top one is kept). */
function withRefs(schema: JsonSchema, top = true): JsonSchema {
  if (!top) {
    for (const [name, component] of Object.entries(COMPONENTS)) if (component === schema) return { $ref: `#/components/schemas/${name}` };
  }
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(schema)) {
    if (Array.isArray(value)) out[key] = value.map((v: unknown) => (isSchema(v) ? withRefs(v, false) : v));
    else if (isSchema(value)) out[key] = withRefs(value, false);
    else out[key] = value;
  }
  return out;
}

function isSchema(v: unknown): v is JsonSchema {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const ref = (name: keyof typeof COMPONENTS & string) => ({ $ref: `#/components/schemas/${name}` });
const json = (name: keyof typeof COMPONENTS & string, description: string) => ({ description, content: { 'application/json': { schema: ref(name) } } });

const errors = {
  '400': json('Error', 'Bad input: the message says what and where (`path`), and how to fix it.'),
  '404': json('Error', "No such job or route, or another user's job (users see only their own)."),
  '500': json('Error', 'The service failed.'),
};
const unauthorized = { '401': json('Error', "Missing bearer token, or no user's token (`migpool users add` prints one; the admin's is in the `token` file of the data dir).") };

function queryParameters(schema: JsonSchema): object[] {
  const properties = (schema['properties'] ?? {}) as Record<string, JsonSchema>;
  return Object.entries(properties).map(([name, s]) => {
    const { description, ...rest } = s;
    return { name, in: 'query', required: false, ...(description !== undefined ? { description } : {}), schema: rest, ...(rest['type'] === 'array' ? { style: 'form', explode: false } : {}) };
  });
}

const idParameter = { name: 'id', in: 'path', required: true, schema: (jobIdParamsSchema['properties'] as Record<string, JsonSchema>)['id'] };
const secured = [{ bearer: [] }];
const idempotencyKey = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description:
    'Any unique string (a UUID) for this submission, sent again unchanged on a retry: a retry with the same key and body answers the jobs the first request queued and queues nothing; the same key with another body is refused (422). `migpool submit` sends one per invocation.',
  schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7e]+$' },
};
const keyConflict = { '422': json('Error', 'The Idempotency-Key was used for a different submission (as draft-ietf-httpapi-idempotency-key-header says).') };

/** The OpenAPI 3.1 document; `version` is the service's version. */
export function openApiDocument(version: string): Record<string, unknown> {
  return {
    openapi: '3.1.0',
    info: {
      title: 'migpool',
      version,
      description:
        'Training jobs on a pool of NVIDIA MIG slices. Every call is made as a user and needs `Authorization: Bearer <token>` with that user\'s token (`migpool users add NAME` prints it; the admin\'s is in `<data dir>/token`), reads included (jobs carry their env, logs their output); only this document and the dashboard\'s page and assets are open. A user sees, cancels and reads the logs of their own jobs only (another user\'s job answers 404); admins all. Each job records its `owner`. Env values are redacted in answers (`[redacted: N chars]`).',
    },
    security: secured,
    paths: {
      '/v1/jobs': {
        post: {
          operationId: 'submitJob',
          summary: 'Queue a job',
          description: 'A spec with `after: [ids]` starts once those jobs have succeeded (and fails if one of them fails or is cancelled); it may name only jobs the caller sees (their own; an admin any), others are refused as unknown ids. A spec with `array` is many jobs: submit it with POST /v1/jobs/batch. Bodies: JSON up to 1 MiB, YAML up to 64 KiB (413 beyond).',
          security: secured,
          parameters: [idempotencyKey],
          requestBody: {
            required: true,
            content: {
              'application/json': { schema: ref('JobSpec') },
              'application/yaml': { schema: ref('JobSpec') },
              'text/yaml': { schema: ref('JobSpec') },
            },
          },
          responses: { '201': json('JobRecord', 'The queued job (or, for a retry under the same Idempotency-Key, the job queued the first time).'), ...errors, ...keyConflict, ...unauthorized },
        },
        get: {
          operationId: 'listJobs',
          summary: 'List jobs, by id, a page at a time',
          description: `A page of the jobs that match, by id (ascending, or descending with \`order=desc\`): ${DEFAULT_JOB_PAGE} at most, or \`limit\` (1 to ${MAX_JOB_PAGE}; other values answer 400). \`next\` is null on the last page; otherwise the next page is the same query with \`after=<next>\`, until \`next\` is null. A user who is no admin pages through their own jobs.`,
          parameters: queryParameters(jobListQuerySchema),
          responses: { '200': json('JobList', 'One page of the jobs that match, and `next`.'), ...errors, ...unauthorized },
        },
      },
      '/v1/jobs/batch': {
        post: {
          operationId: 'submitJobs',
          summary: 'Queue several jobs, all or none (a bad spec queues nothing and is named by its position: job spec N)',
          description: 'A spec with `array: 0-99%8` stands for 100 jobs (indices 0 to 99 in `MIGPOOL_ARRAY_INDEX` and `array.index`), at most 8 of them running at once; the answer lists every job. Bodies: JSON up to 1 MiB, YAML up to 64 KiB (413 beyond).',
          security: secured,
          parameters: [idempotencyKey],
          requestBody: {
            required: true,
            content: {
              'application/json': { schema: { type: 'array', minItems: 1, maxItems: 10000, items: ref('JobSpec') } },
              'application/yaml': { schema: { type: 'array', minItems: 1, maxItems: 10000, items: ref('JobSpec') } },
            },
          },
          responses: { '201': { description: 'The queued jobs, in the order given.', content: { 'application/json': { schema: { type: 'object', required: ['jobs'], properties: { jobs: { type: 'array', items: ref('JobRecord') } } } } } }, ...errors, ...keyConflict, ...unauthorized },
        },
      },
      '/v1/jobs/{id}': {
        get: {
          operationId: 'getJob',
          summary: 'One job',
          parameters: [idParameter],
          responses: { '200': json('JobRecord', 'The job.'), ...errors, ...unauthorized },
        },
      },
      '/v1/jobs/{id}/cancel': {
        post: {
          operationId: 'cancelJob',
          summary: 'Cancel a queued job, or ask a running one to stop',
          security: secured,
          parameters: [idParameter],
          responses: { '200': json('JobRecord', 'The job after the request.'), ...errors, ...unauthorized },
        },
      },
      '/v1/jobs/{id}/preempt': {
        post: {
          operationId: 'preemptJob',
          summary: 'Stop a running job whose spec says preemptible: true and requeue it (it resumes from its checkpoint)',
          description:
            'Moves the attempt that was running when the preempt was asked (when the request came, or the earlier time in `Migpool-Asked-At`), once. A preempt that comes while the job is already being preempted or cancelled, while it is requeued by a preemption and not yet started again, or that was asked before the job\'s current attempt started, is the same request: it answers 200 with the job as it is and moves nothing. A job started again by a preemption is moved again only by a preempt asked after that start.',
          parameters: [
            idParameter,
            {
              name: 'Migpool-Asked-At',
              in: 'header',
              required: false,
              description: 'When the preempt was asked, in milliseconds since the epoch (`migpool preempt` sends its start): a request that took a while to arrive is still about the attempt that ran then. Only ever makes the request older than its arrival; other values answer 400.',
              schema: { type: 'string', pattern: '^[0-9]{1,15}$' },
            },
          ],
          responses: { '200': json('JobRecord', 'The job, being stopped (or as it is, when the request repeats one under way).'), '409': json('Error', 'The job is not running, or may not be moved.'), ...errors, ...unauthorized },
        },
      },
      '/v1/jobs/{id}/logs': {
        get: {
          operationId: 'readJobLog',
          summary: "A piece of a job's stdout or stderr, from a byte offset",
          parameters: [idParameter, ...queryParameters(logQuerySchema)],
          responses: { '200': json('LogChunk', 'Text from `offset`, the next offset, and whether the log is complete.'), ...errors, ...unauthorized },
        },
      },
      '/v1/whoami': {
        get: {
          operationId: 'whoami',
          summary: 'The user the token belongs to',
          responses: { '200': json('Caller', 'The user.'), ...errors, ...unauthorized },
        },
      },
      '/v1/gpus': {
        get: {
          operationId: 'listGpus',
          summary: 'Every GPU with its slices, the job on each, and the processes migpool did not start',
          description:
            "A user who is no admin sees the ids of their own jobs only (another user's job holds its instance as `job: null, busy: true`, and is counted in a whole GPU's `wholeGpuOtherJobs`). Processes migpool did not start (another account's, e.g. started by hand) are counted in `foreignProcesses` on the instance, or on the GPU when MIG is off; their process ids are in `foreignPids` for admins only (empty for other users). No job starts where any run.",
          responses: { '200': json('GpuList', 'The GPUs.'), ...errors, ...unauthorized },
        },
      },
      '/v1/stats': {
        get: {
          operationId: 'getStats',
          summary: 'Counts, recent timings and the utilisation timeline',
          responses: { '200': json('ServiceStats', 'The figures.'), ...errors, ...unauthorized },
        },
      },
      '/v1/events': {
        get: {
          operationId: 'streamEvents',
          summary: 'Server-sent events: `id: <seq>`, `event: <type>`, `data: <EventRecord>`',
          description:
            'A text/event-stream. With a `Last-Event-ID` header (or `?after=`), the events after that seq are replayed first, then live ones follow. A comment line is sent every 15 s as a heartbeat. A user who is no admin gets their own jobs\' events and those of no job, with other users\' job ids left out (an MPS slowdown\'s `foreground` null, a placement\'s MPS `neighbours` their own, others counted in `otherNeighbours`).',
          parameters: [
            { name: 'Last-Event-ID', in: 'header', required: false, schema: { type: 'string', pattern: '^\\d+$' } },
            ...queryParameters(eventQuerySchema),
          ],
          responses: {
            '200': { description: 'The event stream; each `data:` line is an EventRecord.', content: { 'text/event-stream': { schema: ref('EventRecord') } } },
            ...errors,
            ...unauthorized,
          },
        },
      },
      '/v1/openapi.json': {
        get: { operationId: 'getOpenApi', summary: 'This document', security: [], responses: { '200': { description: 'OpenAPI 3.1', content: { 'application/json': { schema: { type: 'object' } } } } } },
      },
      '/metrics': {
        get: { operationId: 'getMetrics', summary: "Prometheus metrics (Prometheus sends the token with `authorization: {credentials_file: <data dir>/token}`): every series for an admin; another user's names only their own jobs and name (other users' per-user series summed as user=\"(others)\")", responses: { '200': { description: 'Prometheus text format', content: { 'text/plain': { schema: { type: 'string' } } } }, ...unauthorized } },
      },
    },
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: "A user's token: `migpool users add NAME` prints it once; the admin's is in `<data dir>/token` (created by `migpool serve` on first start)." },
      },
      schemas: Object.fromEntries(Object.entries(COMPONENTS).map(([name, schema]) => [name, withRefs(schema)])),
    },
  };
}
