import type { Highs } from 'highs';
import { badInput, MigpoolError } from '../errors.js';
import { deeppoolPolicy } from './policies/deeppool.js';
import { dpPolicy } from './policies/dp.js';
import { exclusivePolicy } from './policies/exclusive.js';
import { migpoolPolicy } from './policies/migpool.js';
import { misoPolicy } from './policies/miso.js';
import { MAX_SHARERS, sharingPolicy } from './policies/sharing.js';
import { parseStaticLayout, resolveStaticLayout, staticPolicy } from './policies/static.js';
import { gavelPolicy, parseGavelRound } from './policies/gavel.js';
import { parseTiresiasThresholds, tiresiasPolicy } from './policies/tiresias.js';
import { MIG_SLICES, WHOLE_GPUS, withShares, type LeastHolding } from './share-policy.js';
import type { GpuModel } from '../mig/types.js';
import type { Policy } from './types.js';

/** What a policy's argument (the text after `name:`) looks like. */
export interface PolicyArgument {
  /** Its placeholder in help texts (`N`, `LAYOUT`, `T1,T2,...`). */
  readonly syntax: string;
  /** What it means, for help texts and errors (`jobs per GPU, 1 to 48`). */
  readonly help: string;
  /** Whether the bare name is an error (`timeslice` alone) or takes a default (`tiresias`). */
  readonly required: boolean;
  /**
   * Whether it is itself a comma-separated list (`tiresias:3250,7200`): in a list of policies the
   * pieces after it that name no policy are its own.
   */
  readonly list?: boolean;
}

/**
 * One scheduling policy as users name it. The CLI help, the registry test and the policy contract
 * suite (policy-contract.test.ts) iterate POLICIES, so a policy registered here is listed,
 * parsed and checked everywhere; a new policy is its file(s) under policies/ and one entry below.
 */
export interface PolicyEntry {
  /** The keyword users type, lower case (`timeslice`); matched case-insensitively. */
  readonly name: string;
  /** Its argument; absent when it takes none (`exclusive:2` is then an error). */
  readonly argument?: PolicyArgument;
  /** One line for help texts: what it does, and its source when it is a peer's. */
  readonly help: string;
  /**
   * Full names to try it with (`timeslice:2`), at least one: the first is the example help and
   * errors show; the contract suite runs every one.
   */
  readonly examples: readonly [string, ...string[]];
  /**
   * Builds a fresh policy (policies may keep state across calls, so one per simulation or service).
   * `arg` is the trimmed text after the first `:` (never empty), or null without one (only when
   * the argument is optional, or the entry takes none). A bad argument is a
   * MigpoolError BAD_INPUT saying what is wrong with it; parsePolicy adds the name and the list.
   */
  create(arg: string | null, deps: PolicyDeps): Policy;
  /**
   * What a job holds at least under the policy, for quotas (share-policy.ts) [WHOLE_GPUS: a job
   * holds its GPUs]. `arg` as for `create`, already accepted by it.
   */
  readonly least?: (arg: string | null) => LeastHolding;
  /**
   * The MIG profiles the policy ever runs a job on, on a GPU of `model` (Policy.sliceProfiles):
   * `[]` for a policy that keeps MIG off. Absent: any profile the GPU offers. `arg` as for `create`.
   */
  readonly sliceProfiles?: (arg: string | null, model: GpuModel) => readonly string[];
}

/** What a policy that keeps MIG off runs jobs on: no MIG slice. */
const NO_SLICES = (): readonly string[] => [];

/** The profiles of a static layout on `model`; none where the model cannot hold the layout. */
function staticProfiles(arg: string | null, model: GpuModel): readonly string[] {
  try {
    return [...new Set(resolveStaticLayout(parseStaticLayout(arg ?? ''), model, arg ?? '').instances.map((i) => i.profile.name))];
  } catch {
    return [];
  }
}

/** What some policies need from outside the scheduling core: the HiGHS runtime (src/exec/highs.ts loads it). */
export interface PolicyDeps {
  readonly highs?: Highs;
}

/** A sharing count `N` (1 to MAX_SHARERS), or a BAD_INPUT error naming the policy. */
function sharers(head: 'timeslice' | 'mps', arg: string): number {
  const n = /^\d+$/.test(arg) ? Number(arg) : NaN;
  if (!Number.isInteger(n) || n < 1 || n > MAX_SHARERS) throw badInput(`${head} needs a number of jobs per GPU from 1 to ${MAX_SHARERS} (e.g. ${head}:2), got '${arg}'`);
  return n;
}

const SHARERS: PolicyArgument = { syntax: 'N', help: `jobs per GPU, 1 to ${MAX_SHARERS}`, required: true };

