/**
 * Runs mig-parted hooks (partition/hooks.ts) the way mig-parted runs them
 * (github.com/NVIDIA/mig-parted api/hooks/v1/hooks.go HookSpec.Run and HooksMap.Run;
 * cmd/nvidia-mig-parted/apply/apply.go ApplyMigConfigWithHooks): each hook is one process
 * started with an argument list (never a shell), in its `workdir`, one after the other; the first
 * failure stops the list. Unlike mig-parted, a time limit can be set (`timeoutMs`).
 *
 * Environment: the process environment (unless `inheritEnv: false`), then the hook's `envs`,
 * then mig-parted's variables (partition/hooks.ts migPartedHookEnv), later ones winning. Note
 * that mig-parted itself does not pass its own environment on: its hooks see only their
 * `envs` and the MIG_PARTED_* variables. `inheritEnv: false` reproduces that exactly, bare
 * command names then being looked up in this process's PATH as Go's exec.Command does.
 */
import { spawn } from 'node:child_process';
import { accessSync, constants, existsSync, statSync } from 'node:fs';
import { delimiter, isAbsolute, join, resolve } from 'node:path';
import { badInput, MigpoolError } from '../errors.js';
import { HOOK_POINTS, hookEnv, hooksAt } from '../partition/hooks.js';
import type { HookPoint, HookSpec, MigPartedHooks } from '../partition/hooks.js';
import { signalGroup } from './proc.js';

export interface RunHooksOptions {
  /** Start from this process's environment. Default true; false is exactly mig-parted. */
  inheritEnv?: boolean;
  /** Copy each hook's stdout and stderr to ours, as `mig-parted --debug` does. Default false. */
  echoOutput?: boolean;
  /**
   * Where to copy each hook's output, line by line (stdout lines to `out`, stderr lines to `err`),
   * instead of this process's streams; implies echoOutput.
   */
  output?: { out(line: string): void; err(line: string): void };
  /** Called before each hook runs, with its point, index and command line (for `-d`). */
  onStart?: (what: string) => void;
  /**
   * Stop a hook that runs longer than this (ms), with every process it started (its process
   * group), and fail. Default 0: no limit, as mig-parted (which has none).
   */
  timeoutMs?: number;
  /** Time between SIGTERM and SIGKILL for a hook past `timeoutMs`. Default {@link HOOK_KILL_GRACE_MS}. */
  killGraceMs?: number;
  /** The fix a timed-out hook's error names, e.g. `raise --hook-timeout or fix the hook`. */
  timeoutFix?: string;
}

function lookPath(command: string): string {
  if (command.includes('/')) return command;
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir === '') continue;
    const candidate = join(dir, command);
    try {
      accessSync(candidate, constants.X_OK);
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // not here
    }
  }
  return command;
}

function lastLine(text: string): string {
  const lines = text.split('\n').map((l) => l.trim()).filter((l) => l !== '');
  const line = lines[lines.length - 1] ?? '';
  return line.length > 200 ? `${line.slice(0, 197)}...` : line;
}

/**
 * How long a hook that ran past its time limit gets between SIGTERM and SIGKILL (to its whole
 * process group). A choice: enough for a shell script's `trap` to clean up, short beside the
 * minutes of the limit itself (mig-parted has no limit, so nothing to copy).
 */
export const HOOK_KILL_GRACE_MS = 5000;

/**
 * How long to wait, once a hook's own process has ended, for its stdout and stderr pipes to close.
 * Output still in the pipe is read within milliseconds; the pipes stay open past that only when a
 * process the hook left running in the background inherited them. mig-parted (Go's cmd.Run with
 * Stdout an *os.File or nil) does not wait for such processes, so neither do we; they keep running.
 */
const PIPE_DRAIN_MS = 1000;

/** The most stderr kept for the error message and `details.stderr`: its last 64 KiB. */
const STDERR_TAIL_CHARS = 64 * 1024;

