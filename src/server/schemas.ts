import { z } from 'zod';
import { jobSpecSchema } from '../jobs/job-spec.js';
import { JOB_STATES } from '../store/types.js';
import { DEFAULT_JOB_PAGE, MAX_JOB_PAGE } from './job-page.js';

/**
 * JSON Schemas of the HTTP API: fastify validates requests and serialises responses with them, and
 * the OpenAPI document (`openapi.ts`) publishes the very same objects. They use only keywords that
 * mean the same in JSON Schema draft-07 (fastify's Ajv) and 2020-12 (OpenAPI 3.1).
 */
export type JsonSchema = Record<string, unknown>;

const EVENT_TYPES = [
  'job-submitted',
  'job-starting',
  'job-started',
  'job-finished',
  'job-requeued',
  'job-cancel-requested',
  'job-preempting',
  'gpu-reconfiguring',
  'gpu-reconfigure-failed',
  'gpu-reconfigured',
  'service-started',
  'mps-backoff',
  'mps-slowdown',
] as const;

function withoutDialect(schema: JsonSchema): JsonSchema {
  const { $schema: _dialect, ...rest } = schema;
  return rest;
}

/** A job spec as a user writes it (the zod schema's input side: units as text, defaults optional). */
export const jobSpecInputSchema: JsonSchema = {
  ...withoutDialect(z.toJSONSchema(jobSpecSchema, { io: 'input' }) as JsonSchema),
  description: 'A training job as submitted (JSON, or YAML with Content-Type application/yaml). Give exactly one of resources.profile, resources.memory or resources.gpus.',
};

/**
 * A job spec as the service keeps it (the zod schema's output side): defaults filled in, memory in
 * GiB and durations in seconds as numbers.
 */
export const jobSpecNormalizedSchema: JsonSchema = (() => {
  const schema = withoutDialect(z.toJSONSchema(jobSpecSchema, { io: 'output', unrepresentable: 'any' }) as JsonSchema);
  const properties = schema['properties'] as Record<string, JsonSchema>;
  const resources = properties['resources'] as JsonSchema;
  (resources['properties'] as Record<string, JsonSchema>)['memory'] = { type: 'number', description: 'GiB' };
  properties['maxRuntime'] = { type: 'number', description: 'seconds' };
  properties['estimatedSeconds'] = { type: 'number', description: 'seconds' };
  return { ...schema, description: 'A validated job spec: defaults filled in, memory in GiB, durations in seconds.' };
})();

/** `{"error": {"code", "message", "path"?}}`: every 4xx and 5xx answer. */
export const errorSchema: JsonSchema = {
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['code', 'message'],
      properties: {
        code: { type: 'string', description: 'BAD_INPUT, UNAUTHORIZED, NOT_FOUND, DEVICE, RUNTIME or INTERNAL' },
        message: { type: 'string', description: 'One line: what was wrong, where, and how to fix it.' },
        path: { type: 'string', description: 'Field path of the offending value, e.g. resources.profile.' },
      },
    },
  },
};

const placementSchema: JsonSchema = {
  anyOf: [
    { type: 'null' },
    {
      type: 'object',
      required: ['kind', 'gpu', 'start', 'profile', 'devices'],
      properties: {
        kind: { type: 'string', enum: ['instance'] },
        gpu: { type: 'integer' },
        start: { type: 'integer' },
        profile: { type: 'string' },
        devices: { type: 'array', items: { type: 'string' } },
      },
    },
    {
      type: 'object',
      required: ['kind', 'gpus', 'sharing', 'devices'],
      properties: {
        kind: { type: 'string', enum: ['gpus'] },
        gpus: { type: 'array', items: { type: 'integer' } },
        sharing: { type: 'string', enum: ['exclusive', 'timeslice', 'mps'] },
        devices: { type: 'array', items: { type: 'string' } },
        mps: {
          type: 'object',
          description: "Sharing 'mps': the job runs as a CUDA MPS client.",
          required: ['clientPriority', 'activeThreadPercentage', 'neighbours'],
          properties: {
            clientPriority: { type: 'integer', enum: [0, 1], description: 'CUDA_MPS_CLIENT_PRIORITY: 0 normal (foreground), 1 below normal (background).' },
            activeThreadPercentage: { type: ['integer', 'null'], description: 'CUDA_MPS_ACTIVE_THREAD_PERCENTAGE, or null for no limit.' },
            neighbours: { type: 'array', items: { type: 'string' }, description: "The other jobs on its GPU now (to a user who is no admin, their own only)." },
            otherNeighbours: { type: 'integer', description: "Other users' jobs on its GPU now, counted: their ids are not the caller's to see (absent for an admin)." },
          },
        },
      },
    },
  ],
};

