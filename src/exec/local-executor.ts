/**
 * The local executor: runs each attempt on this machine under `bin/migpool-job-runner.js`, a small
 * supervisor started detached from the service, so that an attempt survives the service being
 * killed, its max runtime is enforced while the service is down, and how it ended is written to
 * its folder for the next service process to read.
 *
 * An attempt's folder (`LaunchSpec.dir`) holds:
 * - `launch.json`: what to run (command, workdir, added environment, max runtime, grace), mode 0600;
 * - `runner.json`: `{ pid, startTicks, jobPid, jobStartTicks }`, written by the runner as it starts
 *   the command (see {@link readProcessRef});
 * - `stdout.log`, `stderr.log`: the job's output, appended (the runner's own notes go to stderr.log
 *   as lines starting with `[migpool]`);
 * - `exit.json`: `{ exitCode, signal, reason, endedAt }`, written atomically by the runner when the
 *   attempt has ended.
 *
 * Process layout: the runner leads its own session and process group (`ProcessRef.pid`); the
 * command leads a second one, to which everything it starts belongs. A cancel sends SIGTERM to
 * the runner's group; the runner passes it to the job's group and sends SIGKILL there after the
 * grace period. Leftovers of the job's group after its main process ended get the same treatment,
 * so nothing of an attempt outlives its exit report. A process that left the group with setsid()
 * (a daemonizing tool, `setsid cmd &`) is found by its environment, which marks every process of
 * an attempt ({@link attemptMarks}), and gets the same SIGTERM, then SIGKILL.
 *
 * Linux only (/proc).
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { closeSync, existsSync, fchmodSync, fchownSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MigpoolError, badInput } from '../errors.js';
import type { ProcessRef } from '../store/types.js';
import type { Executor, ExitReport, LaunchSpec } from './executor.js';
import { environHasAll, findProcessesByEnviron, isSameLiveProcess, listPids, readCmdline, readEnviron, readProcStat, signalGroup } from './proc.js';
import { withoutServiceSecrets } from './service-secrets.js';

export interface LocalExecutorOptions {
  /** Seconds from SIGTERM to SIGKILL when an attempt is cancelled or runs past its max runtime. Default 10. */
  graceSeconds?: number;
  /** Milliseconds between checks that adopted attempts are still alive. Default 1000. */
  pollMs?: number;
  /** Clock (ms since the epoch) for the `endedAt` of attempts whose end the runner did not record. Default `Date.now`. */
  now?: () => number;
}

/** How the runner recorded an attempt's end (`exit.json`). */
export interface ExitFile {
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly reason: 'exited' | 'timeout' | 'cancelled';
  readonly endedAt: number;
  /** Why the command could not be started (the runner's one line), when it could not. */
  readonly message?: string;
}

/** Gives an attempt's open log files to the account its job runs as, private to it (0600). */
function ownLogs(fds: readonly number[], runAs: { readonly uid: number; readonly gid: number }, jobId: string): void {
  try {
    for (const fd of fds) {
      fchownSync(fd, runAs.uid, runAs.gid);
      fchmodSync(fd, 0o600);
    }
  } catch (error) {
    throw new MigpoolError('RUNTIME', `job ${jobId}: cannot give its log files to uid ${runAs.uid} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}); running jobs as their users' accounts needs the service to run as root`, { jobId });
  }
}

/** Extra seconds the executor waits past the grace period before it kills a runner that did not finish a cancel itself. */
const RUNNER_BACKSTOP_SECONDS = 2;

const RUNNER_CANDIDATES = ['../../bin/migpool-job-runner.js', '../../../bin/migpool-job-runner.js'];

let runnerPath: string | null = null;

/**
 * Path of `bin/migpool-job-runner.js`, found relative to this module whether it runs from
 * `src/exec/` (tests) or `dist/src/exec/` (the built CLI).
 */
export function jobRunnerPath(): string {
  if (runnerPath !== null) return runnerPath;
  for (const candidate of RUNNER_CANDIDATES) {
    const path = fileURLToPath(new URL(candidate, import.meta.url));
    if (existsSync(path)) {
      runnerPath = path;
      return path;
    }
  }
  throw new MigpoolError('RUNTIME', `cannot find bin/migpool-job-runner.js above ${fileURLToPath(import.meta.url)}; reinstall migpool`);
}

