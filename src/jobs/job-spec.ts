import { z } from 'zod';
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
});

/** Seconds, or `90s`, `30m`, `2h`, `1d`. */
const durationSchema = z.union([z.number().positive(), z.string().regex(DURATION, 'expected seconds or a duration such as 30m or 2h')]).transform((v) => {
  if (typeof v === 'number') return v;
  const m = DURATION.exec(v)!;
  return Number(m[1]) * { s: 1, m: 60, h: 3600, d: 86400 }[m[2] as 's' | 'm' | 'h' | 'd'];
});

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

const resourcesSchema = z
  .strictObject({
    /**
     * `1g.5gb`: exactly that slice (as `nvidia.com/mig-1g.5gb` in Kubernetes or `--gres=gpu:1g.5gb`
     * in Slurm); `{atLeast: 1g.5gb}`: that slice or a bigger one, or a whole GPU.
     */
    profile: z.union([profileName, z.strictObject({ atLeast: profileName })]).optional(),
    memory: memorySchema.optional(),
    gpus: z.number().int().min(1).max(64).optional(),
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
  maxRuntime: durationSchema
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
  estimatedSeconds: durationSchema.refine((v) => v <= MAX_RUNTIME_SECONDS, 'at most 366 days (366d)').optional(),
});

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
  const r = jobSpecSchema.safeParse(value);
  if (r.success) return r.data;
  const issue = r.error.issues[0]!;
  const path = issue.path.length > 0 ? issue.path.join('.') : '(top level)';
  throw badInput(`${where}: ${path}: ${issue.message}`, { path, issues: r.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message })) });
}