const processSchema: JsonSchema = {
  anyOf: [
    { type: 'null' },
    {
      type: 'object',
      required: ['pid', 'startTicks', 'dir'],
      properties: { pid: { type: 'integer' }, startTicks: { type: 'string' }, dir: { type: 'string' } },
    },
  ],
};

const nullableNumber: JsonSchema = { type: ['number', 'null'] };

/** A job as the service keeps it. */
export const jobRecordSchema: JsonSchema = {
  type: 'object',
  required: ['id', 'spec', 'state', 'version', 'submittedAt', 'startedAt', 'endedAt', 'attempt', 'placement', 'process', 'exitCode', 'reason', 'cancelRequested'],
  properties: {
    id: { type: 'string' },
    spec: jobSpecNormalizedSchema,
    state: { type: 'string', enum: [...JOB_STATES] },
    version: { type: 'integer' },
    submittedAt: { type: 'number', description: 'ms since the Unix epoch' },
    startedAt: { ...nullableNumber, description: 'start of the current or last attempt, ms since the Unix epoch' },
    endedAt: nullableNumber,
    attempt: { type: 'integer' },
    placement: placementSchema,
    process: processSchema,
    exitCode: { type: ['integer', 'null'] },
    reason: { type: ['string', 'null'] },
    cancelRequested: { type: 'boolean' },
    owner: { type: ['string', 'null'], description: 'the user who submitted the job (null for jobs from before users existed)' },
    preemptions: { type: 'integer', description: 'attempts the service stopped to move the job (they do not count against retries)' },
    pending: { type: ['string', 'null'], description: 'why a queued job waits, in words (the policy says, or the generic explanation)' },
    progress: {
      anyOf: [
        { type: 'null' },
        {
          type: 'object',
          required: ['samples', 'total', 'fraction', 'samplesPerSecond', 'etaSeconds', 'updatedAt'],
          description: 'what a running job last reported on stdout ({"migpool_samples": N, "migpool_total": T})',
          properties: {
            samples: { type: 'number' },
            total: { type: ['number', 'null'] },
            fraction: { type: ['number', 'null'], description: 'samples / total' },
            samplesPerSecond: { type: ['number', 'null'], description: 'over the last minute of reports' },
            etaSeconds: { type: ['number', 'null'], description: 'seconds until total at that speed' },
            updatedAt: { type: 'number', description: 'ms since the Unix epoch' },
          },
        },
      ],
    },
  },
};

/** `{"jobs": [JobRecord...], "next": id | null}`: one page of `GET /v1/jobs`. */
export const jobListSchema: JsonSchema = {
  type: 'object',
  required: ['jobs', 'next'],
  properties: {
    jobs: { type: 'array', items: jobRecordSchema },
    next: { type: ['string', 'null'], description: 'more jobs match: ask for the next page with the same query and `after` set to this (the last id of this page); null on the last page' },
  },
};

/** A piece of a job's log. */
export const logChunkSchema: JsonSchema = {
  type: 'object',
  required: ['text', 'nextOffset', 'done'],
  properties: {
    text: { type: 'string' },
    nextOffset: { type: 'integer', description: 'byte offset to ask for next' },
    done: { type: 'boolean', description: 'the job is final and the end of the log was reached' },
  },
};

/** Processes migpool did not start, counted for every caller. */
const foreignProcessesSchema: JsonSchema = {
  type: 'integer',
  description: "processes migpool did not start running here, as the service last read the GPUs' processes (every tick); no job starts here while any do",
};

