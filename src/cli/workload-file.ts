import { readFileSync } from 'node:fs';
import { badInput } from '../errors.js';
import type { Workload } from '../perf/types.js';
import { isWorkloadFile, resolveWorkloadRef } from '../perf/workload-ref.js';

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

/** The user workloads `--workload` names: each a YAML file written by `migpool bench --out`. */
export function workloadFiles(files: readonly string[]): Workload[] {
  const out: Workload[] = [];
  for (const f of files) {
    if (!isWorkloadFile(f)) throw badInput(`--workload '${f}': give a workload YAML file (written by 'migpool bench --out'); built-in workloads need no flag`);
    const w = loadWorkload(f);
    if (out.some((o) => o.name === w.name)) throw badInput(`--workload '${f}': a workload named '${w.name}' is already given; give each workload one name`);
    out.push(w);
  }
  return out;
}
