/**
 * The Slurm executor: hands each attempt to Slurm with `sbatch` instead of running it here.
 *
 * An attempt's folder (`LaunchSpec.dir`, which must be on a file system the compute nodes share,
 * as Slurm writes the logs there) holds:
 * - `job.sh`: the batch script, `exec` of the command's argument list, each word single-quoted
 *   (nothing in it is expanded);
 * - `stdout.log`, `stderr.log`: the job's output (`--output`, `--error`);
 * - `slurm.json`: `{ slurmJobId }`, written as soon as sbatch answers.
 *
 * Submission: `sbatch --parsable --job-name migpool-<jobId> --chdir <workdir> --output ...
 * --error ... [--time <minutes>] --gres=gpu:<type>:<n> | --gres=gpu:<n> --export=ALL job.sh`,
 * with the job's environment added to sbatch's own (Slurm passes it on). The GRES type is the MIG
 * profile as the site names it in gres.conf (`gresType`, default the profile name itself:
 * `1g.5gb`); whole GPUs are asked for untyped. `CUDA_VISIBLE_DEVICES` is Slurm's to set from the
 * device it allocates: the service's own device choice is not passed on.
 *
 * State: every `pollMs` one `squeue --json --states=all --jobs <ids>` (or `squeue -o` where --json
 * is missing) for all attempts in flight; a job in a final state (or gone from squeue) is looked up
 * for its exit code in squeue's record, then `sacct`, then `scontrol show job`; with none of those
 * it is `lost`. Slurm keeps finished jobs for MinJobAge seconds (default 300) without accounting:
 * a service that is down longer than that finds ended jobs `lost` unless accounting (slurmdbd) is on.
 *
 * Deliberately left out: retries (the service's), job arrays, heterogeneous jobs, more than one node
 * per job.
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { badInput, MigpoolError } from '../errors.js';
import { SlurmClient, type CommandRunner } from '../slurm/client.js';
import { isFinalState, type SlurmJob } from '../slurm/parse.js';
import type { ProcessRef } from '../store/types.js';
import type { Executor, ExitReport, LaunchSpec } from './executor.js';

export interface SlurmExecutorOptions {
  /** Milliseconds between squeue polls. Default 2000. */
  pollMs?: number;
  /** How commands run (tests replace it). Default execFile. */
  run?: CommandRunner;
  /** The GRES type of a MIG profile in this site's gres.conf. Default: the profile name. */
  gresType?: (profile: string) => string;
  /** More sbatch arguments, e.g. `['--partition', 'gpu', '--account', 'ml']`. */
  sbatchArgs?: readonly string[];
  /** Clock for `endedAt`. Default `Date.now`. */
  now?: () => number;
}

/** What the Slurm executor keeps in a ProcessRef: `pid` 0, `startTicks` `slurm`, the job id. */
export const SLURM_START_TICKS = 'slurm';

/** The job name of an attempt's Slurm job. */
export function slurmJobName(jobId: string): string {
  return `migpool-${jobId}`;
}

/** A word for a POSIX shell script, quoted so that nothing in it is interpreted. */
export function shellQuote(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`;
}

/** The batch script of an attempt: exec of its argument list. */
export function batchScript(command: readonly string[]): string {
  return `#!/bin/sh\n# written by migpool: runs the job's argument list as is\nexec ${command.map(shellQuote).join(' ')}\n`;
}

/** `--time` of a max runtime: whole minutes, rounded up (Slurm's smallest unit). */
export function slurmTimeLimit(seconds: number): string {
  return String(Math.max(1, Math.ceil(seconds / 60)));
}

/** The `--gres` argument of a launch: typed MIG slices, or whole GPUs, or none. */
export function gresArgument(spec: LaunchSpec, gresType: (profile: string) => string): string | null {
  const g = spec.gres;
  if (g === undefined || g.count <= 0) return null;
  return g.type === null ? `--gres=gpu:${g.count}` : `--gres=gpu:${gresType(g.type)}:${g.count}`;
}

/** The sbatch arguments of a launch (without `--parsable`). */
export function sbatchArguments(spec: LaunchSpec, opts: { gresType?: (profile: string) => string; sbatchArgs?: readonly string[] } = {}): string[] {
  const args = [
    `--job-name=${slurmJobName(spec.jobId)}`,
    `--chdir=${spec.workdir}`,
    `--output=${join(spec.dir, 'stdout.log')}`,
    `--error=${join(spec.dir, 'stderr.log')}`,
    '--export=ALL',
    '--open-mode=append',
  ];
  if (spec.maxRuntimeSeconds !== null) args.push(`--time=${slurmTimeLimit(spec.maxRuntimeSeconds)}`);
  const gres = gresArgument(spec, opts.gresType ?? ((p) => p));
  if (gres !== null) args.push(gres);
  args.push(...(opts.sbatchArgs ?? []), join(spec.dir, 'job.sh'));
  return args;
}