/** Their pids, for admins only. */
const foreignPidsSchema: JsonSchema = {
  type: 'array',
  items: { type: 'integer' },
  description: 'process ids of the processes migpool did not start, for an admin; empty for other users (who get foreignProcesses, the count)',
};

/**
 * One GPU with its MIG instances (or whole-GPU jobs) and the job on each: its id where the caller
 * may see the job (theirs, or any for an admin), else only that one is there.
 */
export const gpuSnapshotSchema: JsonSchema = {
  type: 'object',
  required: ['index', 'name', 'uuid', 'migEnabled', 'slices', 'instances', 'wholeGpuJobs', 'reconfiguring'],
  properties: {
    index: { type: 'integer' },
    name: { type: 'string' },
    uuid: { type: 'string' },
    migEnabled: { type: 'boolean' },
    slices: { type: 'integer', description: 'compute slices of the GPU (7 on an A100)' },
    instances: {
      type: 'array',
      items: {
        type: 'object',
        required: ['profile', 'start', 'size', 'uuid', 'job'],
        properties: {
          profile: { type: 'string' },
          start: { type: 'integer' },
          size: { type: 'integer' },
          uuid: { type: ['string', 'null'] },
          job: { type: ['string', 'null'], description: "id of the job on this instance; null when idle, or when the job is another user's (then busy is true)" },
          busy: { type: 'boolean', description: "a job holds the instance, the caller's or another user's" },
          gpuInstanceId: { type: ['integer', 'null'], description: "the GPU instance's NVML ID (nvidia-smi's GI ID, dcgm-exporter's GPU_I_ID)" },
          foreignProcesses: foreignProcessesSchema,
          foreignPids: foreignPidsSchema,
        },
      },
    },
    wholeGpuJobs: { type: 'array', items: { type: 'string' }, description: 'ids of the jobs on the whole GPU (MIG off) that the caller may see' },
    wholeGpuOtherJobs: { type: 'integer', description: "other users' jobs on the whole GPU, counted (their ids are theirs to see; 0 for an admin)" },
    foreignProcesses: { ...foreignProcessesSchema, description: `${foreignProcessesSchema['description'] as string} (on the whole GPU, MIG off; on a MIG GPU see each instance's)` },
    foreignPids: foreignPidsSchema,
    reconfiguring: { type: 'boolean' },
    repartitionFailure: {
      anyOf: [
        { type: 'null' },
        {
          type: 'object',
          required: ['failures', 'error', 'retryAt'],
          properties: { failures: { type: 'integer' }, error: { type: 'string' }, retryAt: { type: 'number', description: 'ms since the Unix epoch' } },
        },
      ],
      description: 'set while re-partitions of this GPU fail (it backs off)',
    },
    unreachable: {
      anyOf: [{ type: 'null' }, { type: 'string' }],
      description: 'set while the GPU does not answer nvidia-smi (fallen off the bus, or no longer listed): why, and what to do; no job starts there meanwhile',
    },
  },
};

/** `{"gpus": [GpuSnapshot...]}`. */
export const gpuListSchema: JsonSchema = {
  type: 'object',
  required: ['gpus'],
  properties: { gpus: { type: 'array', items: gpuSnapshotSchema } },
};

const priorityEnum = { type: 'string', enum: ['foreground', 'background'] };

