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
