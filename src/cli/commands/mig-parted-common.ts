/**
 * What migpool's mig-parted commands (apply, assert, export, generate-config, checkpoint,
 * restore) share: `-d/--debug`, reading the files the user names, the hooks file, and --force's
 * way of ending processes.
 */
import { mkdirSync } from 'node:fs';
import type { Command } from 'commander';
import { decimalValue } from '../../decimal-number.js';
import { badInput, MigpoolError } from '../../errors.js';
import { lockDataDir } from '../data-dir-lock.js';
import { stateDirOf, type DeviceOptions } from '../device.js';
import type { GpuPort, GpuProcess } from '../../gpu/port.js';
import { FileSimulatedGpuPort } from '../../gpu/simulated/file-port.js';
import { checkHooksRunnable, type RunHooksOptions } from '../../exec/hooks-runner.js';
import { parseMigPartedHooks, type MigPartedHooks } from '../../partition/hooks.js';
import { readUserText, type Io } from '../io.js';
import { debugOn } from './mig-parted-env.js';

/** Adds mig-parted's `-d/--debug` to a subcommand too, so that `apply -d` and `apply -md` work as in mig-parted. */
export function withDebugOption(cmd: Command): Command {
  return cmd.option('-d, --debug', 'debug output on stderr, and hook output shown (or $MIG_PARTED_DEBUG)');
}

/** Prints `debug: ...` lines on stderr under `-d` (mig-parted logs them at debug level). */
export type DebugLog = (line: string) => void;

/** The debug logger of a command: on when `-d` is given before or after the subcommand, or $MIG_PARTED_DEBUG is true. */
export function debugLogOf(io: Io, cmd: Command): { on: boolean; log: DebugLog } {
  const opts = cmd.optsWithGlobals<{ debug?: boolean }>();
  const on = debugOn(opts.debug);
  return { on, log: (line) => (on ? io.err(`debug: ${line}`) : undefined) };
}

/**
 * Reads a file the user named, as a one-line error when it cannot be read or is not UTF-8 text (a
 * binary file's bytes would otherwise come back in the parser's error, thousands of characters).
 */
export function readUserFile(path: string, what: string): string {
  return readUserText(path, what, what === 'checkpoint file' ? "give a file 'migpool checkpoint -f' wrote" : `give a mig-parted ${what} (YAML)`, MIG_PARTED_FILE_LIMIT);
}

/**
 * The largest config, hooks or checkpoint file read. NVIDIA's config-default.yaml, every MIG GPU
 * model in one file, is 11,593 bytes (test/fixtures/mig-parted); a checkpoint is about 1 KB per
 * GPU. 1 MiB parses in about a second; 21 MB of configs took 36 s and 2.5 GB of memory.
 */
const MIG_PARTED_FILE_LIMIT = { bytes: 1024 * 1024, why: "1 MiB; NVIDIA's config-default.yaml for every MIG GPU is 12 KB" } as const;

/**
 * Reads and checks a hooks file: its warnings (what mig-parted silently ignores) are printed on
 * stderr, and every hook must be able to start (exec/hooks-runner.ts checkHooksRunnable), so that a
 * broken hook stops the apply before it changes anything.
 */
export function loadHooks(hooksFile: string, io: Io, log: DebugLog): MigPartedHooks | null {
  if (hooksFile === '') return null;
  log('Parsing Hooks file...');
  const hooks = parseMigPartedHooks(readUserFile(hooksFile, 'hooks file'), hooksFile);
  for (const w of hooks.warnings) io.err(`warning: ${w}`);
  checkHooksRunnable(hooks);
  return hooks;
}

/**
 * The default of `--hook-timeout`, in seconds: 10 minutes. NVIDIA mig-parted has no time limit on
 * hooks (api/hooks/v1/hooks.go HookSpec.Run is a plain exec.Command(...).Run()), so a hook that
 * hangs hangs the apply with the GPUs half way. The limit is migpool's choice, far above what
 * NVIDIA's own hooks take: deployments/systemd/utils.sh bounds each docker/ctr command with
 * `timeout 30` (cmd_timeout) and pauses 10 s after killing containers, and stopping a systemd
 * service waits at most DefaultTimeoutStopSec=90s (systemd-system.conf(5)); the GPU Operator's MIG
 * manager waits up to 5 minutes for its operand pods to go (pkg/mig/reconfigure/reconfigure.go).
 */
export const DEFAULT_HOOK_TIMEOUT_SECONDS = 600;

