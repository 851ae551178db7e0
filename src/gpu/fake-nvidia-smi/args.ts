/**
 * The command lines the fake `nvidia-smi` understands, parsed into one command. Options take
 * their value as the next argument or after `=` (`-i 0`, `--id=0`, `--query-gpu=index,name`).
 */

/** `--format=csv[,noheader][,nounits]`. */
export interface CsvOptions {
  noheader: boolean;
  nounits: boolean;
}

export type MigAction = 'lgip' | 'lgipp' | 'lgi' | 'lci' | 'lcip' | 'cgi' | 'cci' | 'dci' | 'dgi';

export type FakeCommand =
  | { kind: 'list' }
  | { kind: 'query-gpu'; fields: string[]; format: CsvOptions }
  | { kind: 'query-apps'; fields: string[]; format: CsvOptions }
  | { kind: 'xml' }
  | { kind: 'mig-mode'; enable: boolean }
  | { kind: 'reset' }
  | {
      kind: 'mig';
      action: MigAction;
      /** `-cgi` profile tuples as written: `9`, `3g.20gb`, `19:3`. */
      tuples: string[];
      /** `-cci` profiles; empty for the default profile. */
      ciProfiles: string[];
      /** `-C` with `-cgi`. */
      withDefaultCi: boolean;
      gpuInstances: number[] | null;
      computeInstances: number[] | null;
    };

export interface ParsedArgs {
  /** The `-i` selection as written (`0`, `0,1`, `GPU-...`), null for every GPU. */
  select: string | null;
  command: FakeCommand;
}

/** Why a command line was refused: printed as nvidia-smi's usage error. */
export class UsageError extends Error {}

const TOP_FLAGS: Readonly<Record<string, string>> = {
  '-i': 'id',
  '--id': 'id',
  '-L': 'list',
  '--list-gpus': 'list',
  '-q': 'query',
  '--query': 'query',
  '-x': 'xml',
  '--xml-format': 'xml',
  '--query-gpu': 'query-gpu',
  '--query-compute-apps': 'query-apps',
  '--format': 'format',
  '-mig': 'mig-mode',
  '--multi-instance-gpu': 'mig-mode',
  '-r': 'reset',
  '--gpu-reset': 'reset',
};
const TOP_VALUED = new Set(['id', 'query-gpu', 'query-apps', 'format', 'mig-mode']);

const MIG_FLAGS: Readonly<Record<string, string>> = {
  '-i': 'id',
  '--id': 'id',
  '-lgip': 'lgip',
  '--list-gpu-instance-profiles': 'lgip',
  '-lgipp': 'lgipp',
  '--list-gpu-instance-possible-placements': 'lgipp',
  '-lgi': 'lgi',
  '--list-gpu-instances': 'lgi',
  '-lci': 'lci',
  '--list-compute-instances': 'lci',
  '-lcip': 'lcip',
  '--list-compute-instance-profiles': 'lcip',
  '-cgi': 'cgi',
  '--create-gpu-instance': 'cgi',
  '-C': 'C',
  '--default-compute-instance': 'C',
  '-cci': 'cci',
  '--create-compute-instance': 'cci',
  '-dci': 'dci',
  '--destroy-compute-instance': 'dci',
  '-dgi': 'dgi',
  '--destroy-gpu-instance': 'dgi',
  '-gi': 'gi',
  '--gpu-instance-id': 'gi',
  '-ci': 'ci',
  '--compute-instance-id': 'ci',
};
const MIG_VALUED = new Set(['id', 'cgi', 'gi', 'ci']);
const MIG_ACTIONS = new Set<string>(['lgip', 'lgipp', 'lgi', 'lci', 'lcip', 'cgi', 'cci', 'dci', 'dgi']);

/** Splits argv into (flag key, value) pairs; `optional` keys take a value only if one follows. */
function scan(argv: readonly string[], flags: Readonly<Record<string, string>>, valued: ReadonlySet<string>, optional: ReadonlySet<string>): Map<string, string | null> {
  const seen = new Map<string, string | null>();
  for (let k = 0; k < argv.length; k++) {
    const arg = argv[k] ?? '';
    const eq = arg.startsWith('--') || /^-[a-zA-Z]+=/.test(arg) ? arg.indexOf('=') : -1;
    const name = eq > 0 ? arg.slice(0, eq) : arg;
    const key = flags[name];
    if (key === undefined) throw new UsageError(`unknown option '${arg}'`);
    if (seen.has(key)) throw new UsageError(`option '${name}' given twice`);
    let value: string | null = null;
    if (eq > 0) value = arg.slice(eq + 1);
    else if (valued.has(key)) {
      const next = argv[k + 1];
      if (next === undefined) throw new UsageError(`option '${name}' needs a value`);
      value = next;
      k++;
    } else if (optional.has(key)) {
      const next = argv[k + 1];
      if (next !== undefined && !next.startsWith('-')) {
        value = next;
        k++;
      }
    }
    if (value !== null && !valued.has(key) && !optional.has(key)) throw new UsageError(`option '${name}' takes no value`);
    seen.set(key, value);
  }
  return seen;
}

