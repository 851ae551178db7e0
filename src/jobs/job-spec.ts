import { z } from 'zod';
import { firstIssue, overLimit, plainWords } from '../schema-words.js';
import { badInput } from '../errors.js';

/**
 * A training job as a user submits it to `migpool serve` (YAML or JSON). Validated with zod;
 * errors name the field path (`resources.profile`) and say what is expected.
 */

const MEMORY = /^(\d+(?:\.\d+)?)\s*(GiB|GB|MiB|MB)$/i;
const DURATION = /^(\d+(?:\.\d+)?)\s*(s|m|h|d)$/;

/** `8GiB`, `8GB` (read as GiB), `512MiB`, or a number of GiB. */
const memorySchema = z.union([z.number().positive(), z.string().regex(MEMORY, 'expected an amount such as 8GiB or 512MiB')]).transform((v) => {
  if (typeof v === 'number') return v;
  const m = MEMORY.exec(v)!;
  const n = Number(m[1]);
  return /^m/i.test(m[2]!) ? n / 1024 : n;
}).refine((v) => v > 0, 'expected an amount greater than 0, such as 8GiB or 512MiB');

/** Seconds, or `90s`, `30m`, `2h`, `1d`. */
const durationSchema = z.union([z.number().positive(), z.string().regex(DURATION, 'expected seconds or a duration such as 30m or 2h')]).transform((v) => {
  if (typeof v === 'number') return v;
  const m = DURATION.exec(v)!;
  return Number(m[1]) * { s: 1, m: 60, h: 3600, d: 86400 }[m[2] as 's' | 'm' | 'h' | 'd'];
});

/** A duration that must be longer than 0 (`0s` is refused as the number 0 is). */
const positiveDurationSchema = durationSchema.refine((v) => v > 0, 'expected a duration greater than 0, such as 30m or 2h');

/** `0-99`, `0-99%8` (at most 8 running at once), `7`: Slurm's `--array` notation (sbatch(1)), one range. */
export const ARRAY_RANGE = /^(\d{1,5})(?:-(\d{1,5}))?(?:%(\d{1,5}))?$/;
/** Most jobs one array may hold: the batch endpoint's limit (10000 specs per request). */
export const MAX_ARRAY_JOBS = 10_000;

/** One job of an array, as the service records it when it expands `array: 0-99%8`. */
const arrayMemberSchema = z.strictObject({
  /** The array's id: the same for every job of one submission. */
  id: z.string().min(1).max(64),
  /** This job's index (its `MIGPOOL_ARRAY_INDEX`). */
  index: z.number().int().min(0),
  /** Jobs of the array that may run at once (the `%N` of the range); absent: no limit. */
  maxRunning: z.number().int().min(1).optional(),
  /** The range as submitted, e.g. `0-99%8`. */
  range: z.string(),
});

const JOB_ID = /^[1-9]\d{0,15}$/;
const LABEL_KEY = /^[A-Za-z0-9]([A-Za-z0-9_./-]{0,62}[A-Za-z0-9])?$/;

const PROFILE = /^\d+g\.\d+gb(\+me)?$/;
const profileName = z.string().regex(PROFILE, 'expected a MIG profile such as 1g.5gb');

/**
 * Longest `maxRuntime` accepted: one year (366 days). Longer is taken for a slip of the unit;
 * a job that should never be stopped names no max runtime.
 */
export const MAX_RUNTIME_SECONDS = 366 * 86_400;
/** Longest `killGracePeriod`: one hour, so that a stuck job cannot hold its slice for days after a cancel. */
export const MAX_KILL_GRACE_SECONDS = 3600;
/** Default `killGracePeriod`: 60 s from SIGTERM to SIGKILL, the issue's contract (time to write a checkpoint). */
export const DEFAULT_KILL_GRACE_SECONDS = 60;

/**
 * Most whole GPUs one job may ask for: migpool's own bound (a choice made with the schema, not a
 * hardware fact), as many as the largest machine one entry of a simulated spec holds
 * (gpu/simulated/spec.ts). It catches slips such as 1e308 before anything else; the service then
 * holds a job to the GPUs it has (control/service.ts checkSpec).
 */
export const MAX_JOB_GPUS = 64;

const resourcesSchema = z
  .strictObject({
    /**
     * `1g.5gb`: exactly that slice (as `nvidia.com/mig-1g.5gb` in Kubernetes or `--gres=gpu:1g.5gb`
     * in Slurm); `{atLeast: 1g.5gb}`: that slice or a bigger one, or a whole GPU.
     */
    profile: z.union([profileName, z.strictObject({ atLeast: profileName })]).optional(),
    memory: memorySchema.optional(),
    gpus: z
      .number()
      .int()
      .min(1)
      .max(MAX_JOB_GPUS, { error: overLimit('GPUs', `a job may ask for (at most ${MAX_JOB_GPUS} per job)`, `ask for ${MAX_JOB_GPUS} or fewer`) })
      .optional(),
  })
  .refine((r) => [r.profile, r.memory, r.gpus].filter((v) => v !== undefined).length === 1, 'give exactly one of profile, memory or gpus');

