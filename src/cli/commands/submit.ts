import { randomUUID } from 'node:crypto';
import { basename, dirname, isAbsolute, resolve } from 'node:path';
import type { Command } from 'commander';
import { badInput, MigpoolError } from '../../errors.js';
import { decimalValue } from '../../decimal-number.js';
import { parseArrayRange } from '../../control/arrays.js';
import { parseJobSpec } from '../../jobs/job-spec.js';
import { FINAL_STATES, type JobRecord } from '../../store/types.js';
import { ServiceClient, type ConnectOptions } from '../client.js';
import { writeJson, type Io } from '../io.js';
import { throughRestarts, type Outage } from '../through-restarts.js';
import { readSpecFile, withServiceOptions } from './client.js';

/**
 * `migpool submit`: job specs from YAML/JSON files, or one job from the command line
 * (`migpool submit [flags] -- python train.py --lr 3e-4`), with `--wait` to follow it to its end.
 */

/** Flags of `migpool submit`. */
export interface SubmitOptions extends ConnectOptions {
  json?: boolean;
  name?: string;
  profile?: string;
  atLeast?: string;
  memory?: string;
  gpus?: string;
  priority?: string;
  preemptible?: boolean;
  env: string[];
  workdir?: string;
  estimate?: string;
  maxRuntime?: string;
  retries?: string;
  workload?: string;
  label: string[];
  array?: string;
  after: string[];
  wait?: boolean;
  idempotencyKey?: string;
  interval: string;
}

/** Flags that describe the job itself: only for `submit -- COMMAND` (a spec file says them itself). */
const SPEC_FLAGS: readonly [keyof SubmitOptions, string][] = [
  ['name', '--name'],
  ['profile', '--profile'],
  ['atLeast', '--at-least'],
  ['memory', '--memory'],
  ['gpus', '--gpus'],
  ['priority', '--priority'],
  ['preemptible', '--preemptible'],
  ['workdir', '--workdir'],
  ['estimate', '--estimate'],
  ['maxRuntime', '--max-runtime'],
  ['retries', '--retries'],
  ['workload', '--workload'],
  ['array', '--array'],
];

const collect = (value: string, previous: string[]): string[] => [...previous, value];

/** `KEY=VALUE` pairs of a repeated flag, as a record; `flag` names it in errors. */
export function pairs(values: readonly string[], flag: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const v of values) {
    const at = v.indexOf('=');
    if (at <= 0) throw badInput(`${flag} '${v}' is not KEY=VALUE: write it as ${flag} ${flag === '--label' ? 'team=vision' : 'SEED=1'}`);
    if (flag === '--env' && !/^[A-Za-z_][A-Za-z0-9_]*$/.test(v.slice(0, at))) throw badInput(`${flag} '${v}': '${v.slice(0, at)}' is not an environment variable name (letters, digits and _, not starting with a digit)`);
    out[v.slice(0, at)] = v.slice(at + 1);
  }
  return out;
}

/** A job name from the command: the script's file name (`train.py` of `python train.py`), else the program's. */
export function nameOf(command: readonly string[]): string {
  const script = command.slice(1).find((a) => !a.startsWith('-') && /[./]/.test(a));
  const base = basename(script ?? command[0] ?? 'job').replace(/[^\w.-]+/g, '-').replace(/^[-.]+/, '');
  return (base === '' ? 'job' : base).slice(0, 128);
}

/**
 * The job spec `submit -- COMMAND` flags describe (checked with the job spec schema, errors naming
 * the flag's field). `cwd` is the default working directory: where the user ran the command.
 */