/** Every policy, in the order help lists them. */
export const POLICIES: readonly PolicyEntry[] = [
  {
    name: 'exclusive',
    help: 'whole GPUs, MIG off, one job per GPU; first come first served with EASY backfilling (what most clusters do)',
    examples: ['exclusive'],
    create: () => exclusivePolicy(),
    sliceProfiles: NO_SLICES,
  },
  {
    name: 'timeslice',
    argument: SHARERS,
    help: 'MIG off; up to N jobs take turns on a GPU (CUDA time-slicing)',
    examples: ['timeslice:2'],
    create: (arg) => sharingPolicy('timeslice', sharers('timeslice', arg ?? '')),
    sliceProfiles: NO_SLICES,
  },
  {
    name: 'mps',
    argument: SHARERS,
    help: 'MIG off; up to N jobs run side by side on a GPU (CUDA MPS)',
    examples: ['mps:3'],
    create: (arg) => sharingPolicy('mps', sharers('mps', arg ?? '')),
    sliceProfiles: NO_SLICES,
  },
  {
    name: 'static',
    argument: { syntax: 'LAYOUT', help: 'MIG instances of every GPU, e.g. 7x1g.5gb or 3g.20gb+2g.10gb+1g.5gb+1g.5gb', required: true },
    help: 'every GPU keeps one MIG layout; each job takes the idle instance that suits it best',
    examples: ['static:7x1g.5gb', 'static:3g.20gb+2g.10gb+1g.5gb+1g.5gb'],
    create: (arg) => staticPolicy(arg ?? ''),
    least: () => MIG_SLICES,
    sliceProfiles: staticProfiles,
  },
  {
    name: 'miso',
    help: 'MISO (Li et al., SoCC 2022): every GPU in MIG mode, re-partitioned for the speeds of its jobs',
    examples: ['miso'],
    create: () => misoPolicy(),
    least: () => MIG_SLICES,
  },
  {
    name: 'migpool',
    help: "migpool's own: least attained service over whole GPUs and MIG slices; young small jobs packed onto slices while jobs wait, moved to whole GPUs once long; starving jobs go first; at most 10 preemptions per job",
    examples: ['migpool'],
    create: () => migpoolPolicy(),
    least: () => MIG_SLICES,
  },
  {
    name: 'dp',
    help: "DeepPool's baseline (Park et al., MLSys 2022): foreground jobs first, strong-scaled ones data-parallel",
    examples: ['dp'],
    create: () => dpPolicy(),
    sliceProfiles: NO_SLICES,
  },
  {
    name: 'deeppool',
    help: 'DeepPool (Park et al., MLSys 2022): burst-parallel foreground jobs, background jobs in their idle GPU time',
    examples: ['deeppool'],
    create: () => deeppoolPolicy(),
    sliceProfiles: NO_SLICES,
  },
  {
    name: 'tiresias',
    argument: { syntax: 'T1,T2,...', help: 'queue thresholds in GPU-seconds (default 3250,7200, as the reference dlas-gpu)', required: false, list: true },
    help: 'Tiresias (Gu et al., NSDI 2019): discretised 2D-LAS over attained GPU-seconds, preemptive, whole GPUs; never reads job lengths',
    examples: ['tiresias:3250,7200', 'tiresias'],
    create: (arg) => (arg === null ? tiresiasPolicy() : tiresiasPolicy(parseTiresiasThresholds(arg))),
    sliceProfiles: NO_SLICES,
  },
  {
    name: 'gavel',
    argument: { syntax: 'SECONDS', help: 'round length in seconds (default 360, as Gavel)', required: false },
    help: "Gavel's max-min fairness (Narayanan et al., OSDI 2020): heterogeneity-aware shares realised in rounds; never reads job lengths",
    examples: ['gavel:360', 'gavel'],
    create: (arg, deps) => gavelPolicy({ ...(arg === null ? {} : { roundSeconds: parseGavelRound(arg) }), ...(deps.highs ? { highs: deps.highs } : {}) }),
    sliceProfiles: NO_SLICES,
  },
];

/** How a policy is written in help texts: `exclusive`, `timeslice:N`, `tiresias[:T1,T2,...]`. */
export function policySyntax(entry: PolicyEntry): string {
  if (!entry.argument) return entry.name;
  return entry.argument.required ? `${entry.name}:${entry.argument.syntax}` : `${entry.name}[:${entry.argument.syntax}]`;
}

/** The policies as `parsePolicy` accepts them, for help texts (`timeslice:N`, `static:LAYOUT`, ...). */
export const POLICY_NAMES: readonly string[] = POLICIES.map(policySyntax);

/** The valid names and what their arguments mean, on one line (appended to every error). */
function validList(): string {
  const args = new Map<string, string>();
  for (const e of POLICIES) if (e.argument && !args.has(e.argument.syntax)) args.set(e.argument.syntax, e.argument.help);
  const meaning = [...args].map(([syntax, help]) => `${syntax}: ${help}`).join('; ');
  return `valid policies: ${POLICY_NAMES.join(', ')}${meaning === '' ? '' : ` (${meaning})`}`;
}

