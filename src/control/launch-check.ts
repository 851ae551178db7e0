import { isAbsolute } from 'node:path';

/**
 * What the kernel would refuse when the job runner starts a job's command, checked at submit so
 * that the user hears it at once (one line, the field named) rather than from a failed attempt.
 *
 * Limits from Linux's execve(2), "Limits on size of arguments and environment": each argument or
 * `NAME=value` string is at most MAX_ARG_STRLEN = 32 pages (131072 bytes with 4 KiB pages), and
 * all of them together at most a quarter of the stack limit (2 MiB under the usual 8 MiB), which
 * the service's own environment shares: a job gets half of it.
 */
export const MAX_ARG_STRLEN = 131_072;
/** Bytes of command and environment a job may bring: half of execve's usual 2 MiB, the rest left to the service's environment. */
export const MAX_JOB_ARGS_BYTES = 1_048_576;

/** Why the runner could not start this command and environment, naming the field; null when it can. */
export function launchRefusal(command: readonly string[], env: Readonly<Record<string, string>>, workdir: string | undefined): { path: string; message: string } | null {
  // execve(2) with an empty path fails with ENOENT: the job would only ever fail at start.
  if (command[0] === '') return { path: 'command.0', message: 'is empty: name the program to run first, e.g. [python, train.py]' };
  let total = 0;
  for (const [i, word] of command.entries()) {
    if (word.includes('\0')) return { path: `command.${i}`, message: 'contains a NUL byte, which no program can receive: remove it' };
    const bytes = Buffer.byteLength(word) + 1;
    if (bytes > MAX_ARG_STRLEN) return { path: `command.${i}`, message: `is ${bytes - 1} bytes, more than the ${MAX_ARG_STRLEN} bytes Linux passes in one argument: pass a file instead` };
    total += bytes;
  }
  for (const [name, value] of Object.entries(env)) {
    if (value.includes('\0')) return { path: `env.${name}`, message: 'contains a NUL byte, which no environment variable can hold: remove it' };
    const bytes = Buffer.byteLength(name) + Buffer.byteLength(value) + 2;
    if (bytes > MAX_ARG_STRLEN) return { path: `env.${name}`, message: `is ${Buffer.byteLength(value)} bytes, more than the ${MAX_ARG_STRLEN} bytes Linux allows for one variable: pass a file instead` };
    total += bytes;
  }
  if (total > MAX_JOB_ARGS_BYTES) return { path: 'env', message: `command and environment take ${total} bytes, more than the ${MAX_JOB_ARGS_BYTES} a job may bring: pass large values in files` };
  if (workdir !== undefined && workdir.includes('\0')) return { path: 'workdir', message: 'contains a NUL byte: remove it' };
  // The job would run in that path taken from the service's own directory, which the submitter
  // does not know (`migpool submit` sends absolute paths: its --workdir, or the directory it runs in).
  if (workdir !== undefined && !isAbsolute(workdir)) return { path: 'workdir', message: `'${workdir}' is relative: give an absolute path, e.g. /home/you/${workdir.replace(/^(\.\.?\/)+/, '') || 'project'}` };
  return null;
}