/** What /v1/stats answers (see `ServiceStats`). */
export const statsSchema: JsonSchema = {
  type: 'object',
  required: ['policy', 'startedAt', 'jobsByState', 'slices', 'reconfigurations', 'passMs', 'queueWaitSeconds', 'timeline'],
  properties: {
    policy: { type: 'string' },
    startedAt: { type: 'number' },
    jobsByState: {
      type: 'array',
      items: {
        type: 'object',
        required: ['state', 'priority', 'count'],
        properties: { state: { type: 'string', enum: [...JOB_STATES] }, priority: priorityEnum, count: { type: 'integer' } },
      },
    },
    slices: {
      type: 'array',
      items: {
        type: 'object',
        required: ['profile', 'state', 'count'],
        properties: { profile: { type: 'string' }, state: { type: 'string', enum: ['busy', 'idle'] }, count: { type: 'integer' } },
      },
    },
    reconfigurations: { type: 'integer' },
    reconfigurationsFailed: { type: 'integer', description: 're-partitions that failed since the service started' },
    passMs: { type: 'array', items: { type: 'number' }, description: 'recent scheduling passes, ms each, newest last' },
    queueWaitSeconds: { type: 'array', items: { type: 'number' }, description: 'recent queue waits of started jobs, newest last' },
    multiplex: {
      type: 'object',
      description: 'CUDA MPS multiplexing',
      required: ['backoffs', 'daemons', 'slowdowns'],
      properties: {
        backoffs: { type: 'integer', description: 'background MPS clients backed off since the service started' },
        daemons: { type: 'integer', description: 'MPS control daemons running now' },
        slowdowns: {
          type: 'array',
          description: "foreground jobs' measured samples/s alone over beside background MPS clients",
          items: { type: 'object', required: ['job', 'gpu', 'slowdown'], properties: { job: { type: 'string' }, gpu: { type: 'integer' }, slowdown: { type: 'number' } } },
        },
      },
    },
    timeline: {
      type: 'array',
      items: {
        type: 'object',
        required: ['t', 'utilization', 'throughputJobsPerHour', 'queued', 'running'],
        properties: {
          t: { type: 'number' },
          utilization: { type: 'number' },
          throughputJobsPerHour: { type: 'number' },
          queued: { type: 'integer' },
          running: { type: 'integer' },
        },
      },
    },
  },
};

/** One event of the service, as /v1/events sends it in each `data:` line. */
export const eventRecordSchema: JsonSchema = {
  type: 'object',
  required: ['seq', 'time', 'type', 'jobId', 'data'],
  properties: {
    seq: { type: 'integer' },
    time: { type: 'number' },
    type: { type: 'string', enum: [...EVENT_TYPES] },
    jobId: { type: ['string', 'null'] },
    data: { type: 'object', additionalProperties: true },
  },
};

/** `:id` of the job routes. */
export const jobIdParamsSchema: JsonSchema = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string', minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_.-]+$' } },
};

/** Query of `GET /v1/jobs`. */
export const jobListQuerySchema: JsonSchema = {
  type: 'object',
  properties: {
    state: { type: 'array', items: { type: 'string' }, description: `one or more of ${JOB_STATES.join(', ')}, comma-separated or repeated` },
    priority: priorityEnum,
    user: { type: 'string', maxLength: 64, description: "admins: only this user's jobs (other users always get their own jobs only)" },
    after: { type: 'string', maxLength: 64, description: 'only ids after this one (in the order asked for): the `next` of the page before' },
    limit: { type: 'integer', minimum: 1, maximum: MAX_JOB_PAGE, default: DEFAULT_JOB_PAGE, description: `jobs in this page, 1 to ${MAX_JOB_PAGE} (${DEFAULT_JOB_PAGE} when absent); follow \`next\` for the rest` },
    order: { type: 'string', enum: ['asc', 'desc'], default: 'asc' },
  },
};

/** Query of `GET /v1/jobs/:id/logs`. */
export const logQuerySchema: JsonSchema = {
  type: 'object',
  properties: {
    stream: { type: 'string', enum: ['stdout', 'stderr'], default: 'stdout' },
    offset: { type: 'integer', minimum: 0, default: 0 },
    limit: { type: 'integer', minimum: 1, maximum: 4194304, description: 'bytes at most (the service defaults to 64 KiB)' },
  },
};

/** Query of `GET /v1/events`. */
export const eventQuerySchema: JsonSchema = {
  type: 'object',
  properties: {
    after: { type: 'integer', minimum: 0, description: 'replay events after this seq first (like the Last-Event-ID header)' },
    token: { type: 'string', description: 'the bearer token, for browsers (EventSource cannot send headers)' },
  },
};

/** Who the token belongs to (`GET /v1/whoami`). */
export const callerSchema: JsonSchema = {
  type: 'object',
  required: ['name', 'admin'],
  properties: {
    name: { type: 'string', description: 'the user the token belongs to' },
    admin: { type: 'boolean', description: 'admins see and cancel every job; other users their own only' },
  },
};