/** Paths of the files in an attempt's folder. */
export function attemptFiles(dir: string): { launch: string; runner: string; exit: string; stdout: string; stderr: string } {
  return {
    launch: join(dir, 'launch.json'),
    runner: join(dir, 'runner.json'),
    exit: join(dir, 'exit.json'),
    stdout: join(dir, 'stdout.log'),
    stderr: join(dir, 'stderr.log'),
  };
}

function readJson(path: string): unknown {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as unknown;
  } catch {
    return null;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The attempt's `exit.json`, or null when it has none (still running, or lost) or it is unreadable. */
export function readExitFile(dir: string): ExitFile | null {
  const value = readJson(attemptFiles(dir).exit);
  if (!isRecord(value)) return null;
  const { exitCode, signal, reason, endedAt, message } = value;
  if (!(exitCode === null || Number.isInteger(exitCode))) return null;
  if (!(signal === null || typeof signal === 'string')) return null;
  if (reason !== 'exited' && reason !== 'timeout' && reason !== 'cancelled') return null;
  if (typeof endedAt !== 'number' || !Number.isFinite(endedAt)) return null;
  return { exitCode: exitCode as number | null, signal: signal as string | null, reason, endedAt, ...(typeof message === 'string' && message !== '' ? { message } : {}) };
}

interface RunnerFile {
  readonly pid: number;
  readonly startTicks: string | null;
  readonly jobPid: number | null;
  readonly jobStartTicks: string | null;
}

function readRunnerFile(dir: string): RunnerFile | null {
  const value = readJson(attemptFiles(dir).runner);
  if (!isRecord(value) || !Number.isInteger(value.pid)) return null;
  const text = (v: unknown): string | null => (typeof v === 'string' ? v : null);
  return {
    pid: value.pid as number,
    startTicks: text(value.startTicks),
    jobPid: Number.isInteger(value.jobPid) ? (value.jobPid as number) : null,
    jobStartTicks: text(value.jobStartTicks),
  };
}

/**
 * The runner's process as it recorded itself in `runner.json`, or null when it has not (yet).
 * For a job found `starting` after a restart (the service died between launching and recording
 * the ref): when this returns a ref, `adopt` it rather than launching again.
 */
export function readProcessRef(dir: string): ProcessRef | null {
  const runner = readRunnerFile(dir);
  if (runner === null || runner.startTicks === null) return null;
  return { pid: runner.pid, startTicks: runner.startTicks, dir };
}

/**
 * The session of an attempt's job, or null before the runner recorded it: the job's pid from
 * `runner.json`, as the runner starts the command detached, which makes it the leader of a new
 * session (https://nodejs.org/api/child_process.html#optionsdetached). Everything the job starts
 * stays in that session unless it calls setsid() itself, and no process of another session can
 * join it (setpgid(2) moves a process only between groups of its own session).
 */
export function readJobSession(dir: string): number | null {
  const runner = readRunnerFile(dir);
  return runner !== null && runner.jobPid !== null && runner.jobPid > 1 ? runner.jobPid : null;
}

/** The environment variables that mark every process of an attempt (set in `launch.json`'s env, inherited by all it starts). */
export const ATTEMPT_MARK_NAMES = ['MIGPOOL_JOB_ID', 'MIGPOOL_ATTEMPT', 'MIGPOOL_ATTEMPT_DIR'] as const;

/**
 * The `NAME=value` entries that every process of an attempt carries in its environment: the job's
 * id, the attempt's number, and its folder. The folder is there because job ids are only unique
 * within one store (SQLite numbers them 1, 2, ...): two services on one machine (or the test
 * suites of one) each have a job 1 attempt 1, and the end of one must not stop the other.
 * `bin/migpool-job-runner.js` builds the same list from `launch.json`.
 */
export function attemptMarks(jobId: string, attempt: number, dir: string): string[] {
  const values = [jobId, String(attempt), dir];
  return ATTEMPT_MARK_NAMES.map((name, i) => `${name}=${values[i]}`);
}

/** The marks of the attempt in `dir`, from its `launch.json`, or null when it has none (unreadable, or written before marks). */
function marksOfLaunch(dir: string): string[] | null {
  const launch = readJson(attemptFiles(dir).launch);
  if (!isRecord(launch) || !isRecord(launch.env)) return null;
  const env = launch.env;
  const entries = ATTEMPT_MARK_NAMES.map((name) => (typeof env[name] === 'string' ? `${name}=${env[name]}` : null));
  return entries.every((e) => e !== null) ? (entries as string[]) : null;
}

/**
 * Whether process `pid` belongs to the attempt in `dir` though it left the job's session (setsid):
 * it carries the attempt's marks (launch.json's MIGPOOL_JOB_ID, MIGPOOL_ATTEMPT and
 * MIGPOOL_ATTEMPT_DIR, as whole entries of its environ) and runs as the account the job runs as
 * (the owner of the attempt's stdout.log, which the executor gives to that account). An
 * environment can be written by anyone who starts a process, so the account is checked too: a
 * process of another user that copies the marks still counts as someone else's.
 */
export function isAttemptProcess(pid: number, dir: string): boolean {
  const marks = marksOfLaunch(dir);
  if (marks === null) return false;
  const environ = readEnviron(pid);
  if (environ === null || !environHasAll(environ, marks)) return false;
  try {
    return statSync(`/proc/${pid}`).uid === statSync(attemptFiles(dir).stdout).uid;
  } catch {
    return false;
  }
}

/**
 * The live runner of the attempt in `dir`, found by its command line
 * (`node .../migpool-job-runner.js DIR/launch.json`, which /proc/PID/cmdline shows to anyone),
 * whether or not it has written `runner.json` yet; null when there is none. For a service that
 * died between starting a runner and the runner recording itself: the attempt runs, and is to be
 * adopted, not started twice. Not seen: a runner between its fork and its exec (microseconds,
 * while its command line is still the service's).
 */
export function findRunnerProcess(dir: string): ProcessRef | null {
  const launchFile = resolve(attemptFiles(dir).launch);
  for (const pid of listPids()) {
    if (pid === process.pid) continue;
    const argv = readCmdline(pid);
    if (argv === null || argv.length !== 3 || basename(argv[1]!) !== 'migpool-job-runner.js') continue;
    const stat = readProcStat(pid);
    if (stat === null || stat.state === 'Z' || stat.state === 'X' || stat.state === 'x') continue;
    // The runner's cwd is the attempt's folder, against which a relative path would be read.
    if (resolve(dir, argv[2]!) === launchFile || resolve(argv[2]!) === launchFile) return { pid, startTicks: stat.startTicks, dir };
  }
  return null;
}

/** The grace period an attempt was launched with (its `launch.json`), or null when unreadable. */
function graceOfLaunch(dir: string): number | null {
  const launch = readJson(attemptFiles(dir).launch);
  return isRecord(launch) && typeof launch.graceSeconds === 'number' && Number.isFinite(launch.graceSeconds) ? launch.graceSeconds : null;
}

/**
 * SIGKILL to what is left of an attempt whose runner is gone: the job's group (unless its leader's
 * pid now names another process) and the processes that carry the attempt's marks (those that
 * left the group with setsid()).
 */
function killOrphanedJob(dir: string): void {
  const runner = readRunnerFile(dir);
  if (runner !== null && runner.jobPid !== null && runner.jobPid > 1) {
    const stat = readProcStat(runner.jobPid);
    if (stat === null || stat.startTicks === runner.jobStartTicks) signalGroup(runner.jobPid, 'SIGKILL');
  }
  const marks = marksOfLaunch(dir);
  if (marks === null) return;
  for (const pid of findProcessesByEnviron(marks, new Set([process.pid]))) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone meanwhile, or not ours to signal.
    }
  }
}

