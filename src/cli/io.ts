import { writeFileSync } from 'node:fs';
import { badInput } from '../errors.js';

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