export function specFromFlags(command: readonly string[], opts: SubmitOptions, cwd: string): Record<string, unknown> {
  const chosen = [opts.profile, opts.atLeast, opts.memory, opts.gpus].filter((v) => v !== undefined).length;
  if (chosen > 1) throw badInput('give at most one of --profile, --at-least, --memory and --gpus (the job runs on one MIG slice or on whole GPUs)');
  let resources: Record<string, unknown> = { gpus: 1 };
  if (opts.profile !== undefined) resources = { profile: opts.profile };
  if (opts.atLeast !== undefined) resources = { profile: { atLeast: opts.atLeast } };
  if (opts.memory !== undefined) resources = { memory: /^\d+(\.\d+)?$/.test(opts.memory) ? Number(opts.memory) : opts.memory };
  if (opts.gpus !== undefined) resources = { gpus: wholeNumber(opts.gpus, '--gpus') };
  const after = opts.after.flatMap((a) => a.split(',')).map((a) => a.trim()).filter((a) => a !== '');
  const spec: Record<string, unknown> = {
    name: opts.name ?? nameOf(command),
    command: [...command],
    // A relative --workdir is where the user is, as for any path they type.
    workdir: opts.workdir === undefined ? cwd : resolve(cwd, opts.workdir),
    env: pairs(opts.env, '--env'),
    resources,
    ...(opts.priority !== undefined ? { priority: opts.priority } : {}),
    ...(opts.preemptible ? { preemptible: true } : {}),
    ...(opts.estimate !== undefined ? { estimatedSeconds: /^\d+(\.\d+)?$/.test(opts.estimate) ? Number(opts.estimate) : opts.estimate } : {}),
    ...(opts.maxRuntime !== undefined ? { maxRuntime: /^\d+(\.\d+)?$/.test(opts.maxRuntime) ? Number(opts.maxRuntime) : opts.maxRuntime } : {}),
    ...(opts.retries !== undefined ? { retries: wholeNumber(opts.retries, '--retries', 0) } : {}),
    ...(opts.workload !== undefined ? { workload: opts.workload } : {}),
    ...(opts.label.length > 0 ? { labels: pairs(opts.label, '--label') } : {}),
    ...(after.length > 0 ? { after } : {}),
    ...(opts.array !== undefined ? { array: opts.array } : {}),
  };
  if (opts.array !== undefined) parseArrayRange(opts.array, '--array');
  try {
    parseJobSpec(spec, 'the job (flags)');
  } catch (e) {
    // The schema names the spec's field: say which flag set it, and what was given.
    const path = e instanceof MigpoolError ? e.details['path'] : undefined;
    const flag = typeof path !== 'string' ? undefined : path.startsWith('resources.profile') && opts.atLeast !== undefined ? { flag: '--at-least', option: 'atLeast' } : flagOf(path);
    if (!flag || !(e instanceof MigpoolError)) throw e;
    const given = (opts as unknown as Record<string, unknown>)[flag.option];
    const field = path as string;
    const problem = e.message.slice(e.message.indexOf(`${field}: `) + field.length + 2);
    throw badInput(`${flag.flag}${given === undefined || Array.isArray(given) ? '' : ` '${String(given)}'`}: ${problem}`, { path: field });
  }
  return spec;
}

/** The flag (and its option's key) that sets a field of the job spec, by the field's path. */
function flagOf(path: string): { flag: string; option: string } | undefined {
  const field = path.split('.');
  const table: Record<string, [string, string]> = {
    name: ['--name', 'name'],
    priority: ['--priority', 'priority'],
    estimatedSeconds: ['--estimate', 'estimate'],
    maxRuntime: ['--max-runtime', 'maxRuntime'],
    retries: ['--retries', 'retries'],
    workload: ['--workload', 'workload'],
    after: ['--after', 'after'],
    env: ['--env', 'env'],
    labels: ['--label', 'label'],
    workdir: ['--workdir', 'workdir'],
    'resources.gpus': ['--gpus', 'gpus'],
    'resources.memory': ['--memory', 'memory'],
    'resources.profile': ['--profile', 'profile'],
  };
  const hit = table[field.slice(0, 2).join('.')] ?? table[field[0] as string];
  return hit ? { flag: hit[0], option: hit[1] } : undefined;
}

function wholeNumber(value: string, flag: string, min = 1): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || n < min) throw badInput(`${flag} '${value}' is not a whole number ${min} or more`);
  return n;
}

/**
 * The command after `--` on the command line, or null when there is none. Commander passes the
 * words after `--` as operands, mixed with the files before it: the raw arguments tell them apart.
 */
