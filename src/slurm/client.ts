/**
 * Slurm's commands as functions: each runs with execFile and an argument list (never a shell) and
 * returns parsed output. The runner can be replaced (tests, or a site wrapper).
 */
import { execFile } from 'node:child_process';
import { MigpoolError } from '../errors.js';
import { parseSacctLines, parseScontrolNodes, parseSqueueJson, parseSqueueLines, SQUEUE_FORMAT, type SlurmJob, type SlurmNode } from './parse.js';

export interface CommandResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a program with arguments; resolves with its exit status and output (rejects only when it cannot start). */
export type CommandRunner = (file: string, args: readonly string[], opts?: { env?: NodeJS.ProcessEnv; timeoutMs?: number; input?: string }) => Promise<CommandResult>;

/** The runner over execFile: no shell, output up to 64 MiB, 60 s unless told. */
export const execRunner: CommandRunner = (file, args, opts = {}) =>
  new Promise((resolve, reject) => {
    const child = execFile(file, [...args], { env: opts.env ?? process.env, timeout: opts.timeoutMs ?? 60_000, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error && (error as NodeJS.ErrnoException).code === 'ENOENT') {
        reject(new MigpoolError('RUNTIME', `cannot run ${file}: not found on PATH; install Slurm's client commands (Debian: slurm-client) or fix PATH`));
        return;
      }
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, stdout: String(stdout), stderr: String(stderr) });
    });
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(opts.input ?? '');
  });

function firstLine(text: string): string {
  return text.trim().split('\n')[0] ?? '';
}

/** Runs a Slurm command and returns its stdout; a non-zero exit is a one-line RUNTIME error. */
export async function slurmCommand(run: CommandRunner, file: string, args: readonly string[], env?: NodeJS.ProcessEnv): Promise<string> {
  const r = await run(file, args, env ? { env } : {});
  if (r.code !== 0) throw new MigpoolError('RUNTIME', `${file} ${args.join(' ')} failed (exit ${r.code}): ${firstLine(r.stderr) || firstLine(r.stdout) || 'no message'}`);
  return r.stdout;
}

/** Access to one Slurm cluster through its commands. */
export class SlurmClient {
  /** null until the first call finds out whether `squeue --json` works. */
  private json: boolean | null = null;

  constructor(private readonly run: CommandRunner = execRunner) {}

  /** Jobs in the controller's memory (pending, running, and finished within MinJobAge), optionally only these ids. */
  async jobs(ids?: readonly string[]): Promise<SlurmJob[]> {
    const only = ids && ids.length > 0 ? ['--jobs', ids.join(',')] : [];
    if (this.json !== false) {
      const r = await this.run('squeue', ['--json', '--states=all', ...only]);
      if (r.code === 0) {
        this.json = true;
        return parseSqueueJson(r.stdout);
      }
      // An id Slurm no longer knows makes squeue fail; that is no reason to give up on --json.
      if (/invalid job id/i.test(r.stderr)) return [];
      if (this.json === true) throw new MigpoolError('RUNTIME', `squeue --json failed (exit ${r.code}): ${firstLine(r.stderr)}`);
      this.json = false;
    }
    const r = await this.run('squeue', ['-h', '--states=all', '-o', SQUEUE_FORMAT, ...only]);
    if (r.code !== 0) {
      if (/invalid job id/i.test(r.stderr)) return [];
      throw new MigpoolError('RUNTIME', `squeue failed (exit ${r.code}): ${firstLine(r.stderr)}`);
    }
    return parseSqueueLines(r.stdout);
  }

  /** How finished jobs ended, from accounting (empty when accounting is off). */
  async accounting(ids: readonly string[]): Promise<ReturnType<typeof parseSacctLines>> {
    if (ids.length === 0) return [];
    const r = await this.run('sacct', ['--parsable2', '-n', '-X', '-o', 'JobID,State,ExitCode', '-j', ids.join(',')]);
    return r.code === 0 ? parseSacctLines(r.stdout) : [];
  }

  /** Exit code of one finished job from `scontrol show job` (`ExitCode=3:0`), or null. */
  async scontrolExit(id: string): Promise<{ state: string; exitCode: number | null; signal: number | null } | null> {
    const r = await this.run('scontrol', ['show', 'job', '-o', id]);
    if (r.code !== 0) return null;
    const state = /\bJobState=(\S+)/.exec(r.stdout)?.[1];
    const exit = /\bExitCode=(\d+):(\d+)/.exec(r.stdout);
    if (!state || !exit) return null;
    const sig = Number(exit[2]);
    return { state, exitCode: sig === 0 ? Number(exit[1]) : null, signal: sig === 0 ? null : sig };
  }

  async nodes(names?: readonly string[]): Promise<SlurmNode[]> {
    const out = await slurmCommand(this.run, 'scontrol', ['show', 'node', '-o', '-d', ...(names && names.length > 0 ? [names.join(',')] : [])]);
    return parseScontrolNodes(out);
  }

  async scontrol(args: readonly string[]): Promise<void> {
    await slurmCommand(this.run, 'scontrol', args);
  }

  /** `sbatch --parsable ...`: the new job's id (`12`, or `12;cluster` trimmed to `12`). */
  async sbatch(args: readonly string[], env: NodeJS.ProcessEnv): Promise<string> {
    const out = await slurmCommand(this.run, 'sbatch', ['--parsable', ...args], env);
    const id = out.trim().split(';')[0] ?? '';
    if (!/^\d+(_\d+)?$/.test(id)) throw new MigpoolError('RUNTIME', `sbatch printed '${out.trim()}', not a job id`);
    return id;
  }

  async scancel(id: string): Promise<void> {
    await slurmCommand(this.run, 'scancel', [id]);
  }
}
