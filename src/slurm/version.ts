/**
 * The Slurm version in use, from the commands' own `--version` / `-V` output (`slurm 22.05.8`).
 */
import { badInput } from '../errors.js';
import { parseSlurmVersion, type SlurmVersion } from '../partition/slurm-gres-type.js';
import { execRunner, type CommandRunner } from './client.js';

/**
 * The version the given commands report, the first that answers: by default slurmd's (it names the
 * node's GRES), then scontrol's. null when none runs.
 */
export async function localSlurmVersion(run: CommandRunner = execRunner, commands: readonly (readonly string[])[] = [['slurmd', '-V'], ['scontrol', '--version']]): Promise<SlurmVersion | null> {
  for (const [file, ...args] of commands) {
    try {
      const r = await run(file!, args, { timeoutMs: 20_000 });
      const v = r.code === 0 ? parseSlurmVersion(r.stdout) : null;
      if (v !== null) return v;
    } catch {
      // not installed here: try the next
    }
  }
  return null;
}

/** A `--slurm-version` flag's value, or a one-line bad-input message. */
export function parseSlurmVersionFlag(text: string, flag: string): SlurmVersion {
  const v = /^\s*\d+\.\d+(\.\d+)?\s*$/.test(text) ? parseSlurmVersion(text) : null;
  if (v === null) throw badInput(`${flag} '${text}': give a Slurm version such as 22.05.8 or 24.11`);
  return v;
}