/** Signals that end migpool which also reach a running hook, as they would in mig-parted (see runOne). */
const FORWARDED_SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

/**
 * While a hook runs in its own process group, a SIGINT, SIGTERM or SIGHUP to migpool is passed on
 * to that group (mig-parted's hooks share its group, so a Ctrl-C reaches them), and then, when
 * nothing else of this process listens for it, raised again so that migpool ends as it would have.
 * Returns the function that stops forwarding.
 */
function forwardSignals(pgid: number): () => void {
  const handlers = FORWARDED_SIGNALS.map((signal) => {
    const handler = (): void => {
      signalGroup(pgid, signal);
      stop();
      if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
    };
    process.on(signal, handler);
    return { signal, handler };
  });
  const stop = (): void => {
    for (const { signal, handler } of handlers) process.off(signal, handler);
  };
  return stop;
}

/**
 * Runs one hook. It starts in a process group of its own (spawn `detached`, which is setsid(2)),
 * so that a hook that runs past `timeoutMs` is ended with everything it started: SIGTERM to the
 * group, SIGKILL {@link HOOK_KILL_GRACE_MS} later. execFile's own `timeout` signals only the
 * process it started: a shell script's `sleep` lived on after the apply gave up. And execFile
 * answers only once the output pipes close: a hook `sh -c 'sleep 5 &'` held the apply 5 s (measured
 * with the execFile runner), a hook that starts a daemon held it for ever.
 */