function validate(spec: LaunchSpec): void {
  const where = `launch of job ${JSON.stringify(spec.jobId)}`;
  if (typeof spec.jobId !== 'string' || !/^[\w.-]+$/.test(spec.jobId)) throw badInput(`${where}: the job id must be letters, digits, '.', '_' or '-' to name a Slurm job`);
  if (spec.command.length === 0 || spec.command[0] === '') throw badInput(`${where}: command must be a non-empty list of strings, the program first`);
  if (spec.workdir === '' || spec.dir === '') throw badInput(`${where}: workdir and dir must be folders`);
  if (spec.command.some((w) => w.includes('\0'))) throw badInput(`${where}: a command word holds a NUL byte`);
  const max = spec.maxRuntimeSeconds;
  if (max !== null && !(Number.isFinite(max) && max > 0)) throw badInput(`${where}: maxRuntimeSeconds ${String(max)} must be a positive number of seconds or null`);
  const g = spec.gres;
  if (g !== undefined && (!Number.isInteger(g.count) || g.count < 0 || (g.type !== null && !/^[\w.+-]+$/.test(g.type)))) {
    throw badInput(`${where}: gres ${JSON.stringify(g)} needs a whole count and a type without ':' or ','`);
  }
}

interface Tracked {
  readonly jobId: string;
  readonly attempt: number;
  readonly ref: ProcessRef & { readonly slurmJobId: string };
  cancelRequested: boolean;
}

/** The Slurm job id an attempt folder recorded (`slurm.json`), or null. */
export function readSlurmJobId(dir: string): string | null {
  try {
    const v = JSON.parse(readFileSync(join(dir, 'slurm.json'), 'utf8')) as { slurmJobId?: unknown };
    return typeof v.slurmJobId === 'string' ? v.slurmJobId : null;
  } catch {
    return null;
  }
}

/**
 * Creates the Slurm executor (see the module comment).
 *
 * - `launch` refuses a job it still tracks. When the attempt folder already names a Slurm job that
 *   Slurm still knows under this job's name (the service stopped between sbatch and recording it),
 *   that job is taken over instead of submitting again.
 * - `adopt`: `running` while Slurm says the job is pending or running, else its exit report.
 * - `cancel`: `scancel` (Slurm sends SIGTERM, then SIGKILL after KillWait); reported `cancelled`.
 * - A job that ends in TIMEOUT is reported `timeout`; CANCELLED not asked for here, NODE_FAIL,
 *   PREEMPTED and the like are failures with their state in the signal field.
 */