export const jobSpecSchema = z.strictObject({
  name: z.string().min(1).max(128).regex(/^[\w.-]+$/, 'letters, digits, _ . - only'),
  command: z.array(z.string()).min(1, 'give the command as a list of arguments, e.g. [python, train.py]'),
  workdir: z.string().min(1).optional(),
  env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'environment variable names are letters, digits and _'), z.string()).default({}),
  /** A workload the performance model knows (`small`, `resnet50-b64`, ...), for placement. */
  workload: z.string().min(1).optional(),
  resources: resourcesSchema.default({ gpus: 1 }),
  priority: z.enum(['foreground', 'background']).default('foreground'),
  maxRuntime: positiveDurationSchema
    .refine((v) => v <= MAX_RUNTIME_SECONDS, `at most ${MAX_RUNTIME_SECONDS / 86_400} days (366d); leave maxRuntime out for a job with no limit`)
    .optional(),
  /**
   * The job's contract: true when it may be stopped (SIGTERM, then SIGKILL after
   * `killGracePeriod`) and started again later, e.g. because it checkpoints to
   * `$MIGPOOL_CHECKPOINT_DIR` [false: once started, it runs to its end].
   */
  preemptible: z.boolean().default(false),
  /** Seconds from SIGTERM to SIGKILL when the job is stopped (cancel, preemption, max runtime) [60]. */
  killGracePeriod: z
    .union([z.literal(0), durationSchema])
    .refine((v) => v <= MAX_KILL_GRACE_SECONDS, `at most ${MAX_KILL_GRACE_SECONDS} s (1h)`)
    .optional(),
  retries: z.number().int().min(0).max(10).default(0),
  /** Seconds the job would take alone on one whole GPU, if known (helps the policy order jobs). */
  estimatedSeconds: positiveDurationSchema.refine((v) => v <= MAX_RUNTIME_SECONDS, 'at most 366 days (366d)').optional(),
  /** Free-form `key: value` tags (team, experiment, ...): stored with the job and shown by `migpool jobs`. */
  labels: z
    .record(z.string().regex(LABEL_KEY, 'label keys are letters, digits and _ . / - (at most 64), starting and ending with a letter or digit'), z.string().max(256, 'label values are at most 256 characters'))
    .refine((l) => Object.keys(l).length <= 32, 'at most 32 labels')
    .optional(),
  /**
   * Ids of jobs this one waits for: it starts only once each of them has succeeded, and fails
   * (without running) when one of them fails or is cancelled.
   */
  after: z.array(z.string().regex(JOB_ID, 'expected a job id such as 42')).min(1).max(64).optional(),
  /**
   * `0-99%8`: this spec stands for 100 jobs, indices 0 to 99 (each gets `MIGPOOL_ARRAY_INDEX`),
   * at most 8 running at once (POST /v1/jobs/batch). The service records each job's place in
   * the array as an object ({id, index, maxRunning, range}).
   */
  array: z.union([z.string().regex(ARRAY_RANGE, 'expected a range such as 0-99 or 0-99%8 (at most 8 running at once)'), arrayMemberSchema]).optional(),
});

/** One job of an array, as stored. */
export type ArrayMember = z.output<typeof arrayMemberSchema>;

/** The MIG profile a spec names (`profile` or `profile.atLeast`), or undefined. */
export function profileOf(spec: Pick<JobSpecInput, 'resources'>): string | undefined {
  const p = spec.resources.profile;
  return typeof p === 'object' ? p.atLeast : p;
}

/** True when the spec asks for exactly its profile's slice (`profile: 1g.5gb`, not `{atLeast: ...}`). */
export function isExactProfile(spec: Pick<JobSpecInput, 'resources'>): boolean {
  return typeof spec.resources.profile === 'string';
}

/** A validated job spec, with defaults filled in and units normalised (GiB, seconds). */
export type JobSpecInput = z.output<typeof jobSpecSchema>;

/**
 * Validates a parsed job spec. Throws BAD_INPUT with the first problem's field path, e.g.
 * `job spec: resources.profile: expected a MIG profile such as 1g.5gb`.
 */
export function parseJobSpec(value: unknown, where = 'job spec'): JobSpecInput {
  const r = jobSpecSchema.safeParse(value, { error: plainWords });
  if (r.success) return r.data;
  const issue = firstIssue(r.error.issues)!;
  const path = issue.path.length > 0 ? issue.path.join('.') : '(top level)';
  throw badInput(`${where}: ${path}: ${issue.message}`, { path, issues: r.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message })) });
}
