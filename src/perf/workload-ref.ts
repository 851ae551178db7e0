import { badInput } from '../errors.js';
import { parseWorkloadYaml } from './user-workload.js';
import { resolveWorkload } from './workloads.js';
import type { Workload } from './types.js';

/** True when `ref` names a workload file rather than a workload: it ends in .yaml or .yml. */
export function isWorkloadFile(ref: string): boolean {
  return /\.ya?ml$/i.test(ref.trim());
}

/**
 * The one way to name a workload everywhere (`--workload NAME|FILE.yaml` in bench and advise, a
 * trace's or job spec's `workload` field): a file ending in .yaml/.yml is read with `read` (the
 * caller's file access; this module does no I/O) and parsed as `migpool bench --out` writes it;
 * anything else is a built-in workload's name or alias, or one of `extra`'s.
 * `read` returns the file's text, or throws a MigpoolError naming the file.
 */
export function resolveWorkloadRef(ref: string, read: (path: string) => string, extra: readonly Workload[] = []): Workload {
  const name = ref.trim();
  if (name === '') throw badInput('the workload is empty: name a built-in one (small, medium, large, bert-base-squad, ...) or a YAML file written by migpool bench --out');
  if (isWorkloadFile(name)) return parseWorkloadYaml(read(name), name);
  return resolveWorkload(name, extra);
}