function runOne(point: string, index: number, hook: HookSpec, env: Readonly<Record<string, string>>, options: RunHooksOptions): Promise<void> {
  const shown = [hook.command, ...hook.args].map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : JSON.stringify(a))).join(' ');
  const where = `${point} hook [${index}] (${hook.file}:${hook.line}) ${shown}`;
  const details = { point, index, command: hook.command, args: hook.args, file: hook.file, line: hook.line };
  if (hook.command === '') {
    return Promise.reject(new MigpoolError('RUNTIME', `${point} hook [${index}] (${hook.file}:${hook.line}) has no command; give it one`, details));
  }
  const inherit = options.inheritEnv ?? true;
  const childEnv: Record<string, string> = {};
  if (inherit) {
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined) childEnv[k] = v;
  }
  Object.assign(childEnv, hookEnv(hook, env));
  const command = inherit ? hook.command : lookPath(hook.command);
  const timeoutMs = options.timeoutMs ?? 0;
  options.onStart?.(where);
  return new Promise((resolve, reject) => {
    // stdin is /dev/null, as Go's exec.Cmd gives a nil Stdin.
    const child = spawn(command, hook.args, { cwd: hook.workdir === '' ? undefined : hook.workdir, env: childEnv, detached: true, stdio: ['ignore', 'pipe', 'pipe'], windowsHide: true });
    const pgid = child.pid;
    const stopForwarding = pgid === undefined ? () => undefined : forwardSignals(pgid);
    let stderr = '';
    let timedOut = false;
    let sentKill = false;
    let exit: { code: number | null; signal: NodeJS.Signals | null } | null = null;
    let openPipes = 2;
    let settled = false;
    const timers: NodeJS.Timeout[] = [];
    const later = (ms: number, f: () => void): void => void timers.push(setTimeout(f, ms));

    const settle = (error: MigpoolError | null): void => {
      if (settled) return;
      settled = true;
      for (const t of timers) clearTimeout(t);
      stopForwarding();
      // A hook past its limit has ended: what is left of its group (a child that ignored SIGTERM
      // and let go of the pipes) goes too, not to outlive the apply.
      if (timedOut && pgid !== undefined) signalGroup(pgid, 'SIGKILL');
      // Whatever still holds the pipes (a background process of the hook) may write on: read and
      // drop it without keeping this process alive.
      for (const stream of [child.stdout, child.stderr]) {
        stream?.removeAllListeners('data');
        stream?.resume();
        (stream as (NodeJS.ReadableStream & { unref?: () => void }) | null)?.unref?.();
      }
      if (error) reject(error);
      else resolve();
    };
    const fail = (what: string, extra: Record<string, unknown>): void => {
      const tail = lastLine(stderr);
      settle(new MigpoolError('RUNTIME', `${where} ${what}${tail && !timedOut ? `: ${tail}` : ''}`, { ...details, stderr, ...extra }));
    };
    const finish = (): void => {
      if (!exit) return;
      if (timedOut) {
        const seconds = timeoutMs / 1000;
        fail(`was still running after ${seconds} s and was stopped (SIGTERM to its process group${sentKill ? ', then SIGKILL' : ''}); ${options.timeoutFix ?? 'raise the time limit or fix the hook'}`, {
          exitCode: exit.code,
          signal: exit.signal,
          timedOut: true,
          timeoutMs,
        });
      } else if (exit.code === 0) {
        settle(null);
      } else if (exit.code !== null) {
        fail(`failed with exit status ${exit.code}`, { exitCode: exit.code, signal: null });
      } else {
        fail(`was killed by ${exit.signal ?? 'a signal'}`, { exitCode: null, signal: exit.signal });
      }
    };

    child.on('error', (err: NodeJS.ErrnoException) => {
      if (exit || pgid !== undefined) return; // an error after the start (a failed kill) changes nothing
      let what: string;
      if (err.code === 'ENOENT' && hook.workdir !== '' && !existsSync(hook.workdir)) what = `could not start: workdir ${hook.workdir} does not exist`;
      else if (err.code === 'ENOENT') what = `could not start: command ${hook.command} not found`;
      else what = `could not start: ${err.code ?? err.message}`;
      fail(what, { exitCode: null, signal: null });
    });
    child.on('exit', (code, signal) => {
      exit = { code, signal };
      if (openPipes === 0) return finish();
      later(PIPE_DRAIN_MS, () => {
        // After a timeout, what is left of the group and still holds the pipes is stopped.
        if (timedOut && pgid !== undefined) {
          signalGroup(pgid, 'SIGKILL');
          sentKill = true;
        }
        finish();
      });
    });
    for (const stream of [child.stdout, child.stderr]) {
      stream?.setEncoding('utf8');
      stream?.on('close', () => {
        openPipes--;
        if (openPipes === 0) finish();
      });
    }
    child.stderr?.on('data', (chunk: string) => {
      stderr = (stderr + chunk).slice(-STDERR_TAIL_CHARS);
    });
    if (options.output) {
      const sink = options.output;
      lineSplitter(child.stdout, (line) => sink.out(line));
      lineSplitter(child.stderr, (line) => sink.err(line));
    } else if (options.echoOutput) {
      child.stdout?.on('data', (chunk: string) => process.stdout.write(chunk));
      child.stderr?.on('data', (chunk: string) => process.stderr.write(chunk));
    }
    if (timeoutMs > 0 && pgid !== undefined) {
      later(timeoutMs, () => {
        if (exit) return;
        timedOut = true;
        signalGroup(pgid, 'SIGTERM');
        later(options.killGraceMs ?? HOOK_KILL_GRACE_MS, () => {
          signalGroup(pgid, 'SIGKILL');
          sentKill = true;
        });
      });
    }
  });
}

/** Calls `emit` with each whole line of a stream, and with the unterminated rest at its end. */
function lineSplitter(stream: NodeJS.ReadableStream | null, emit: (line: string) => void): void {
  if (!stream) return;
  let rest = '';
  stream.on('data', (chunk: string) => {
    const parts = (rest + chunk).split('\n');
    rest = parts.pop() ?? '';
    for (const line of parts) emit(line);
  });
  stream.on('end', () => {
    if (rest !== '') emit(rest);
    rest = '';
  });
}