/**
 * The largest `--hook-timeout`: Node's timers hold at most 2^31-1 ms (a longer delay is set to
 * 1 ms, with a TimeoutOverflowWarning: nodejs.org/api/timers.html#settimeoutcallback-delay-args),
 * i.e. 2,147,483 s, 24.8 days.
 */
const MAX_HOOK_TIMEOUT_SECONDS = Math.floor((2 ** 31 - 1) / 1000);

/** The variable `--hook-timeout` falls back to: migpool's own flag, so migpool's prefix (MIG_PARTED_ names mig-parted's flags). */
export const HOOK_TIMEOUT_ENV = 'MIGPOOL_HOOK_TIMEOUT';

/** The help of `--hook-timeout <seconds>` (apply, restore). */
export const HOOK_TIMEOUT_HELP = `stop a hook that runs longer than this many seconds, with all it started, and fail (default ${DEFAULT_HOOK_TIMEOUT_SECONDS}, or $${HOOK_TIMEOUT_ENV}; mig-parted has no limit)`;

/**
 * The hook time limit in ms: `--hook-timeout`, else $MIGPOOL_HOOK_TIMEOUT, else the default.
 * A number of seconds above 0 and at most 2,147,483; anything else is BAD_INPUT naming where it
 * came from.
 */
export function hookTimeoutMs(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): number {
  const fromEnv = flag === undefined ? env[HOOK_TIMEOUT_ENV] : undefined;
  const text = flag ?? fromEnv;
  if (text === undefined) return DEFAULT_HOOK_TIMEOUT_SECONDS * 1000;
  const where = flag !== undefined ? '--hook-timeout' : HOOK_TIMEOUT_ENV;
  const seconds = decimalValue(text);
  if (!(seconds > 0 && seconds <= MAX_HOOK_TIMEOUT_SECONDS)) {
    throw badInput(
      `${where} '${text}' is not a time limit: give the seconds a hook may run, above 0 and at most ${MAX_HOOK_TIMEOUT_SECONDS} (default ${DEFAULT_HOOK_TIMEOUT_SECONDS})`,
      { flag: where },
    );
  }
  return Math.max(1, Math.round(seconds * 1000));
}

/**
 * How hooks run for a command: under `-d` their output is shown (stdout on stdout, stderr on
 * stderr), as mig-parted shows it; with `--json` their stdout goes to stderr, keeping stdout JSON.
 * A hook that runs past `timeoutMs` is stopped and the command fails naming --hook-timeout.
 */
export function hookRunOptions(io: Io, debug: { on: boolean; log: DebugLog }, json = false, timeoutMs = DEFAULT_HOOK_TIMEOUT_SECONDS * 1000): RunHooksOptions {
  const limit: RunHooksOptions = { timeoutMs, timeoutFix: `raise --hook-timeout (or $${HOOK_TIMEOUT_ENV}) or fix the hook` };
  return debug.on ? { ...limit, output: { out: (l) => (json ? io.err(l) : io.out(l)), err: (l) => io.err(l) }, onStart: (what) => debug.log(`Running ${what}`) } : limit;
}

/**
 * `--force`'s way of ending the processes in the way of an apply. On the simulated machine the
 * pretend processes end (as `migpool sim detach` ends them). On real GPUs migpool does not kill
 * processes it did not start: it returns null, and the apply refuses before changing anything,
 * naming them (control/apply.ts).
 */
export function processStopperOf(port: GpuPort): ((processes: readonly GpuProcess[]) => Promise<void>) | null {
  if (!(port instanceof FileSimulatedGpuPort)) return null;
  return (processes) => {
    port.update((machine) => {
      for (const p of processes) machine.detachProcess(p.pid);
    });
    return Promise.resolve();
  };
}

/**
 * Runs `body` (an apply or restore) holding the state directory. Two at once on one machine both
 * read the GPUs, then each applied its own plan: on the simulated machine the last to save won,
 * and the other reported success for a layout that was gone; both wrote the one journal. The lock
 * is an abstract socket (cli/data-dir-lock.ts), freed by the kernel when the process dies.
 */
export async function withApplyLock<T>(opts: DeviceOptions, body: () => Promise<T>): Promise<T> {
  const dir = stateDirOf(opts);
  try {
    mkdirSync(dir, { recursive: true });
  } catch (e) {
    throw badInput(`cannot create the state directory ${dir}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}; pass a writable --state-dir`);
  }
  const lock = await lockDataDir(dir, 'apply');
  if (!lock) throw new MigpoolError('RUNTIME', `another apply or restore is changing the GPUs of ${dir}; wait for it to end, then run this again`);
  try {
    return await body();
  } finally {
    await lock.release();
  }
}