function writePrivateJsonAtomic(path: string, value: unknown): void {
  const temp = `${path}.tmp-${process.pid}`;
  writeFileSync(temp, `${JSON.stringify(value)}\n`, { mode: 0o600 });
  renameSync(temp, path);
}

function validateSpec(spec: LaunchSpec): void {
  const where = `launch of job ${JSON.stringify(spec.jobId)}`;
  if (typeof spec.jobId !== 'string' || spec.jobId === '') throw badInput(`launch: jobId is empty; give the job's id`);
  if (!Number.isInteger(spec.attempt) || spec.attempt < 0) throw badInput(`${where}: attempt ${spec.attempt} is not a whole number >= 0`);
  if (!Array.isArray(spec.command) || spec.command.length === 0 || spec.command.some((w) => typeof w !== 'string') || spec.command[0] === '') {
    throw badInput(`${where}: command must be a non-empty list of strings, the program first`);
  }
  if (typeof spec.workdir !== 'string' || spec.workdir === '') throw badInput(`${where}: workdir is empty; give the folder to run in`);
  if (typeof spec.dir !== 'string' || spec.dir === '') throw badInput(`${where}: dir is empty; give the attempt's folder`);
  for (const [key, value] of Object.entries(spec.env)) {
    if (typeof value !== 'string') throw badInput(`${where}: env.${key} is not a string`);
  }
  if (spec.devices.some((d) => typeof d !== 'string' || d.includes(','))) throw badInput(`${where}: devices must be strings without commas`);
  const max = spec.maxRuntimeSeconds;
  if (max !== null && !(typeof max === 'number' && Number.isFinite(max) && max > 0)) {
    throw badInput(`${where}: maxRuntimeSeconds ${String(max)} must be a positive number of seconds or null`);
  }
  const grace = spec.graceSeconds;
  if (grace !== undefined && !(Number.isFinite(grace) && grace >= 0)) throw badInput(`${where}: graceSeconds ${String(grace)} must be a number of seconds >= 0`);
  const runAs = spec.runAs;
  if (runAs !== undefined && !(Number.isInteger(runAs.uid) && runAs.uid >= 0 && Number.isInteger(runAs.gid) && runAs.gid >= 0)) {
    throw badInput(`${where}: runAs needs a uid and a gid, whole numbers >= 0, got ${JSON.stringify(runAs)}`);
  }
}