/** The registered policies, one per line (`  timeslice:N   MIG off; ...`), for `--help`. */
export function policyHelp(): string {
  const width = Math.max(...POLICY_NAMES.map((n) => n.length));
  const lines = POLICIES.map((e) => {
    const arg = e.argument ? `; ${e.argument.syntax}: ${e.argument.help}` : '';
    return `  ${policySyntax(e).padEnd(width)}  ${e.help}${arg}`;
  });
  return `Policies:\n${lines.join('\n')}`;
}

/** The entry a policy name's keyword (before any `:`) stands for, or undefined. */
export function policyEntry(keyword: string): PolicyEntry | undefined {
  const k = keyword.trim().toLowerCase();
  return POLICIES.find((e) => e.name === k);
}

/**
 * The policy a name stands for: an entry's keyword (case-insensitive), with `:ARGUMENT` where it
 * takes one (see POLICIES, or `migpool simulate --help`). The policy's `name` is the text as given
 * (trimmed), so that reports show what the user wrote. Unknown names and bad arguments are
 * one-line BAD_INPUT errors listing the valid names.
 */
export function parsePolicy(text: string, deps: PolicyDeps = {}): Policy {
  const name = text.trim();
  const colon = name.indexOf(':');
  const head = (colon < 0 ? name : name.slice(0, colon)).toLowerCase();
  const arg = colon < 0 ? null : name.slice(colon + 1).trim();
  const entry = policyEntry(head);
  if (!entry) throw badInput(`unknown policy '${name}': ${validList()}`);
  if (!entry.argument && arg !== null) throw badInput(`policy '${name}': ${head} takes no argument; ${validList()}`);
  if (entry.argument && (arg === '' || (arg === null && entry.argument.required))) {
    throw badInput(`policy '${name}': ${head} needs ${entry.argument.syntax} (${entry.argument.help}), e.g. ${entry.examples[0]}; ${validList()}`);
  }
  let policy: Policy;
  try {
    // Quotas and fair share apply to every policy alike (a no-op when the view has no users).
    policy = withShares(entry.create(arg, deps), entry.least?.(arg) ?? WHOLE_GPUS);
    const slices = entry.sliceProfiles;
    if (slices) policy = delegated(policy, policy.name, (model) => slices(arg, model));
  } catch (e) {
    if (e instanceof MigpoolError && e.code === 'BAD_INPUT') throw badInput(`policy '${name}': ${e.message}; ${validList()}`, e.details);
    throw e;
  }
  return policy.name === name ? policy : delegated(policy, name);
}

/** The policy under `name` (what the user wrote), with all it offers, and `sliceProfiles` where given. */
function delegated(policy: Policy, name: string, sliceProfiles?: (model: GpuModel) => readonly string[]): Policy {
  const wakeAt = policy.wakeAt;
  const explain = policy.explain;
  const slices = sliceProfiles ?? policy.sliceProfiles?.bind(policy);
  return {
    name,
    decide: (view, ctx) => policy.decide(view, ctx),
    ...(wakeAt ? { wakeAt: (view) => wakeAt.call(policy, view) } : {}),
    ...(explain ? { explain: (view, ctx) => explain.call(policy, view, ctx) } : {}),
    ...(policy.recutRule !== undefined ? { recutRule: policy.recutRule } : {}),
    ...(slices ? { sliceProfiles: slices } : {}),
  };
}

/**
 * The policy names in a comma-separated list, as written (trimmed). After a policy whose argument
 * is a list (PolicyArgument.list), the pieces that name no entry continue that argument
 * (`tiresias:3250,7200,migpool` is two names). Empty pieces stay, for the caller to reject.
 */
export function splitPolicyNames(list: string, entries: readonly PolicyEntry[] = POLICIES): string[] {
  const entryOf = (keyword: string) => entries.find((e) => e.name === keyword.trim().toLowerCase());
  const names: string[] = [];
  for (const piece of list.split(',').map((s) => s.trim())) {
    const last = names.at(-1);
    const colon = last?.indexOf(':') ?? -1;
    const open = last !== undefined && colon >= 0 && entryOf(last.slice(0, colon))?.argument?.list === true;
    if (open && piece !== '' && !entryOf(piece.split(':')[0] ?? '')) names[names.length - 1] = `${last},${piece}`;
    else names.push(piece);
  }
  return names;
}

/**
 * Parses a comma-separated list of policies (`exclusive,timeslice:2,static:7x1g.5gb`), each named
 * once; a list argument keeps its commas (see splitPolicyNames).
 */
export function parsePolicies(list: string, deps: PolicyDeps = {}): Policy[] {
  const names = splitPolicyNames(list);
  if (names.every((n) => n === '')) throw badInput(`no policy given: ${validList()}`);
  if (names.some((n) => n === '')) throw badInput(`'${list}' has an empty name: write e.g. exclusive,static:7x1g.5gb,migpool`);
  const twice = names.find((n, i) => names.indexOf(n) !== i);
  if (twice !== undefined) throw badInput(`'${twice}' is named twice`);
  return names.map((n) => parsePolicy(n, deps));
}

/** Alias of splitPolicyNames. */
export const splitPolicyList = splitPolicyNames;