function commandAfterDashes(operands: readonly string[], cmd: Command): string[] | null {
  let top: Command = cmd;
  while (top.parent) top = top.parent;
  const raw = (top as Command & { rawArgs?: string[] }).rawArgs ?? [];
  const at = raw.indexOf('--');
  if (at < 0) return null;
  const after = raw.length - at - 1;
  if (after === 0) throw badInput('nothing after --: give the command to run, e.g. migpool submit -- python train.py');
  return operands.slice(operands.length - after);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Prints one stream of a job's log as it grows (whole lines), until the job has ended and the log is read. */
async function follow(client: ServiceClient, id: string, stream: 'stdout' | 'stderr', write: (text: string) => void, intervalMs: number, asked: Asker): Promise<void> {
  let offset = 0;
  let pending = '';
  for (;;) {
    const chunk = await asked(() => client.readLog(id, stream, offset));
    offset = chunk.nextOffset;
    pending += chunk.text;
    const end = pending.lastIndexOf('\n');
    if (end >= 0) {
      write(pending.slice(0, end + 1));
      pending = pending.slice(end + 1);
    }
    if (chunk.done) break;
    if (chunk.text === '') await sleep(intervalMs);
  }
  if (pending !== '') write(pending);
}

/** Runs one call to the service, asking again through a restart of it (through-restarts.ts). */
type Asker = <T>(call: () => Promise<T>) => Promise<T>;

/** An asker for one follower: its outages are said on stderr, once each way. */
function askerFor(io: Io): Asker {
  const outage: Outage = { since: null };
  return (call) => throughRestarts(call, outage, (line) => io.err(line));
}

async function untilFinal(client: ServiceClient, id: string, intervalMs: number, asked: Asker): Promise<JobRecord> {
  for (;;) {
    const job = await asked(() => client.getJob(id));
    if (FINAL_STATES.includes(job.state)) return job;
    await sleep(intervalMs);
  }
}

/**
 * Streams a job's stdout and stderr until it ends and throws, when it did not succeed, an error
 * whose `exitCode` detail is the job's exit status (1 when it has none: cancelled, never started).
 */
export async function waitForJob(client: ServiceClient, job: JobRecord, io: Io, intervalMs: number): Promise<void> {
  const asked = askerFor(io);
  await Promise.all([follow(client, job.id, 'stdout', (t) => io.out(t), intervalMs, asked), follow(client, job.id, 'stderr', (t) => io.err(t), intervalMs, asked)]);
  const done = await untilFinal(client, job.id, intervalMs, asked);
  if (done.state === 'succeeded') return;
  const code = done.exitCode !== null && done.exitCode > 0 && done.exitCode < 256 ? done.exitCode : 1;
  throw new MigpoolError('CHECK_FAILED', `job ${done.id} (${done.spec.name}) ${done.state}${done.reason ? `: ${done.reason}` : ''}`, { exitCode: code });
}

/** Waits for every job of an array (or batch); throws when any did not succeed (exit status 1). */
async function waitForAll(client: ServiceClient, jobs: readonly JobRecord[], io: Io, intervalMs: number): Promise<void> {
  const ended: JobRecord[] = [];
  const asked = askerFor(io);
  for (const j of jobs) ended.push(await untilFinal(client, j.id, intervalMs, asked));
  const bad = ended.filter((j) => j.state !== 'succeeded');
  io.err(`${ended.length - bad.length} of ${ended.length} jobs succeeded`);
  if (bad.length > 0) throw new MigpoolError('CHECK_FAILED', `${bad.length} of ${ended.length} jobs did not succeed: ${bad.slice(0, 10).map((j) => `${j.id} ${j.state}`).join(', ')}${bad.length > 10 ? ', ...' : ''}`, { exitCode: 1 });
}

/** Registers `migpool submit`. */
export function registerSubmit(program: Command, io: Io): void {
  withServiceOptions(
    program
      .command('submit')
      .description('queue training jobs on `migpool serve`: from YAML or JSON files, or one command given after -- (migpool submit --profile 1g.5gb -- python train.py)')
      .argument('[file...]', 'job spec files (each holds one spec or a list); or, after --, the command to run'),
  )
    .option('--json', 'print the queued jobs as JSON')
    .option('--name <name>', 'the job name (default: the script or program name)')
    .option('--profile <profile>', 'run on exactly this MIG slice, e.g. 1g.5gb')
    .option('--at-least <profile>', 'run on this MIG slice or a bigger one, or a whole GPU')
    .option('--memory <amount>', 'GPU memory the job needs, e.g. 8GiB (the policy picks the slice)')
    .option('--gpus <n>', 'whole GPUs (default 1 when no --profile, --at-least or --memory)')
    .option('--priority <priority>', 'foreground (default) or background')
    .option('--preemptible', 'the job checkpoints to $MIGPOOL_CHECKPOINT_DIR and may be stopped and resumed')
    .option('--env <KEY=VALUE>', 'an environment variable for the job (repeat for more)', collect, [])
    .option('--workdir <dir>', 'the directory the job runs in (default: the current directory)')
    .option('--estimate <duration>', 'how long the job takes alone on a whole GPU, e.g. 2h (helps the policy)')
    .option('--max-runtime <duration>', 'stop the job after this long, e.g. 12h')
    .option('--retries <n>', 'start a failed job again, up to N times')
    .option('--workload <name>', 'a workload the performance model knows, for placement')
    .option('--label <key=value>', 'a label stored and shown with the job (repeat for more)', collect, [])
    .option('--array <range>', 'an array of jobs: 0-99 (100 jobs), 0-99%8 (at most 8 running at once); each gets $MIGPOOL_ARRAY_INDEX')
    .option('--after <id>', 'start only once job ID has succeeded (repeat, or separate ids by commas)', collect, [])
    .option('--wait', "stream the job's output until it ends, and exit with its exit status")
    .option('--interval <seconds>', 'seconds between polls with --wait', '0.5')
    .option('--idempotency-key <key>', 'the key that makes a resent submission queue nothing twice (default: a new one per invocation)')
    .action(async (operands: string[], opts: SubmitOptions, cmd: Command) => {
      const intervalMs = decimalValue(opts.interval) * 1000;
      if (!Number.isFinite(intervalMs) || intervalMs <= 0) throw badInput(`--interval '${opts.interval}' is not a positive number of seconds`);
      const key = opts.idempotencyKey ?? randomUUID();
      const command = commandAfterDashes(operands, cmd);
      let queued: JobRecord[];
      if (command !== null) {
        const files = operands.slice(0, operands.length - command.length);
        if (files.length > 0) throw badInput(`give spec files or a command after --, not both (files: ${files.join(' ')})`);
        const spec = specFromFlags(command, opts, process.cwd());
        const client = await ServiceClient.connect(opts);
        queued = opts.array !== undefined ? await client.submitMany([spec], { idempotencyKey: key }) : [await client.submit(spec, { idempotencyKey: key })];
        if (opts.wait) io.err(`queued job ${queued.length === 1 ? queued[0]!.id : `${queued[0]!.id}-${queued[queued.length - 1]!.id}`}`);
        if (opts.wait) await (queued.length === 1 ? waitForJob(client, queued[0]!, io, intervalMs) : waitForAll(client, queued, io, intervalMs));
      } else {
        if (operands.length === 0) throw badInput('give job spec files, or the command to run after --: migpool submit -- python train.py');
        const flag = SPEC_FLAGS.find(([k]) => opts[k] !== undefined) ?? (opts.env.length > 0 ? ['env', '--env'] : opts.label.length > 0 ? ['label', '--label'] : opts.after.length > 0 ? ['after', '--after'] : undefined);
        if (flag) throw badInput(`${flag[1]} describes a job given after --; in a spec file, write it in the spec instead`);
        queued = await submitFiles(operands, opts, key);
        if (opts.wait) {
          const client = await ServiceClient.connect(opts);
          await (queued.length === 1 ? waitForJob(client, queued[0]!, io, intervalMs) : waitForAll(client, queued, io, intervalMs));
        }
      }
      if (opts.wait) return;
      if (opts.json) return writeJson(io, { jobs: queued });
      io.out(queued.map((j) => j.id).join('\n'));
    });
}

/**
 * A spec read from `file` with its relative `workdir` taken from the file's folder (the service
 * refuses relative ones: it would read them from its own directory). Absolute or absent: as is.
 */
export function withWorkdirFrom(spec: Record<string, unknown>, file: string): Record<string, unknown> {
  const workdir = spec['workdir'];
  if (typeof workdir !== 'string' || workdir === '' || isAbsolute(workdir)) return spec;
  return { ...spec, workdir: resolve(dirname(resolve(file)), workdir) };
}

/** The spec files' jobs, all or none, errors naming the file and job they came from. */
async function submitFiles(files: readonly string[], opts: SubmitOptions, key: string): Promise<JobRecord[]> {
  const specs = (await Promise.all(files.map(async (file) => (await readSpecFile(file)).map((s) => ({ ...s, spec: withWorkdirFrom(s.spec as Record<string, unknown>, file) }))))).flat();
  const client = await ServiceClient.connect(opts);
  try {
    // A single spec that names an array is many jobs: the batch endpoint queues them.
    const single = specs.length === 1 && typeof (specs[0]!.spec as { array?: unknown }).array !== 'string';
    return single ? [await client.submit(specs[0]!.spec, { idempotencyKey: key })] : await client.submitMany(specs.map((s) => s.spec), { idempotencyKey: key });
  } catch (e) {
    if (!(e instanceof MigpoolError)) throw e;
    // `job spec N: ...` (or `job spec: ...`) becomes the file and job it came from.
    const m = /^job spec(?: (\d+))?: /.exec(e.message);
    const at = m ? specs[m[1] === undefined ? 0 : Number(m[1]) - 1] : undefined;
    const message = e.code === 'BAD_INPUT' && e.details['status'] === 400 && at && m ? `${at.where}: ${e.message.slice(m[0].length)}` : e.message;
    throw new MigpoolError(e.code, `${message}${specs.length > 1 ? ' (nothing was queued)' : ''}`, e.details);
  }
}
