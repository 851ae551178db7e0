import { posix, relative, sep } from 'node:path';

/**
 * The layer rules of DESIGN.md, executable: which folder of src/ may import which, and what the
 * pure layers may not touch. eslint.config.js turns this table into lint rules (the `layers/imports`
 * rule below, and restrictions on the clock, timers and `process` in PURE folders); the cycle check
 * (scripts/check-cycles.mjs, in `npm test`) forbids loops inside a layer.
 *
 *   row        folders of src/                       may import
 *   ---------  ------------------------------------  ------------------------------------------------
 *   faces      cli/ server/                          every row below, adapters
 *   time       sim/ control/ bench/                  rows below; control/ and bench/ also adapters
 *   decisions  sched/ optimize/ burst/               rows below
 *   models     perf/ partition/                      rows below
 *   facts      mig/ jobs/                            base only
 *   base       errors.ts random.ts schema-words.ts   nothing of ours
 *              decimal-number.ts yaml-keys.ts
 *   adapters   gpu/ store/ exec/ k8s/ slurm/         decisions, models, facts, base (never time/faces)
 *
 * - Arrows point down: a folder imports its own files, the rows beneath it and base, never a row
 *   above. Sideways imports (same row, another folder) only as listed in SIDEWAYS.
 * - PURE folders (mig/ jobs/ perf/ partition/ optimize/ burst/ sched/ sim/) do no I/O: no
 *   adapters, no node:fs, node:child_process, network or OS modules, no I/O packages (value
 *   imports; `import type` is fine), no clock (Date.now, new Date(), performance), no timers, no
 *   `process`, no Math.random. Time and seeded randomness are passed in (src/random.ts).
 * - Adapters (the world behind a port) are used by control/, bench/, cli/ and server/ only.
 * - Where the folders outside DESIGN.md's picture sit, from what they import today:
 *   bench/ (runs benchmarks on real GPUs: partitions through control/apply, starts processes) is
 *   time, beside control/; k8s/ (Kubernetes API, manifests) and slurm/ (sbatch/squeue, slurm.conf)
 *   are adapters: they talk to a cluster manager and only the CLI and exec/ use them; jobs/ holds
 *   the service's job spec (a zod schema), a noun that control/, store/, server/ and k8s/ share;
 *   errors.ts (the error class), random.ts (the seeded source), schema-words.ts (schema problems
 *   in plain words, for every layer that checks a file or spec) and decimal-number.ts (the one
 *   parser of decimal numbers, for flags and for lists such as simulate --users) and yaml-keys.ts
 *   (duplicate YAML keys in linear time, for every reader of a user's YAML) are base,
 *   beneath everything.
 * - Tests (x.test.ts, and test/, bench/ outside src/) are harnesses, not layers: they may import
 *   anything (a policy's test runs it through the simulator).
 */

/** Rows of the stack, top to bottom. */
export const ROWS = [
  { row: 'faces', folders: ['cli', 'server'] },
  { row: 'time', folders: ['sim', 'control', 'bench'] },
  { row: 'decisions', folders: ['sched', 'optimize', 'burst'] },
  { row: 'models', folders: ['perf', 'partition'] },
  { row: 'facts', folders: ['mig', 'jobs'] },
];

/** Adapters: the outside world (GPUs, databases, processes, cluster managers) behind ports. */
export const ADAPTERS = ['gpu', 'store', 'exec', 'k8s', 'slurm'];

/** Files directly in src/ beneath every layer. */
export const BASE = ['errors.ts', 'random.ts', 'schema-words.ts', 'decimal-number.ts', 'yaml-keys.ts'];

/** Folders that do no I/O. */
export const PURE = ['mig', 'jobs', 'perf', 'partition', 'optimize', 'burst', 'sched', 'sim'];

/** Folders that may use adapters. */
export const ADAPTER_USERS = ['cli', 'server', 'control', 'bench'];

/** The sideways imports allowed (same row or between adapters), each with its reason. */
export const SIDEWAYS = {
  cli: { server: 'the CLI starts the HTTP server' },
  bench: { control: 'a benchmark partitions its GPUs through control/apply' },
  burst: { sched: "the burst planner's scaling model implements sched's ScalingModel" },
  sched: { optimize: "gavel's max-min fairness allocation is an LP solved by optimize/'s HiGHS model builder" },
  exec: { store: 'executors return the ProcessRef the store keeps', slurm: 'the Slurm executor drives the Slurm client' },
};

/** What each folder is, for messages. */
const ROLE = {
  cli: 'the command line',
  server: 'the HTTP API and dashboard',
  sim: 'the simulator (virtual clock, pure)',
  control: 'the service (wall clock)',
  bench: 'the benchmark runner',
  sched: 'policies are pure',
  optimize: 'the packing optimiser is pure',
  burst: 'the burst planner is pure',
  perf: 'the performance model is pure',
  partition: 'partition configs and plans are pure',
  mig: 'the GPU catalogue and geometry are pure facts',
  jobs: 'the job spec is a pure noun',
  gpu: 'the GPU adapter',
  store: 'the store adapter',
  exec: 'the executor adapter',
  k8s: 'the Kubernetes adapter',
  slurm: 'the Slurm adapter',
};

