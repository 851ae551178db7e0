import { badInput } from '../errors.js';
import type { Highs } from 'highs';
import { deeppoolPolicy } from './policies/deeppool.js';
import { dpPolicy } from './policies/dp.js';
import { exclusivePolicy } from './policies/exclusive.js';
import { gavelPolicy, parseGavelRound } from './policies/gavel.js';
import { migpoolPolicy } from './policies/migpool.js';
import { misoPolicy } from './policies/miso.js';
import { MAX_SHARERS, sharingPolicy } from './policies/sharing.js';
import { staticPolicy } from './policies/static.js';
import { parseTiresiasThresholds, tiresiasPolicy } from './policies/tiresias.js';
import type { Policy } from './types.js';

/** The policy names `parsePolicy` accepts, for help texts. */
export const POLICY_NAMES: readonly string[] = ['exclusive', 'timeslice:N', 'mps:N', 'static:LAYOUT', 'miso', 'migpool', 'dp', 'deeppool', 'tiresias[:T1,T2,...]', 'gavel[:SECONDS]'];

const VALID = `valid policies: ${POLICY_NAMES.join(', ')} (N: 1 to ${MAX_SHARERS} jobs per GPU; LAYOUT: e.g. 7x1g.5gb or 3g.20gb+2g.10gb+1g.5gb+1g.5gb; T1,T2,...: queue thresholds in GPU-seconds, default 3250,7200; SECONDS: round length, default 360)`;

/** What some policies need from outside the scheduling core: the HiGHS runtime (src/exec/highs.ts). */
export interface PolicyDeps {
  readonly highs?: Highs;
}

/**
 * The policy a name stands for: `exclusive`, `timeslice:N`, `mps:N` (N jobs per GPU at most),
 * `static:LAYOUT`, `miso`, `migpool`, `dp`, `deeppool` (case-insensitive keywords; the last two
 * schedule strong-scaled foreground jobs data-parallel or burst-parallel, see policies/dp.ts),
 * `tiresias` or `tiresias:T1,T2,...` (discretised 2D-LAS with these queue thresholds, GPU-seconds),
 * `gavel` or `gavel:SECONDS` (Gavel's max-min fairness in rounds of SECONDS; `deps.highs` is
 * needed on fleets of several GPU models).
 * The policy's `name` is the text as given (trimmed), so that reports show what the user wrote.
 * Unknown names and bad arguments are BAD_INPUT errors listing the valid names.
 */
export function parsePolicy(text: string, deps: PolicyDeps = {}): Policy {
  const name = text.trim();
  const colon = name.indexOf(':');
  const head = (colon < 0 ? name : name.slice(0, colon)).toLowerCase();
  const arg = colon < 0 ? null : name.slice(colon + 1).trim();
  const named = (p: Policy): Policy => (p.name === name ? p : { name, decide: (view, ctx) => p.decide(view, ctx) });
  switch (head) {
    case 'exclusive':
    case 'miso':
    case 'migpool':
      if (arg !== null) throw badInput(`policy '${name}': ${head} takes no argument; ${VALID}`);
      return named(head === 'exclusive' ? exclusivePolicy() : head === 'miso' ? misoPolicy() : migpoolPolicy());
    case 'dp':
    case 'deeppool':
      if (arg !== null) throw badInput(`policy '${name}': ${head} takes no argument; ${VALID}`);
      return named(head === 'dp' ? dpPolicy() : deeppoolPolicy());
    case 'timeslice':
    case 'mps': {
      const n = arg === null || !/^\d+$/.test(arg) ? NaN : Number(arg);
      if (!Number.isInteger(n) || n < 1 || n > MAX_SHARERS) throw badInput(`policy '${name}': ${head} needs a number of jobs per GPU from 1 to ${MAX_SHARERS} (e.g. ${head}:2); ${VALID}`);
      return sharingPolicy(head, n, name);
    }
    case 'tiresias':
      return tiresiasPolicy(arg === null ? undefined : parseTiresiasThresholds(arg, name), name);
    case 'gavel':
      return gavelPolicy({ name, ...(arg === null ? {} : { roundSeconds: parseGavelRound(arg, name) }), ...(deps.highs ? { highs: deps.highs } : {}) });
    case 'static':
      if (arg === null || arg === '') throw badInput(`policy '${name}': static needs a layout (e.g. static:7x1g.5gb); ${VALID}`);
      return staticPolicy(arg, name);
    default:
      throw badInput(`unknown policy '${name}': ${VALID}`);
  }
}

/**
 * Splits a comma-separated list of policy names; an item that starts with a digit continues the
 * argument of the name before it (`tiresias:3250,7200,exclusive` is two policies).
 */
export function splitPolicyList(list: string): string[] {
  const out: string[] = [];
  for (const part of list.split(',')) {
    const s = part.trim();
    if (/^\d/.test(s) && out.length > 0 && (out[out.length - 1] as string).includes(':')) out[out.length - 1] += `,${s}`;
    else out.push(s);
  }
  return out;
}

/** Parses a comma-separated list of policies (`exclusive,timeslice:2,static:7x1g.5gb`). */
export function parsePolicies(list: string, deps: PolicyDeps = {}): Policy[] {
  const names = splitPolicyList(list).filter((s) => s !== '');
  if (names.length === 0) throw badInput(`no policy given: ${VALID}`);
  return names.map((n) => parsePolicy(n, deps));
}
