/**
 * The shape check of a simulated machine's state (the JSON of its state file): a file truncated
 * or edited by hand must be refused in one line naming the field, not met later as a TypeError
 * deep in the simulator.
 */

type Check = (value: unknown, at: string) => string | null;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const wholeNumber =
  (min: number): Check =>
  (v, at) =>
    typeof v === 'number' && Number.isSafeInteger(v) && v >= min ? null : `${at}: expected a whole number of at least ${min}, got ${shown(v)}`;

const amount: Check = (v, at) => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? null : `${at}: expected a number of at least 0, got ${shown(v)}`);

const text: Check = (v, at) => (typeof v === 'string' ? null : `${at}: expected a string, got ${shown(v)}`);

const oneOf =
  (values: readonly string[]): Check =>
  (v, at) =>
    typeof v === 'string' && values.includes(v) ? null : `${at}: expected one of ${values.join(', ')}, got ${shown(v)}`;

const orNull =
  (check: Check): Check =>
  (v, at) =>
    v === null ? null : check(v, at);

const optional =
  (check: Check): Check =>
  (v, at) =>
    v === undefined ? null : check(v, at);

function record(fields: Readonly<Record<string, Check>>): Check {
  return (v, at) => {
    if (!isObject(v)) return `${at}: expected an object, got ${shown(v)}`;
    for (const [name, check] of Object.entries(fields)) {
      const problem = check(v[name], `${at}.${name}`);
      if (problem !== null) return problem;
    }
    return null;
  };
}

function list(item: Check): Check {
  return (v, at) => {
    if (!Array.isArray(v)) return `${at}: expected a list, got ${shown(v)}`;
    for (const [i, x] of v.entries()) {
      const problem = item(x, `${at}[${i}]`);
      if (problem !== null) return problem;
    }
    return null;
  };
}

/** A value as a message shows it: short, one line. */
function shown(v: unknown): string {
  if (v === undefined) return 'nothing';
  const s = JSON.stringify(v);
  return s.length > 40 ? `${s.slice(0, 37)}...` : s;
}

const oneOfBooleans: Check = (v, at) => (typeof v === 'boolean' ? null : `${at}: expected true or false, got ${shown(v)}`);

const MIG_MODES = ['enabled', 'disabled'] as const;
const OPERATIONS = ['setMigMode', 'resetGpu', 'createGpuInstance', 'createComputeInstance', 'destroyComputeInstance', 'destroyGpuInstance'] as const;

const computeInstance = record({ id: wholeNumber(0), profile: text, profileId: wholeNumber(0), start: wholeNumber(0), size: wholeNumber(1), uuid: text });
const gpuInstance = record({ id: wholeNumber(0), profile: text, profileId: wholeNumber(0), start: wholeNumber(0), size: wholeNumber(1), computeInstances: list(computeInstance) });
const process = record({ pid: wholeNumber(1), name: text, gpuInstanceId: orNull(wholeNumber(0)), computeInstanceId: orNull(wholeNumber(0)), usedMemoryMiB: amount });
const gpu = record({
  index: wholeNumber(0),
  family: text,
  name: text,
  pciDeviceId: text,
  busId: text,
  uuid: text,
  memoryMiB: amount,
  migMode: record({ current: oneOf(MIG_MODES), pending: oneOf(MIG_MODES) }),
  gpuInstances: list(gpuInstance),
  processes: list(process),
  lost: optional(oneOfBooleans),
  infoRomCorrupted: optional(oneOfBooleans),
});
const fault = record({ operation: oneOf(OPERATIONS), gpu: optional(wholeNumber(0)), kind: text, message: optional(text) });
const state = record({ spec: optional(text), seed: wholeNumber(0), counter: wholeNumber(0), nextPid: wholeNumber(1), gpus: list(gpu), faults: list(fault) });

/**
 * The first problem with a simulated machine's state, as `gpus[0].processes: expected a list,
 * got null`, or null when every field the simulator reads has its type (and GPU `i` has index `i`,
 * as the simulator looks GPUs up by position).
 */
export function simStateProblem(value: unknown): string | null {
  const problem = state(value, 'state');
  if (problem !== null) return problem.replace(/^state\./, '');
  const gpus = (value as { gpus: { index: number }[] }).gpus;
  const misplaced = gpus.findIndex((g, i) => g.index !== i);
  return misplaced < 0 ? null : `gpus[${misplaced}].index: expected ${misplaced} (GPUs are listed in index order), got ${gpus[misplaced]?.index}`;
}