function list(text: string): string[] {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

function ids(text: string, what: string): number[] {
  const out = list(text).map(Number);
  if (out.length === 0 || out.some((n) => !Number.isInteger(n) || n < 0)) throw new UsageError(`bad ${what} list '${text}'`);
  return out;
}

function csvFormat(text: string | null | undefined): CsvOptions {
  if (text === null || text === undefined) throw new UsageError('--format=csv is required with --query-*');
  const parts = list(text);
  if (!parts.includes('csv') || parts.some((p) => !['csv', 'noheader', 'nounits'].includes(p))) throw new UsageError(`bad --format '${text}'`);
  return { noheader: parts.includes('noheader'), nounits: parts.includes('nounits') };
}

function parseMig(argv: readonly string[]): ParsedArgs {
  const seen = scan(argv, MIG_FLAGS, MIG_VALUED, new Set(['cci']));
  const actions = [...seen.keys()].filter((k) => MIG_ACTIONS.has(k));
  const [action] = actions;
  if (actions.length !== 1 || action === undefined) throw new UsageError('nvidia-smi mig needs exactly one of -lgip, -lgipp, -lgi, -lci, -lcip, -cgi, -cci, -dci, -dgi');
  if (seen.has('C') && action !== 'cgi') throw new UsageError('-C goes with -cgi');
  const cgi = seen.get('cgi');
  const cci = seen.get('cci');
  const gi = seen.get('gi');
  const ci = seen.get('ci');
  return {
    select: seen.get('id') ?? null,
    command: {
      kind: 'mig',
      action: action as MigAction,
      tuples: cgi ? list(cgi) : [],
      ciProfiles: cci ? list(cci) : [],
      withDefaultCi: seen.has('C'),
      gpuInstances: gi === undefined || gi === null ? null : ids(gi, 'GPU instance ID'),
      computeInstances: ci === undefined || ci === null ? null : ids(ci, 'compute instance ID'),
    },
  };
}

/**
 * Parses the arguments of the fake nvidia-smi.
 *
 * @throws UsageError for an unknown option, a missing value or a combination it does not support
 */
export function parseArgs(argv: readonly string[]): ParsedArgs {
  if (argv[0] === 'mig') return parseMig(argv.slice(1));
  const seen = scan(argv, TOP_FLAGS, TOP_VALUED, new Set());
  const select = seen.get('id') ?? null;
  const has = (k: string): boolean => seen.has(k);
  const chosen = ['list', 'query', 'query-gpu', 'query-apps', 'mig-mode', 'reset'].filter(has);
  if (chosen.length !== 1) throw new UsageError('give one of -L, -q -x, --query-gpu, --query-compute-apps, -mig, -r or the mig subcommand');
  if (has('xml') && !has('query')) throw new UsageError('-x goes with -q');
  if (has('format') && !has('query-gpu') && !has('query-apps')) throw new UsageError('--format goes with --query-*');
  const fields = (k: string): string[] => {
    const f = list(seen.get(k) ?? '');
    if (f.length === 0) throw new UsageError(`--${k} needs fields`);
    return f;
  };
  switch (chosen[0]) {
    case 'list':
      return { select, command: { kind: 'list' } };
    case 'query':
      if (!has('xml')) throw new UsageError('only -q -x (XML) is simulated');
      return { select, command: { kind: 'xml' } };
    case 'query-gpu':
      return { select, command: { kind: 'query-gpu', fields: fields('query-gpu'), format: csvFormat(seen.get('format')) } };
    case 'query-apps':
      return { select, command: { kind: 'query-apps', fields: fields('query-apps'), format: csvFormat(seen.get('format')) } };
    case 'mig-mode': {
      const v = seen.get('mig-mode');
      if (v !== '0' && v !== '1') throw new UsageError(`-mig takes 0 or 1, not '${v}'`);
      return { select, command: { kind: 'mig-mode', enable: v === '1' } };
    }
    default:
      return { select, command: { kind: 'reset' } };
  }
}
