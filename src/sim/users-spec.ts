import { decimalValue } from '../decimal-number.js';
import { badInput } from '../errors.js';
import type { UserShare } from '../sched/types.js';
import { checkQuota, checkUserName, checkWeight } from '../sched/user-rules.js';
import type { TraceJob } from './types.js';

/** What `--users` says: the users in the order given, with their weights and quotas. */
export interface UsersSpec {
  readonly names: readonly string[];
  readonly users: ReadonlyMap<string, UserShare>;
}

const EXAMPLE = 'e.g. alice:2,bob:1,carol:1:q4 (NAME[:WEIGHT[:qGPUS]])';

/**
 * Parses `NAME[:WEIGHT[:qGPUS]],...`: each user once, named as `migpool users add` names them (a
 * letter, then letters, digits, `_ . -`), a positive weight [1] and optionally a quota in GPUs'
 * worth (`q8`, `q2.5`).
 * @throws MigpoolError BAD_INPUT naming the piece that is wrong and the form to use
 */
export function parseUsersSpec(text: string): UsersSpec {
  const users = new Map<string, UserShare>();
  const names: string[] = [];
  const pieces = text.split(',').map((p) => p.trim());
  if (pieces.every((p) => p === '')) throw badInput(`no users given: ${EXAMPLE}`);
  for (const piece of pieces) {
    const [name = '', weightText, quotaText, ...rest] = piece.split(':').map((x) => x.trim());
    checkUserName(name, 'user name');
    if (rest.length > 0) throw badInput(`'${piece}' has too many parts; ${EXAMPLE}`);
    if (users.has(name)) throw badInput(`user '${name}' is named twice`);
    const weight = weightText === undefined ? 1 : positive(weightText);
    if (weight === null) throw badInput(`'${piece}': the weight must be a positive number, got '${weightText}'; ${EXAMPLE}`);
    checkWeight(weight, `'${piece}': the weight`);
    let quotaGpus: number | null = null;
    if (quotaText !== undefined) {
      quotaGpus = /^q/i.test(quotaText) ? positive(quotaText.slice(1)) : null;
      if (quotaGpus === null) throw badInput(`'${piece}': the quota must be q and a positive number of GPUs (q8), got '${quotaText}'; ${EXAMPLE}`);
      checkQuota(quotaGpus, `'${piece}': the quota`);
    }
    users.set(name, { weight, quotaGpus });
    names.push(name);
  }
  return { names, users };
}

/** A positive decimal (too large ones included: checkWeight and checkQuota say so), else null. */
function positive(text: string): number | null {
  const n = decimalValue(text);
  return n > 0 ? n : null;
}

/**
 * The jobs with owners: round robin over the users in the order given, in arrival order (ties:
 * trace order), so that every user submits the same number of jobs, of the same mix, and the
 * weights alone set what each should get. Deterministic.
 */
export function assignUsers(jobs: readonly TraceJob[], names: readonly string[]): TraceJob[] {
  if (names.length === 0) return [...jobs];
  const order = jobs.map((j, i) => ({ j, i })).sort((a, b) => a.j.arrival - b.j.arrival || a.i - b.i);
  const owner = new Map<number, string>();
  order.forEach(({ i }, k) => owner.set(i, names[k % names.length] as string));
  return jobs.map((j, i) => ({ ...j, user: owner.get(i) as string }));
}
