/**
 * What migpool's mig-parted commands (apply, assert, export, generate-config, checkpoint,
 * restore) share: `-d/--debug`, reading the files the user names, the hooks file, and --force's
 * way of ending processes.
 */
import { mkdirSync } from 'node:fs';
import type { Command } from 'commander';
import { badInput, MigpoolError } from '../../errors.js';
import { lockDataDir } from '../data-dir-lock.js';
import { stateDirOf, type DeviceOptions } from '../device.js';
import type { GpuPort, GpuProcess } from '../../gpu/port.js';
import { SimulatedGpuPort } from '../../gpu/simulated/driver.js';
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
 * How hooks run for a command: under `-d` their output is shown (stdout on stdout, stderr on
 * stderr), as mig-parted shows it; with `--json` their stdout goes to stderr, keeping stdout JSON.
 */
export function hookRunOptions(io: Io, debug: { on: boolean; log: DebugLog }, json = false): RunHooksOptions {
  return debug.on ? { output: { out: (l) => (json ? io.err(l) : io.out(l)), err: (l) => io.err(l) }, onStart: (what) => debug.log(`Running ${what}`) } : {};
}

/**
 * `--force`'s way of ending the processes in the way of an apply. On the simulated machine the
 * pretend processes end (as `migpool sim detach` ends them). On real GPUs migpool does not kill
 * processes it did not start: it returns null, and the apply refuses before changing anything,
 * naming them (control/apply.ts).
 */
export function processStopperOf(port: GpuPort): ((processes: readonly GpuProcess[]) => Promise<void>) | null {
  if (!(port instanceof SimulatedGpuPort)) return null;
  return (processes) => {
    for (const p of processes) port.machine.detachProcess(p.pid);
    port.persist();
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