interface Tracked {
  readonly jobId: string;
  readonly attempt: number;
  readonly ref: ProcessRef;
  /** The runner, when this service process started it; null for an adopted attempt (watched by polling). */
  readonly child: ChildProcess | null;
  /** Seconds the runner waits from SIGTERM to SIGKILL for this attempt. */
  readonly graceSeconds: number;
  onChildExit: ((code: number | null, signal: NodeJS.Signals | null) => void) | null;
  cancelRequested: boolean;
  killTimer: NodeJS.Timeout | null;
}

/**
 * Creates the local executor (see the module comment for how attempts run).
 *
 * - `launch` writes the attempt's folder and starts the runner; it resolves once the runner
 *   process exists, with its pid and start ticks. It refuses a job that this executor still runs,
 *   and a folder whose runner is still alive, whether it recorded itself in `runner.json` or not
 *   yet (found by its command line, {@link findRunnerProcess}): adopt that one instead.
 * - `adopt` after a restart: `running` when `ref.pid` is still the runner (same start ticks; a pid
 *   reused by another process is not), which is then watched every `pollMs`; otherwise the report
 *   from `exit.json`, or `lost`. A report that `adopt` returns is not also passed to `onExit`.
 * - `onExit` listeners get one report per attempt launched or adopted as running. When the runner
 *   vanished without `exit.json` (killed itself), the report is `cancelled` if this executor
 *   was asked to cancel it, else `lost`, and what is left of the job is killed.
 * - `cancel`: SIGTERM to the runner's group (the runner stops the job: SIGTERM to the job's group,
 *   SIGKILL after `graceSeconds`, and records `cancelled`); should the runner itself still be alive
 *   2 s after that, it and the job's group get SIGKILL. Unknown or finished jobs: nothing happens.
 * - `close` stops watching; attempts keep running.
 */