/** Modules that reach the world: a pure folder may not import their values. */
export const WORLD_MODULES = [
  'fs',
  'fs/promises',
  'child_process',
  'net',
  'http',
  'https',
  'http2',
  'dgram',
  'dns',
  'tls',
  'os',
  'process',
  'worker_threads',
  'cluster',
  'readline',
  'better-sqlite3',
  'pg',
  'fastify',
  'pino',
  'prom-client',
  '@kubernetes/client-node',
];

const rowOf = (folder) => ROWS.findIndex((r) => r.folders.includes(folder));

/** Where a module of src/ sits: its top folder, or its file name when it lies directly in src/. */
function unitOf(srcRelative) {
  return (srcRelative.split('/')[0] ?? '').replace(/\.js$/, '.ts');
}

function isKnown(unit) {
  return BASE.includes(unit) || ADAPTERS.includes(unit) || rowOf(unit) >= 0;
}

/**
 * Why `from` may not import `to` (both units of src/), or null when it may.
 * @param {string} from
 * @param {string} to
 */
export function violation(from, to) {
  if (from === to || BASE.includes(to)) return null;
  const where = `src/${from} must not import src/${to}`;
  const role = ROLE[from] ?? from;
  if (BASE.includes(from)) return `${where}: src/${from} is base, beneath every layer, and imports nothing of ours`;
  if (SIDEWAYS[from]?.[to]) return null;
  if (ADAPTERS.includes(to)) {
    if (ADAPTER_USERS.includes(from)) return null;
    if (PURE.includes(from)) return `${where}: ${role} and do no I/O; take what the adapter gives as an argument, or move the code to control/ or cli/`;
    return `${where}: adapters are used by ${ADAPTER_USERS.map((f) => `${f}/`).join(', ')} only; move what both need beneath both (or list it in SIDEWAYS in eslint/layers.js, with the reason)`;
  }
  const toRow = rowOf(to);
  if (ADAPTERS.includes(from)) {
    if (toRow >= 2) return null;
    return `${where}: ${role} sits beneath ${ROWS[toRow]?.row ?? to} (${to}/), which uses adapters; move what both need beneath both`;
  }
  const fromRow = rowOf(from);
  if (toRow > fromRow) return null;
  if (toRow === fromRow) {
    return `${where}: ${role}, and both are ${ROWS[fromRow]?.row}; move what both need beneath both (or list the import in SIDEWAYS in eslint/layers.js, with the reason)`;
  }
  return `${where}: ${role}, and ${to}/ is above it (${ROWS[toRow]?.row} over ${ROWS[fromRow]?.row}); move what both need beneath both, or pass it in`;
}

/** The part of `path` under `root/src/`, with forward slashes, or null when it lies elsewhere. */
function underSrc(root, path) {
  const rel = relative(root, path).split(sep).join('/');
  return rel.startsWith('src/') ? rel.slice('src/'.length) : null;
}

/** The ESLint rule `layers/imports`: checks every import, re-export and dynamic import of a file in src/. */
export const importsRule = {
  meta: {
    type: 'problem',
    docs: { description: 'imports between the layers of src/ (see eslint/layers.js)' },
    schema: [],
  },
  create(context) {
    const root = context.cwd;
    const file = underSrc(root, context.filename);
    if (file === null || /\.test\.ts$/.test(file)) return {};
    const from = unitOf(file);
    if (!isKnown(from)) {
      return {
        Program(node) {
          context.report({ node, message: `src/${from} is in no layer: add it to the table in eslint/layers.js (and DESIGN.md)` });
        },
      };
    }
    const check = (node, source, typeOnly) => {
      if (typeof source !== 'string') return;
      if (!source.startsWith('.')) {
        const bare = source.replace(/^node:/, '');
        if (PURE.includes(from) && !typeOnly && WORLD_MODULES.includes(bare)) {
          context.report({ node, message: `src/${from} must not import '${source}': ${ROLE[from] ?? from} and do no I/O; do it in control/, cli/ or an adapter and pass the data in` });
        }
        return;
      }
      const target = posix.join(posix.dirname(file), source);
      if (target.startsWith('../')) return; // outside src/: test helpers, package data
      const to = unitOf(target);
      const message = isKnown(to) ? violation(from, to) : `src/${to} is in no layer: add it to the table in eslint/layers.js (and DESIGN.md)`;
      if (message !== null) context.report({ node, message });
    };
    const typeOnly = (node) => node.importKind === 'type' || node.exportKind === 'type' || (node.specifiers?.length > 0 && node.specifiers.every((s) => s.importKind === 'type'));
    return {
      ImportDeclaration: (node) => check(node, node.source.value, typeOnly(node)),
      ExportNamedDeclaration: (node) => node.source && check(node, node.source.value, typeOnly(node)),
      ExportAllDeclaration: (node) => check(node, node.source.value, node.exportKind === 'type'),
      ImportExpression: (node) => node.source.type === 'Literal' && check(node, node.source.value, false),
    };
  },
};

/** Globals a PURE folder must not read: the clock, timers and the process (ESLint's no-restricted-globals). */
export const PURE_RESTRICTED_GLOBALS = ['process', 'performance', 'setTimeout', 'setInterval', 'setImmediate', 'fetch'].map((name) => ({
  name,
  message: `pure layers (${PURE.join(', ')}) never read the clock, set timers or touch the process: take time and settings as arguments (see eslint/layers.js)`,
}));
