import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { BIN } from './run-cli.js';

/**
 * How long a start may take before it counts as failed. Generous on purpose: CI runs the suite on
 * two loaded cores (the per-file copies this replaces waited 20 to 30 s).
 */
export const SERVE_START_MS = 60_000;

/**
 * `migpool serve` flags for a test whose users (not admins) are no Unix accounts and whose jobs
 * must run: CI runs as root, where serve refuses such users' jobs unless told they may run as
 * root (see src/control/run-as.ts rootRunRefusal; test/users.test.ts checks the refusal).
 */
export const UNMAPPED_AS_ROOT: readonly string[] = ['--unmapped-users-as-root'];

/** Milliseconds between two looks at the data dir or the log. */
const POLL_MS = 50;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A `migpool serve` that a test started, in its own process, from the built CLI. */
export interface ServeProcess {
  readonly proc: ChildProcess;
  /** The base URL it listens on (from server.json). */
  readonly url: string;
  /** The data dir's token (the admin's). */
  readonly token: string;
  /**
   * What serve has written to stderr so far. It grows while serve runs: serve writes server.json
   * BEFORE it prints its start-up lines, so right after {@link startServe} a line may be missing;
   * wait for it with {@link ServeProcess.waitForLog}.
   */
  readonly log: () => string;
  /** Resolves with the log once it contains `text`, or as it is when serve exits or `ms` pass. */
  readonly waitForLog: (text: string, ms?: number) => Promise<string>;
  /** SIGKILL (a crash), resolved once the process has exited. */
  readonly kill9: () => Promise<void>;
  /** SIGTERM (a clean stop), resolved once the process has exited; nothing when it already has. */
  readonly stop: () => Promise<void>;
}

/** What {@link startServe} runs. */
export interface ServeOptions {
  /** The data dir (`--data-dir`); a server.json left in it by an earlier serve is removed first. */
  readonly dataDir: string;
  /** Flags after `serve --data-dir DIR --listen 127.0.0.1:0`, e.g. `['--simulate', '1xA100-SXM4-40GB']`. */
  readonly args?: readonly string[];
  /** The environment of serve; default this process's. */
  readonly env?: NodeJS.ProcessEnv;
  /** How long to wait for server.json; default {@link SERVE_START_MS}. */
  readonly timeoutMs?: number;
}

function exited(proc: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  return new Promise((resolve) => {
    if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
    proc.once('exit', () => resolve());
    proc.kill(signal);
  });
}

/**
 * Starts `migpool serve` on a free port and resolves once it has written server.json, with its URL
 * and the data dir's token; throws with serve's stderr when it exits first or takes longer than
 * the timeout. The caller stops it ({@link ServeProcess.stop}, in its afterAll).
 */
export async function startServe(options: ServeOptions): Promise<ServeProcess> {
  const { dataDir } = options;
  const serverJson = join(dataDir, 'server.json');
  rmSync(serverJson, { force: true });
  const proc = spawn(process.execPath, [BIN, 'serve', '--data-dir', dataDir, '--listen', '127.0.0.1:0', ...(options.args ?? [])], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: options.env ?? process.env,
  });
  let log = '';
  proc.stderr?.on('data', (d: Buffer) => (log += d.toString()));
  const ended = (): boolean => proc.exitCode !== null || proc.signalCode !== null;
  const t0 = Date.now();
  while (!existsSync(serverJson)) {
    if (ended() || Date.now() - t0 > (options.timeoutMs ?? SERVE_START_MS)) {
      await exited(proc, 'SIGKILL');
      throw new Error(`migpool serve did not start: ${log}`);
    }
    await sleep(POLL_MS);
  }
  const { url } = JSON.parse(readFileSync(serverJson, 'utf8')) as { url: string };
  return {
    proc,
    url,
    token: readFileSync(join(dataDir, 'token'), 'utf8').trim(),
    log: () => log,
    waitForLog: async (text, ms = SERVE_START_MS) => {
      const start = Date.now();
      while (!log.includes(text) && !ended() && Date.now() - start <= ms) await sleep(POLL_MS);
      return log;
    },
    kill9: () => exited(proc, 'SIGKILL'),
    stop: () => exited(proc, 'SIGTERM'),
  };
}

/** Runs a command to its end, with stdin closed, and gives its exit code and what it printed. */
export function runProcess(cmd: string, args: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], env });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('close', (code) => resolve({ code: code ?? -1, out, err }));
  });
}

/** Runs the built CLI (`bin/migpool.js ARGS`) in its own process, as a user's shell would. */
export function runMigpool(args: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<{ code: number; out: string; err: string }> {
  return runProcess(process.execPath, [BIN, ...args], env);
}
