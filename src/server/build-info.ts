import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** What `migpool_build_info` carries. */
export interface BuildInfo {
  /** migpool's version, from its package.json ('unknown' when none is found). */
  readonly version: string;
  /** The Node.js running it (`process.versions.node`). */
  readonly nodeVersion: string;
}

/**
 * The running migpool's version: the `version` of the nearest package.json above this module
 * named migpool (the checkout or the installed package, from src/ or dist/).
 */
export function buildInfo(): BuildInfo {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    try {
      const m = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: unknown; version?: unknown };
      if (m.name === 'migpool' && typeof m.version === 'string') return { version: m.version, nodeVersion: process.versions.node };
    } catch {
      // None here, or not readable: look further up.
    }
    const parent = dirname(dir);
    if (parent === dir) return { version: 'unknown', nodeVersion: process.versions.node };
    dir = parent;
  }
}
