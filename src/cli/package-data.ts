import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BUILT_IN_MODELS, builtInModel, resolveBuiltInModel } from '../burst/models.js';
import { createScalingModel, type ScalingOptions } from '../burst/scaling.js';
import type { ModelGraph } from '../burst/types.js';
import { MigpoolError } from '../errors.js';
import type { ScalingModel } from '../sched/types.js';

/**
 * The package's root directory: the nearest ancestor of this module holding migpool's
 * package.json (the checkout, or the installed package), whether this runs from src/ or dist/.
 */
export function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest)) {
      try {
        if ((JSON.parse(readFileSync(manifest, 'utf8')) as { name?: unknown }).name === 'migpool') return dir;
      } catch {
        // Not a readable manifest: keep looking.
      }
    }
    const parent = dirname(dir);
    if (parent === dir) throw new MigpoolError('RUNTIME', `cannot find migpool's package root above ${fileURLToPath(import.meta.url)}`);
    dir = parent;
  }
}

/** A built-in model, read from the package's data/deeppool/. */
export function loadBuiltInModel(name: string): ModelGraph {
  const m = resolveBuiltInModel(name);
  const file = join(packageRoot(), 'data', 'deeppool', m.file);
  if (!existsSync(file)) throw new MigpoolError('RUNTIME', `profile data missing: ${file} is not there (this install lacks data/deeppool); pass --profile FILE instead`);
  return builtInModel(m, readFileSync(file, 'utf8'));
}

/** The scaling model of the simulator over the built-in models (all of them, read once). */
export function builtInScalingModel(options?: ScalingOptions): ScalingModel {
  return createScalingModel(
    BUILT_IN_MODELS.map((m) => loadBuiltInModel(m.name)),
    options,
  );
}
