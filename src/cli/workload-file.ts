import { readFileSync } from 'node:fs';
import { badInput } from '../errors.js';
import type { Workload } from '../perf/types.js';
import { resolveWorkloadRef } from '../perf/workload-ref.js';

/** Reads a workload file the user named; failure is one line naming the file and the fix. */
export function readWorkloadFile(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (e) {
    throw badInput(`cannot read workload file '${path}': ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}; give a YAML file written by 'migpool bench --out', or a built-in workload's name`);
  }
}

/** `--workload NAME|FILE.yaml`: a built-in workload, or one read from a file (see resolveWorkloadRef). */
export function loadWorkload(ref: string, extra: readonly Workload[] = []): Workload {
  return resolveWorkloadRef(ref, readWorkloadFile, extra);
}
