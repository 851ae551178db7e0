import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { MigpoolError } from '../../errors.js';

/**
 * The compiled `main.js` of the fake: beside this module once built, or under `dist/` when this
 * module runs from its TypeScript source (tests).
 */
export function compiledMainPath(): string {
  const here = fileURLToPath(import.meta.url);
  if (here.endsWith('.js')) return join(dirname(here), 'main.js');
  return resolve(dirname(here), '../../../dist/src/gpu/fake-nvidia-smi/main.js');
}

/**
 * Writes an executable `nvidia-smi` into `dir` (created if missing) that runs the fake: a
 * `#!/usr/bin/env node` script importing the compiled main module by absolute path, no shell
 * involved. Put `dir` first on PATH and set MIGPOOL_FAKE_NVIDIA_SMI_STATE for the child. Returns
 * the script's path.
 *
 * @param mainPath the compiled main.js to run; by default this build's (`npm run build` first)
 * @throws MigpoolError `RUNTIME` when the compiled main module does not exist, `BAD_INPUT` when
 *   `dir` cannot be made or written (a file, no permission)
 */
export function installFakeNvidiaSmi(dir: string, mainPath: string = compiledMainPath()): string {
  if (!existsSync(mainPath)) {
    throw new MigpoolError('RUNTIME', `the fake nvidia-smi is not built: ${mainPath} is missing; run 'npm run build' first`);
  }
  const target = join(dir, 'nvidia-smi');
  const url = JSON.stringify(pathToFileURL(mainPath).href);
  // A dynamic import works whether node loads this extensionless file as CommonJS or ESM.
  const script = [
    '#!/usr/bin/env node',
    `import(${url}).then(`,
    '  (m) => { process.exitCode = m.main(process.argv.slice(2), process.env); },',
    "  (e) => { process.stderr.write(`fake nvidia-smi: ${e && e.message ? e.message : e}\\n`); process.exitCode = 255; },",
    ');',
    '',
  ].join('\n');
  try {
    mkdirSync(dir, { recursive: true });
    writeFileSync(target, script);
    chmodSync(target, 0o755);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    // mkdir says EEXIST (or ENOTDIR below it) when the path, or a folder on it, is a file.
    const why = code === 'EEXIST' || code === 'ENOTDIR' ? 'it is a file, not a directory' : (code ?? (e as Error).message);
    throw new MigpoolError('BAD_INPUT', `cannot write ${target}: ${why}; give a directory to put first on PATH (created if missing)`);
  }
  return target;
}
