import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { badInput, MigpoolError } from '../errors.js';

/** Where a command writes: stdout for results, stderr for messages. Injected so tests can capture. */
export interface Io {
  out(text: string): void;
  err(text: string): void;
}

export const processIo: Io = {
  out: (text) => void process.stdout.write(text.endsWith('\n') ? text : `${text}\n`),
  err: (text) => void process.stderr.write(text.endsWith('\n') ? text : `${text}\n`),
};

/**
 * Ends the process quietly once the reader of `stream` has gone (`migpool jobs | head -1`): a
 * write then fails with EPIPE, which Node raises as an unhandled 'error' event, a stack trace.
 * The exit status is 141, what a shell reports for a command that SIGPIPE ended (128 + 13), as
 * `seq 100000 | head -1` does; other errors are raised as before.
 */
export function endQuietlyOnClosedPipe(stream: NodeJS.EventEmitter = process.stdout, exit: (code: number) => void = (code) => process.exit(code)): void {
  stream.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code !== 'EPIPE') throw e;
    exit(141);
  });
}

/** Writes a value as stable, indented JSON. */
export function writeJson(io: Io, value: unknown): void {
  io.out(JSON.stringify(value, null, 2));
}

/** Writes a file the user named with a flag; failure is one line naming the flag and the path. */
export function writeUserFile(path: string, text: string, flag: string): void {
  try {
    writeFileSync(path, text);
  } catch (e) {
    throw badInput(`cannot write ${flag} '${path}': ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}; give a path in a writable directory`);
  }
}

/**
 * Reads a text file the user named (`-`: stdin). What cannot be read (missing, a directory, no
 * permission) is one line naming `what`, the path and the system's error code; bytes that are not
 * UTF-8 (a binary file, a Latin-1 export) are refused rather than read as U+FFFD characters, which
 * the parsers would echo back in their errors. A UTF-8 byte order mark is dropped.
 *
 * @param fix what to give instead, ending the message: `give a CSV file`
 * @param limit refuse a file larger than this, before reading it: `{ bytes, why }`, `why` saying
 *   what the bound rests on
 */
export function readUserText(path: string, what: string, fix: string, limit?: { readonly bytes: number; readonly why: string }): string {
  const tooBig = (size: number) => badInput(`${what} '${path}' is ${size} bytes, over the limit of ${limit?.bytes} (${limit?.why}); ${fix}`);
  let bytes: Buffer;
  try {
    // A file is measured before it is read; stdin as it is read (a directory fails in the read).
    const stat = limit !== undefined && path !== '-' ? statSync(path) : null;
    if (stat?.isFile() && stat.size > (limit?.bytes ?? Infinity)) throw tooBig(stat.size);
    bytes = readFileSync(path === '-' ? 0 : path);
  } catch (e) {
    if (e instanceof MigpoolError) throw e;
    throw badInput(`cannot read ${what} '${path}': ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}; ${fix}`);
  }
  if (limit !== undefined && bytes.length > limit.bytes) throw tooBig(bytes.length);
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw badInput(`${what} '${path}' is not UTF-8 text (a binary file, or another encoding); ${fix}`);
  }
}
