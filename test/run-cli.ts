import { fileURLToPath } from 'node:url';
import { main } from '../src/cli/main.js';

/** The installed command (bin/migpool.js over the build). */
export const BIN = fileURLToPath(new URL('../bin/migpool.js', import.meta.url));

/** Runs the CLI in-process and captures what it prints, one line per write. */
export async function cli(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await main(argv, { out: (s) => void (out += `${s.replace(/\n$/, '')}\n`), err: (s) => void (err += `${s.replace(/\n$/, '')}\n`) });
  return { code, out, err };
}