export function createSlurmExecutor(opts: SlurmExecutorOptions = {}): Executor {
  const pollMs = opts.pollMs ?? 2000;
  if (!(Number.isFinite(pollMs) && pollMs > 0)) throw badInput(`slurm executor: poll interval ${pollMs} must be a positive number of milliseconds`);
  const client = new SlurmClient(opts.run);
  const now = opts.now ?? Date.now;
  const tracked = new Map<string, Tracked>();
  const listeners: ((r: ExitReport) => void)[] = [];
  const reported = new Set<string>();
  let timer: NodeJS.Timeout | null = null;
  let polling: Promise<void> | null = null;
  let closed = false;

  function emit(report: ExitReport): void {
    const key = `${report.jobId}\u0000${report.attempt}`;
    if (reported.has(key)) return;
    reported.add(key);
    for (const l of listeners) {
      try {
        l(report);
      } catch (error) {
        process.emitWarning(`slurm executor: an onExit listener threw for job ${report.jobId}: ${String(error)}`);
      }
    }
  }

  /** How a job Slurm no longer runs ended. */
  async function endOf(jobId: string, attempt: number, slurmJobId: string, seen: SlurmJob | undefined, cancelRequested: boolean): Promise<ExitReport> {
    let state = seen?.state ?? null;
    let exitCode = seen?.exitCode ?? null;
    let signal = seen?.signal ?? null;
    if (seen === undefined || (exitCode === null && signal === null)) {
      const acct = (await client.accounting([slurmJobId])).find((a) => a.id === slurmJobId);
      const found = acct ?? (await client.scontrolExit(slurmJobId));
      if (found) ({ state, exitCode, signal } = found);
    }
    const base = { jobId, attempt, endedAt: now() };
    const sig = signal === null ? null : `SIG${signal}`;
    if (state === null) return { ...base, exitCode: null, signal: null, reason: cancelRequested ? 'cancelled' : 'lost' };
    const s = state.split(/[+ ]/)[0]!.toUpperCase();
    if (s === 'TIMEOUT' || s === 'DEADLINE') return { ...base, exitCode: null, signal: sig, reason: 'timeout' };
    if (s === 'CANCELLED' && cancelRequested) return { ...base, exitCode: null, signal: sig, reason: 'cancelled' };
    if (s === 'COMPLETED' || s === 'FAILED') return { ...base, exitCode, signal: exitCode === null ? sig : null, reason: 'exited' };
    // Cancelled by someone else, node failure, preemption, out of memory: a failed attempt, its state said.
    return { ...base, exitCode: exitCode !== null && exitCode !== 0 ? exitCode : null, signal: `slurm:${s}`, reason: 'exited' };
  }

  async function poll(): Promise<void> {
    const list = [...tracked.values()];
    if (list.length === 0) return;
    let jobs: SlurmJob[];
    try {
      jobs = await client.jobs(list.map((t) => t.ref.slurmJobId));
    } catch (error) {
      process.emitWarning(`slurm executor: ${(error as Error).message}; trying again in ${pollMs} ms`);
      return;
    }
    const byId = new Map(jobs.map((j) => [j.id, j]));
    for (const t of list) {
      const job = byId.get(t.ref.slurmJobId);
      if (job !== undefined && !isFinalState(job.state)) continue;
      const report = await endOf(t.jobId, t.attempt, t.ref.slurmJobId, job, t.cancelRequested);
      if (closed || tracked.get(t.jobId) !== t) continue;
      tracked.delete(t.jobId);
      emit(report);
    }
  }

  function watch(): void {
    if (timer !== null) return;
    timer = setInterval(() => {
      if (polling !== null) return;
      polling = poll().finally(() => {
        polling = null;
        if (tracked.size === 0 && timer !== null) {
          clearInterval(timer);
          timer = null;
        }
      });
    }, pollMs);
    timer.unref();
  }

  function track(jobId: string, attempt: number, ref: ProcessRef & { slurmJobId: string }): void {
    tracked.set(jobId, { jobId, attempt, ref, cancelRequested: false });
    watch();
  }

  async function launch(spec: LaunchSpec): Promise<ProcessRef> {
    if (closed) throw new MigpoolError('RUNTIME', 'slurm executor: launch after close(); create a new executor');
    validate(spec);
    const running = tracked.get(spec.jobId);
    if (running !== undefined) {
      throw new MigpoolError('RUNTIME', `job ${spec.jobId}: attempt ${running.attempt} is still in Slurm as job ${running.ref.slurmJobId}; cancel it or wait for its end before launching attempt ${spec.attempt}`);
    }
    try {
      mkdirSync(spec.dir, { recursive: true });
    } catch (error) {
      throw new MigpoolError('RUNTIME', `job ${spec.jobId}: cannot create attempt folder ${spec.dir}: ${(error as Error).message}`);
    }
    const earlier = readSlurmJobId(spec.dir);
    if (earlier !== null) {
      const [job] = (await client.jobs([earlier])).filter((j) => j.id === earlier && j.name === slurmJobName(spec.jobId));
      if (job !== undefined) {
        const ref = { pid: 0, startTicks: SLURM_START_TICKS, dir: spec.dir, slurmJobId: earlier };
        track(spec.jobId, spec.attempt, ref);
        return ref;
      }
    }
    const script = join(spec.dir, 'job.sh');
    writeFileSync(script, batchScript(spec.command), { mode: 0o700 });
    const env: NodeJS.ProcessEnv = { ...process.env, ...spec.env, MIGPOOL_JOB_ID: spec.jobId, MIGPOOL_ATTEMPT: String(spec.attempt) };
    const slurmJobId = await client.sbatch(sbatchArguments(spec, opts), env);
    const temp = join(spec.dir, `slurm.json.tmp-${process.pid}`);
    writeFileSync(temp, `${JSON.stringify({ slurmJobId })}\n`);
    renameSync(temp, join(spec.dir, 'slurm.json'));
    const ref = { pid: 0, startTicks: SLURM_START_TICKS, dir: spec.dir, slurmJobId };
    track(spec.jobId, spec.attempt, ref);
    return ref;
  }

  async function adopt(jobId: string, attempt: number, ref: ProcessRef): Promise<'running' | ExitReport> {
    if (closed) throw new MigpoolError('RUNTIME', 'slurm executor: adopt after close(); create a new executor');
    const slurmJobId = ref.slurmJobId ?? readSlurmJobId(ref.dir);
    if (slurmJobId === undefined || slurmJobId === null) {
      throw badInput(`adopt of job ${JSON.stringify(jobId)} attempt ${attempt}: its process ${JSON.stringify(ref)} names no Slurm job; it was started by another executor: serve with --executor local to settle it`);
    }
    const current = tracked.get(jobId);
    if (current !== undefined && current.attempt === attempt && current.ref.slurmJobId === slurmJobId) return 'running';
    const job = (await client.jobs([slurmJobId])).find((j) => j.id === slurmJobId);
    if (job !== undefined && !isFinalState(job.state)) {
      track(jobId, attempt, { ...ref, slurmJobId });
      return 'running';
    }
    reported.add(`${jobId}\u0000${attempt}`);
    return endOf(jobId, attempt, slurmJobId, job, false);
  }

  async function cancel(jobId: string): Promise<void> {
    const t = tracked.get(jobId);
    if (closed || t === undefined || t.cancelRequested) return;
    t.cancelRequested = true;
    await client.scancel(t.ref.slurmJobId);
  }

  return {
    launch,
    adopt,
    cancel,
    onExit(listener) {
      listeners.push(listener);
    },
    logPaths(ref) {
      return { stdout: join(ref.dir, 'stdout.log'), stderr: join(ref.dir, 'stderr.log') };
    },
    async close() {
      if (closed) return;
      closed = true;
      if (timer !== null) clearInterval(timer);
      timer = null;
      await polling?.catch(() => undefined);
      tracked.clear();
    },
  };
}