function isExecutableFile(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/**
 * Checks, before an apply changes anything, that every hook at mig-parted's four points can
 * start: it has a command, the command is an executable file (a bare name: one on PATH), and its
 * workdir is a directory. mig-parted finds these only when it runs the hook, part way through an
 * apply. Throws BAD_INPUT `file:line: hooks.<point>[i].<field>: problem; fix`.
 */
export function checkHooksRunnable(hooks: MigPartedHooks | null): void {
  if (!hooks) return;
  for (const point of HOOK_POINTS) {
    for (const [i, hook] of hooksAt(hooks, point).entries()) {
      const field = `hooks.${point}[${i}]`;
      const fail = (f: string, problem: string): never => {
        throw badInput(`${hook.file}:${hook.line}: ${field}.${f}: ${problem}`, { file: hook.file, line: hook.line, field: `${field}.${f}` });
      };
      if (hook.command === '') fail('command', 'missing; give the program to run, e.g. command: /bin/bash');
      if (hook.workdir !== '') {
        let dir: boolean;
        try {
          dir = statSync(hook.workdir).isDirectory();
        } catch {
          dir = false;
        }
        if (!dir) fail('workdir', `${hook.workdir} is not a directory; create it or fix the path`);
      }
      const resolved = hook.command.includes('/') ? (hook.workdir !== '' && !isAbsolute(hook.command) ? resolve(hook.workdir, hook.command) : hook.command) : lookPath(hook.command);
      if (!resolved.includes('/') || !isExecutableFile(resolved)) {
        fail('command', `${hook.command} ${hook.command.includes('/') ? 'is not an executable file' : 'is not found on PATH'}; install it or give its full path`);
      }
    }
  }
}

/**
 * Runs the hooks of one point in order, stopping at the first failure, which is a RUNTIME
 * MigpoolError naming the point, the hook (`file:line`), its command line and its exit status
 * or signal, with the last line of its stderr. `env` is mig-parted's variables
 * (partition/hooks.ts migPartedHookEnv).
 *
 * `apply-exit` must run after every apply whose `apply-start` succeeded, whatever happens
 * next: use {@link applyWithHooks}, or call this from a `finally` block.
 */
export async function runHooks(point: HookPoint | string, hooks: readonly HookSpec[], env: Readonly<Record<string, string>>, options: RunHooksOptions = {}): Promise<void> {
  for (const [i, hook] of hooks.entries()) await runOne(point, i, hook, env, options);
}

/**
 * mig-parted's apply sequence around `apply` (apply.go ApplyMigConfigWithHooks):
 * 1. `apply-start`; if it fails, its error is thrown and nothing else runs (not even
 *    `apply-exit`, as in mig-parted, whose deferred apply-exit is set up after apply-start);
 * 2. `apply(runPoint)`: the caller calls `runPoint('pre-apply-mode')` before changing MIG
 *    modes and `runPoint('pre-apply-config')` before changing MIG devices (mig-parted runs each
 *    only when that change is needed);
 * 3. `apply-exit`, always, also when step 2 threw. If step 2 threw, its error is rethrown and a
 *    failure of apply-exit is attached as `details.applyExitError` of a MigpoolError (mig-parted
 *    logs it); otherwise an apply-exit failure is thrown.
 */
export async function applyWithHooks<T>(
  hooks: MigPartedHooks | null,
  env: Readonly<Record<string, string>>,
  apply: (runPoint: (point: 'pre-apply-mode' | 'pre-apply-config') => Promise<void>) => Promise<T>,
  options: RunHooksOptions = {},
): Promise<T> {
  await runHooks('apply-start', hooksAt(hooks, 'apply-start'), env, options);
  let result: T;
  try {
    result = await apply((point) => runHooks(point, hooksAt(hooks, point), env, options));
  } catch (error) {
    try {
      await runHooks('apply-exit', hooksAt(hooks, 'apply-exit'), env, options);
    } catch (exitError) {
      if (error instanceof MigpoolError) {
        (error.details as Record<string, unknown>).applyExitError = exitError instanceof Error ? exitError.message : String(exitError);
      }
    }
    throw error;
  }
  await runHooks('apply-exit', hooksAt(hooks, 'apply-exit'), env, options);
  return result;
}
