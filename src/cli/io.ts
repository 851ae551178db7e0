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
