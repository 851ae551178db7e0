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
 * --error ... --export=<names> --cpus-per-task <n> [--mem <MiB>M] [--time <minutes>]
 * --gres=gpu:<type>:<n> | --gres=gpu:<n> job.sh`.
 * - GRES type: the MIG profile as Slurm's `AutoDetect=nvml` names it on the pool's GPUs (for the
 *   Slurm version `sbatch --version` reports; see partition/slurm-gres-type.ts): `3g.40gb` on an
 *   A100-SXM4-80GB is `nvidia_a100_3g.39gb` under Slurm 22.05, `nvidia_a100_3g.40gb` from 23.02.6.
 *   A site with its own gres.conf names gives `gresType` instead. Whole GPUs are asked for untyped.
 *   A `+me` profile (or a partial compute instance) is refused where the Slurm type cannot tell it
 *   from its plain profile (before 23.02.6, or under a `gresType` template): Slurm could hand the
 *   job a slice without the media engines it asked for.
 * - CPUs and memory: `cpusPerSlice` (default 2) and `memPerSliceMiB` (default 8192) per compute
 *   slice of the profile (a whole GPU counts 7, the compute slices of an A100/H100/H200/B200), so
 *   a 3g job gets 6 CPUs and 24 GiB; the job's env may set `MIGPOOL_SLURM_CPUS` (a count) and
 *   `MIGPOOL_SLURM_MEM` (`32G`, `4000M`; `0`: no --mem) for itself.
 * - Environment: only what the job needs reaches it: `--export` names the job's own env, its
 *   `MIGPOOL_JOB_ID` / `MIGPOOL_ATTEMPT`, and the service's `CUDA_*` variables (not
 *   `CUDA_VISIBLE_DEVICES`: Slurm sets it from the device it allocates); their values travel in
 *   sbatch's environment, never on its command line. Slurm adds its `SLURM_*` variables and, as
 *   with any explicit list, the user's login environment on the node (PATH, HOME).
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
import { resolveGpuModel } from '../mig/catalog/index.js';
import type { GpuModel } from '../mig/types.js';
import { formatSlurmVersion, migNamingOf, slurmMigGresType, type SlurmMigNaming, type SlurmVersion } from '../partition/slurm-gres-type.js';
import { localSlurmVersion } from '../slurm/version.js';
import { SlurmClient, type CommandRunner } from '../slurm/client.js';
import { isFinalState, type SlurmJob } from '../slurm/parse.js';
import type { ProcessRef } from '../store/types.js';
import type { Executor, ExitReport, LaunchSpec } from './executor.js';

export interface SlurmExecutorOptions {
  /** Milliseconds between squeue polls. Default 2000. */
  pollMs?: number;
  /** How commands run (tests replace it). Default execFile. */
  run?: CommandRunner;
  /**
   * The GRES type of a MIG profile where the site names types its own way (a `--slurm-gres-type`
   * template). Default: as AutoDetect=nvml names it on `gpuProducts`.
   */
  gresType?: (profile: string) => string;
  /** Product names of the pool's GPUs (`NVIDIA A100-SXM4-80GB`), for the default GRES types. */
  gpuProducts?: () => Promise<readonly string[]>;
  /** The Slurm version whose naming to use. Default: what `sbatch --version` says. */
  slurmVersion?: SlurmVersion | null;
  /** CPUs per compute slice (`--cpus-per-task`). Default 2. */
  cpusPerSlice?: number;
  /** MiB of host memory per compute slice (`--mem`); 0: no --mem. Default 8192. */
  memPerSliceMiB?: number;
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

/** The `--gres` argument of a launch, its MIG type already named: typed slices, or whole GPUs, or none. */
export function gresArgument(spec: LaunchSpec, type: string | null): string | null {
  const g = spec.gres;
  if (g === undefined || g.count <= 0) return null;
  return g.type === null ? `--gres=gpu:${g.count}` : `--gres=gpu:${type ?? g.type}:${g.count}`;
}

/** Compute slices a launch holds: the profile's `Ng`, or 7 per whole GPU (A100, H100, H200, B200). */
export function computeSlices(spec: LaunchSpec): number {
  const g = spec.gres;
  if (g === undefined || g.count <= 0) return 1;
  if (g.type === null) return 7 * g.count;
  const m = /(?:^|\.)(\d+)g\./.exec(g.type);
  return (m ? Number(m[1]) : 1) * g.count;
}

/** CPUs and memory of a launch: the job's MIGPOOL_SLURM_CPUS / MIGPOOL_SLURM_MEM, else per slice. */
export function cpuAndMemory(spec: LaunchSpec, cpusPerSlice = 2, memPerSliceMiB = 8192): { cpus: number; mem: string | null } {
  const where = `job ${spec.jobId}`;
  const slices = computeSlices(spec);
  const cpusText = spec.env['MIGPOOL_SLURM_CPUS'];
  const memText = spec.env['MIGPOOL_SLURM_MEM'];
  if (cpusText !== undefined && !/^[1-9]\d{0,4}$/.test(cpusText)) throw badInput(`${where}: env MIGPOOL_SLURM_CPUS '${cpusText}' must be a whole number of CPUs from 1`);
  if (memText !== undefined && !/^\d{1,9}[KMGT]?$/i.test(memText)) throw badInput(`${where}: env MIGPOOL_SLURM_MEM '${memText}' must be a Slurm size such as 32G or 4000M (0: no --mem)`);
  const cpus = cpusText !== undefined ? Number(cpusText) : Math.max(1, cpusPerSlice * slices);
  const mem = memText !== undefined ? (/^0+[KMGT]?$/i.test(memText) ? null : memText.toUpperCase()) : memPerSliceMiB > 0 ? `${memPerSliceMiB * slices}M` : null;
  return { cpus, mem };
}

/** The environment names a job gets through `--export`: its own, its ids, the service's CUDA_* but CUDA_VISIBLE_DEVICES. */
export function exportedNames(spec: LaunchSpec, serviceEnv: NodeJS.ProcessEnv = process.env): string[] {
  const names = new Set<string>(['MIGPOOL_JOB_ID', 'MIGPOOL_ATTEMPT']);
  for (const k of Object.keys(serviceEnv)) if (k.startsWith('CUDA_') && k !== 'CUDA_VISIBLE_DEVICES') names.add(k);
  for (const k of Object.keys(spec.env)) names.add(k);
  return [...names].sort();
}

/** The sbatch arguments of a launch (without `--parsable`); `type` is the Slurm GRES type of its profile. */
export function sbatchArguments(spec: LaunchSpec, type: string | null, opts: { sbatchArgs?: readonly string[]; cpusPerSlice?: number; memPerSliceMiB?: number; serviceEnv?: NodeJS.ProcessEnv } = {}): string[] {
  const { cpus, mem } = cpuAndMemory(spec, opts.cpusPerSlice, opts.memPerSliceMiB);
  const args = [
    `--job-name=${slurmJobName(spec.jobId)}`,
    `--chdir=${spec.workdir}`,
    `--output=${join(spec.dir, 'stdout.log')}`,
    `--error=${join(spec.dir, 'stderr.log')}`,
    `--export=${exportedNames(spec, opts.serviceEnv).join(',')}`,
    '--open-mode=append',
    `--cpus-per-task=${cpus}`,
  ];
  if (mem !== null) args.push(`--mem=${mem}`);
  if (spec.maxRuntimeSeconds !== null) args.push(`--time=${slurmTimeLimit(spec.maxRuntimeSeconds)}`);
  const gres = gresArgument(spec, type);
  if (gres !== null) args.push(gres);
  args.push(...(opts.sbatchArgs ?? []), join(spec.dir, 'job.sh'));
  return args;
}

/**
 * Names a MIG profile's Slurm type on the pool's GPUs, as AutoDetect=nvml does under `naming`.
 * Refuses (bad input, one line) a profile no pool GPU has, one named differently on different GPUs
 * of the pool, and a `+me` / partial-CI profile the naming cannot tell from its plain profile.
 */
export function autodetectGresType(profile: string, products: readonly string[], naming: SlurmMigNaming, versionText: string): string {
  const types = new Set<string>();
  let plain: string | null = null;
  for (const product of new Set(products)) {
    let model: GpuModel;
    try {
      model = resolveGpuModel(product);
    } catch {
      continue;
    }
    const gi = profile.replace(/^\d+c\./, '');
    if (!model.giProfiles.some((p) => p.name === gi)) continue;
    types.add(slurmMigGresType(product, profile, naming, model).type);
    const base = gi.replace(/[+-].*$/, '');
    if (base !== profile) plain = slurmMigGresType(product, base, naming, model).type;
  }
  if (types.size === 0) throw badInput(`slurm executor: no GPU of the pool (${[...new Set(products)].join(', ') || 'none known'}) has MIG profile ${profile}; give --slurm-gres-type to name it`);
  if (types.size > 1) throw badInput(`slurm executor: ${profile} is ${[...types].join(' or ')} on this pool's GPUs, and a job can ask Slurm for one type only; give --slurm-gres-type`);
  const [type] = [...types] as [string];
  if (plain === type) {
    throw badInput(`slurm executor: ${versionText} names ${profile} and ${profile.replace(/^\d+c\./, '').replace(/[+-].*$/, '')} alike (${type}), so Slurm could give the job a slice without what ${profile} adds; ask for the plain profile, or run Slurm 23.02.6 or later`);
  }
  return type;
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
  const odd = Object.keys(spec.env).find((k) => !/^[A-Za-z_][A-Za-z0-9_]*$/.test(k));
  if (odd !== undefined) throw badInput(`${where}: env name ${JSON.stringify(odd)} cannot be passed through sbatch --export; use letters, digits and '_'`);
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
  let timer: NodeJS.Timeout | null = null;
  let polling: Promise<void> | null = null;
  let closed = false;

  // Each attempt is reported once: by poll, while it is the job's tracked one (and then untracked),
  // or by adopt's answer; nothing of it is kept afterwards (a set of reported attempts grew by one
  // per attempt, for the service's life).
  function emit(report: ExitReport): void {
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

  let version: Promise<SlurmVersion | null> | null = null;
  /** The Slurm type of the launch's MIG profile (null for whole GPUs). */
  async function gresTypeOf(spec: LaunchSpec): Promise<string | null> {
    const profile = spec.gres?.type ?? null;
    if (profile === null) return null;
    const plainProfile = profile.replace(/^\d+c\./, '').replace(/[+-].*$/, '');
    if (opts.gresType !== undefined) {
      if (plainProfile !== profile) throw badInput(`slurm executor: job ${spec.jobId} asks for ${profile}, which a --slurm-gres-type template cannot tell from ${plainProfile}; drop the template (types are then named as AutoDetect=nvml names them) or ask for ${plainProfile}`);
      return opts.gresType(profile);
    }
    if (opts.slurmVersion !== undefined) version ??= Promise.resolve(opts.slurmVersion);
    version ??= localSlurmVersion(opts.run, [['sbatch', '--version']]);
    const v = await version;
    const products = opts.gpuProducts ? await opts.gpuProducts() : [];
    return autodetectGresType(profile, products, migNamingOf(v), v === null ? 'Slurm (version unknown, taken as current)' : `Slurm ${formatSlurmVersion(v)}`);
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
    const type = await gresTypeOf(spec);
    const args = sbatchArguments(spec, type, opts);
    const env: NodeJS.ProcessEnv = { ...process.env, ...spec.env, MIGPOOL_JOB_ID: spec.jobId, MIGPOOL_ATTEMPT: String(spec.attempt) };
    const slurmJobId = await client.sbatch(args, env);
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
    // Ended: the report is this answer, never also emitted by a poll that still tracked the attempt.
    if (tracked.get(jobId)?.attempt === attempt) tracked.delete(jobId);
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
    retained: () => tracked.size,
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