export function createLocalExecutor(opts: LocalExecutorOptions = {}): Executor {
  const graceSeconds = opts.graceSeconds ?? 10;
  const pollMs = opts.pollMs ?? 1000;
  const now = opts.now ?? Date.now;
  if (!(Number.isFinite(graceSeconds) && graceSeconds >= 0)) throw badInput(`local executor: graceSeconds ${graceSeconds} must be a number of seconds >= 0`);
  if (!(Number.isFinite(pollMs) && pollMs > 0)) throw badInput(`local executor: pollMs ${pollMs} must be a positive number of milliseconds`);

  // Each attempt is reported once: by the one Tracked that watches it (ended() acts only while it
  // is the job's current one, and untracks it), or by adopt's answer. Nothing of an attempt is
  // kept once it is reported (a set of reported attempts grew by one per attempt, for the
  // service's life).
  const tracked = new Map<string, Tracked>();
  const listeners: ((report: ExitReport) => void)[] = [];
  let pollTimer: NodeJS.Timeout | null = null;
  let closed = false;

  function assertOpen(what: string): void {
    if (closed) throw new MigpoolError('RUNTIME', `local executor: ${what} after close(); create a new executor`);
  }

  function untrack(t: Tracked): void {
    if (tracked.get(t.jobId) === t) tracked.delete(t.jobId);
    if (t.killTimer !== null) clearTimeout(t.killTimer);
    t.killTimer = null;
    if (t.child !== null && t.onChildExit !== null) t.child.off('exit', t.onChildExit);
    t.onChildExit = null;
    if (pollTimer !== null && ![...tracked.values()].some((o) => o.child === null)) {
      clearInterval(pollTimer);
      pollTimer = null;
    }
  }

  function emit(report: ExitReport): void {
    for (const listener of listeners) {
      try {
        listener(report);
      } catch (error) {
        process.emitWarning(`local executor: an onExit listener threw for job ${report.jobId} attempt ${report.attempt}: ${String(error)}`);
      }
    }
  }

  /** The report of an attempt whose runner is gone. */
  function endReport(jobId: string, attempt: number, dir: string, cancelRequested: boolean, runnerSignal: string | null): ExitReport {
    const exit = readExitFile(dir);
    if (exit !== null) return { jobId, attempt, ...exit };
    killOrphanedJob(dir);
    if (cancelRequested) return { jobId, attempt, exitCode: null, signal: runnerSignal, reason: 'cancelled', endedAt: now() };
    return { jobId, attempt, exitCode: null, signal: null, reason: 'lost', endedAt: now() };
  }

  function ended(t: Tracked, runnerSignal: string | null): void {
    if (closed || tracked.get(t.jobId) !== t) return;
    untrack(t);
    emit(endReport(t.jobId, t.attempt, t.ref.dir, t.cancelRequested, runnerSignal));
  }

  function poll(): void {
    for (const t of [...tracked.values()]) {
      if (t.child === null && !isSameLiveProcess(t.ref.pid, t.ref.startTicks)) ended(t, null);
    }
  }

  function watchByPolling(): void {
    if (pollTimer !== null) return;
    pollTimer = setInterval(poll, pollMs);
    pollTimer.unref();
  }

  async function launch(spec: LaunchSpec): Promise<ProcessRef> {
    assertOpen('launch');
    validateSpec(spec);
    const running = tracked.get(spec.jobId);
    if (running !== undefined) {
      throw new MigpoolError('RUNTIME', `job ${spec.jobId}: attempt ${running.attempt} is still running (pid ${running.ref.pid}); cancel it or wait for its end before launching attempt ${spec.attempt}`, {
        jobId: spec.jobId,
        pid: running.ref.pid,
      });
    }
    const files = attemptFiles(spec.dir);
    try {
      mkdirSync(spec.dir, { recursive: true });
    } catch (error) {
      throw new MigpoolError('RUNTIME', `job ${spec.jobId}: cannot create attempt folder ${spec.dir}: ${(error as Error).message}`, { jobId: spec.jobId, dir: spec.dir });
    }
    const recorded = readProcessRef(spec.dir);
    // A runner that has not written runner.json yet (the service that started it died first) is found by its command line.
    const earlier = recorded !== null && isSameLiveProcess(recorded.pid, recorded.startTicks) ? recorded : findRunnerProcess(spec.dir);
    if (earlier !== null) {
      throw new MigpoolError('RUNTIME', `job ${spec.jobId}: ${spec.dir} holds an attempt that is still running (pid ${earlier.pid}); adopt it instead of launching again`, {
        jobId: spec.jobId,
        dir: spec.dir,
        pid: earlier.pid,
      });
    }
    rmSync(files.exit, { force: true });
    rmSync(files.runner, { force: true });
    writePrivateJsonAtomic(files.launch, {
      command: spec.command,
      workdir: spec.workdir,
      env: {
        ...spec.env,
        CUDA_VISIBLE_DEVICES: spec.devices.join(','),
        MIGPOOL_JOB_ID: spec.jobId,
        MIGPOOL_ATTEMPT: String(spec.attempt),
        MIGPOOL_ATTEMPT_DIR: spec.dir,
      },
      maxRuntimeSeconds: spec.maxRuntimeSeconds,
      graceSeconds: spec.graceSeconds ?? graceSeconds,
      ...(spec.runAs ? { uid: spec.runAs.uid, gid: spec.runAs.gid } : {}),
    });

    // Private (0600): a job's output is its user's (the API shows it to them and admins only).
    const out = openSync(files.stdout, 'a', 0o600);
    let child: ChildProcess;
    try {
      const err = openSync(files.stderr, 'a', 0o600);
      try {
        if (spec.runAs) ownLogs([out, err], spec.runAs, spec.jobId);
        // The runner gives the job its own environment: the service's, less the service's credentials.
        child = spawn(process.execPath, [jobRunnerPath(), files.launch], { cwd: spec.dir, detached: true, stdio: ['ignore', out, err], env: withoutServiceSecrets(process.env) });
      } finally {
        closeSync(err);
      }
    } finally {
      closeSync(out);
    }
    const pid = child.pid;
    if (pid === undefined) {
      const error = await new Promise<Error>((resolve) => child.once('error', resolve));
      throw new MigpoolError('RUNTIME', `job ${spec.jobId}: cannot start ${process.execPath} for the job runner: ${error.message}`, { jobId: spec.jobId });
    }
    child.on('error', () => {
      // Errors after the start (none expected: signals go through process.kill) must not crash the service.
    });
    // The runner is our unreaped child until its exit is handled, so its stat is there even if it already ended.
    const stat = readProcStat(pid);
    if (stat === null) {
      signalGroup(pid, 'SIGKILL');
      throw new MigpoolError('RUNTIME', `job ${spec.jobId}: cannot read /proc/${pid}/stat; the local executor needs Linux's /proc`, { jobId: spec.jobId, pid });
    }
    const ref: ProcessRef = { pid, startTicks: stat.startTicks, dir: spec.dir };
    const t: Tracked = { jobId: spec.jobId, attempt: spec.attempt, ref, child, graceSeconds: spec.graceSeconds ?? graceSeconds, onChildExit: null, cancelRequested: false, killTimer: null };
    t.onChildExit = (_code, signal) => ended(t, signal);
    child.once('exit', t.onChildExit);
    child.unref();
    tracked.set(spec.jobId, t);
    return ref;
  }

  async function adopt(jobId: string, attempt: number, ref: ProcessRef): Promise<'running' | ExitReport> {
    assertOpen('adopt');
    if (!Number.isInteger(ref.pid) || ref.pid <= 0 || typeof ref.startTicks !== 'string' || typeof ref.dir !== 'string' || ref.dir === '') {
      throw badInput(`adopt of job ${JSON.stringify(jobId)} attempt ${attempt}: the process ref ${JSON.stringify(ref)} needs a pid, its startTicks and the attempt's dir`);
    }
    const current = tracked.get(jobId);
    if (current !== undefined && current.attempt === attempt && current.ref.pid === ref.pid && current.ref.startTicks === ref.startTicks) return 'running';
    if (isSameLiveProcess(ref.pid, ref.startTicks)) {
      if (current !== undefined) untrack(current);
      tracked.set(jobId, { jobId, attempt, ref, child: null, graceSeconds: graceOfLaunch(ref.dir) ?? graceSeconds, onChildExit: null, cancelRequested: false, killTimer: null });
      watchByPolling();
      return 'running';
    }
    // Ended: the report is this answer, never also passed to onExit by a watcher of the same attempt.
    if (current !== undefined && current.attempt === attempt) untrack(current);
    return endReport(jobId, attempt, ref.dir, false, null);
  }

  async function cancel(jobId: string): Promise<void> {
    const t = tracked.get(jobId);
    if (closed || t === undefined || t.cancelRequested) return;
    t.cancelRequested = true;
    if (!isSameLiveProcess(t.ref.pid, t.ref.startTicks)) return;
    signalGroup(t.ref.pid, 'SIGTERM');
    t.killTimer = setTimeout(
      () => {
        t.killTimer = null;
        if (tracked.get(jobId) !== t || !isSameLiveProcess(t.ref.pid, t.ref.startTicks)) return;
        signalGroup(t.ref.pid, 'SIGKILL');
        killOrphanedJob(t.ref.dir);
      },
      (t.graceSeconds + RUNNER_BACKSTOP_SECONDS) * 1000,
    );
    t.killTimer.unref();
  }

  function onExit(listener: (report: ExitReport) => void): void {
    listeners.push(listener);
  }

  function logPaths(ref: ProcessRef): { stdout: string; stderr: string } {
    const files = attemptFiles(ref.dir);
    return { stdout: files.stdout, stderr: files.stderr };
  }

  async function close(): Promise<void> {
    if (closed) return;
    for (const t of [...tracked.values()]) untrack(t);
    if (pollTimer !== null) clearInterval(pollTimer);
    pollTimer = null;
    closed = true;
  }

  const retained = (): number => tracked.size;
  return { launch, adopt, cancel, onExit, logPaths, close, retained, runsAsOthers: true };
}
