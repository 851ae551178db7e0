/**
 * The fake `nvidia-smi`: runs one command line against a simulated machine kept in a state file
 * (`MIGPOOL_FAKE_NVIDIA_SMI_STATE`) and prints what the real tool prints. Successes go to stdout
 * and failures ("Unable to ...", blocked resets, usage errors) to stderr, as nvidia-smi does;
 * "No ... found" answers of listings go to stdout with a non-zero status.
 */
import { ciProfilesOf } from '../../mig/compute-instances.js';
import { normalizeProfileName } from '../../mig/catalog/index.js';
import { GpuError, type GpuErrorKind } from '../port.js';
import type { SimulatedMachine } from '../simulated/machine.js';
import { loadMachine, saveMachine } from '../simulated/state-file.js';
import { withStateLock } from '../simulated/state-lock.js';
import { parseArgs, UsageError, type FakeCommand } from './args.js';
import {
  createCiFailure,
  createdCiLine,
  createdGiLine,
  createGiFailure,
  ctime,
  destroyCiFailure,
  destroyedCiLine,
  destroyedGiLine,
  destroyGiFailure,
  DRIVER_NOT_LOADED,
  exitCodeFor,
  formatLci,
  formatLcip,
  formatLgi,
  formatLgip,
  formatLgipp,
  formatListGpus,
  formatQueryComputeApps,
  formatQueryGpu,
  formatXml,
  INVALID_ARGUMENTS,
  migEnabled,
  migModeFailureLine,
  migModePendingLines,
  migModeSetLine,
  NO_COMPUTE_INSTANCES,
  NO_DEVICES,
  NO_GPU_INSTANCES,
  NO_MIG_DEVICES,
  pendingWarning,
  reasonText,
  resetBlockedLines,
  resetLine,
  resetNotSupportedLine,
} from './format.js';

/** The environment variable naming the simulator state file. */
export const STATE_ENV = 'MIGPOOL_FAKE_NVIDIA_SMI_STATE';

/** What one run of the fake printed and how it exited. */
export interface FakeResult {
  stdout: string;
  stderr: string;
  code: number;
}

/** Output being built by a command. */
class Output {
  readonly out: string[] = [];
  readonly err: string[] = [];
  code = 0;

  fail(code: number, ...lines: string[]): void {
    this.err.push(...lines);
    if (this.code === 0) this.code = code;
  }

  result(): FakeResult {
    const text = (l: string[]): string => (l.length === 0 ? '' : `${l.join('\n')}\n`);
    return { stdout: text(this.out), stderr: text(this.err), code: this.code };
  }
}

function text(stdout: string, code: number, stderr = ''): FakeResult {
  return { stdout: stdout === '' || stdout.endsWith('\n') ? stdout : `${stdout}\n`, stderr, code };
}

/** `-i` as nvidia-smi takes it: indexes, GPU UUIDs or PCI bus IDs, comma-separated. */
function selectGpus(machine: SimulatedMachine, select: string | null): number[] | null {
  const gpus = machine.listGpus();
  if (select === null) return gpus.map((g) => g.index);
  const out: number[] = [];
  for (const token of select.split(',').map((s) => s.trim())) {
    const hit = /^\d+$/.test(token)
      ? gpus.find((g) => g.index === Number(token))
      : gpus.find((g) => g.uuid.toLowerCase() === token.toLowerCase() || g.busId.toLowerCase() === token.toLowerCase() || g.busId.toLowerCase().endsWith(`:${token.toLowerCase()}`));
    if (!hit) return null;
    if (!out.includes(hit.index)) out.push(hit.index);
  }
  return out;
}

function kindOf(e: unknown): GpuErrorKind {
  if (e instanceof GpuError) return e.kind;
  throw e;
}

function busOf(machine: SimulatedMachine, gpu: number): string {
  return machine.listGpus()[gpu]?.busId ?? '';
}

/** The failure lines of `kind` in the command's shape, with the pending warning where it applies. */
function failWith(o: Output, machine: SimulatedMachine, gpu: number, kind: GpuErrorKind, shaped: string[]): void {
  if (kind === 'driver-not-loaded') {
    o.fail(9, DRIVER_NOT_LOADED);
    return;
  }
  const pending = machine.listGpus()[gpu]?.migMode?.pending === 'enabled';
  const before = kind === 'mode-change-pending' ? pendingWarning(busOf(machine, gpu), pending) : [];
  o.fail(exitCodeFor(kind), ...before, ...shaped);
}

/** The ID nvidia-smi names in a failure: the profile's ID where the name is known, else as typed. */
function giProfileLabel(machine: SimulatedMachine, gpu: number, token: string): string {
  const want = normalizeProfileName(token);
  if (/^\d+$/.test(want)) return want;
  const p = machine.modelOf(gpu).giProfiles.find((q) => q.name === want);
  return p?.id === undefined || p.id === null ? token : String(p.id);
}

function ciProfileLabel(machine: SimulatedMachine, gpu: number, gi: number, token: string | undefined): string {
  const giInfo = machine.listGpuInstances(gpu).find((i) => i.id === gi);
  const giProfile = giInfo ? machine.modelOf(gpu).giProfiles.find((p) => p.name === giInfo.profile) : undefined;
  const options = giProfile ? ciProfilesOf(giProfile) : [];
  if (token === undefined) return String(options.find((o) => o.isDefault)?.id ?? '');
  const want = normalizeProfileName(token);
  if (/^\d+$/.test(want)) return want;
  return String(options.find((o) => o.name === want)?.id ?? token);
}

/** `mig -cgi <tuples> [-C]`: stops at the first failure, keeping what it created before. */
function createGpuInstances(o: Output, machine: SimulatedMachine, gpus: number[], tuples: string[], withCi: boolean): void {
  for (const gpu of gpus) {
    for (const tuple of tuples) {
      const [profile = '', at] = tuple.split(':');
      const label = giProfileLabel(machine, gpu, profile);
      const start = at === undefined ? undefined : Number(at);
      if (start !== undefined && (!Number.isInteger(start) || start < 0 || at === '')) {
        failWith(o, machine, gpu, 'invalid-argument', createGiFailure(gpu, label, 'invalid-argument'));
        return;
      }
      let gi;
      try {
        gi = machine.createGpuInstance(gpu, profile, start);
      } catch (e) {
        const kind = kindOf(e);
        failWith(o, machine, gpu, kind, createGiFailure(gpu, label, kind));
        return;
      }
      o.out.push(createdGiLine(gpu, gi.id, gi.profile, gi.profileId));
      if (!withCi) continue;
      try {
        const ci = machine.createComputeInstance(gpu, gi.id);
        o.out.push(createdCiLine(gpu, gi.id, ci.id, ci.profile, ci.profileId));
      } catch (e) {
        const kind = kindOf(e);
        failWith(o, machine, gpu, kind, createCiFailure(gpu, gi.id, ciProfileLabel(machine, gpu, gi.id, undefined), kind));
        return;
      }
    }
  }
}

/** `mig [-gi IDs] -cci [profiles]`: every listed (or every) GI of each GPU. */
function createComputeInstances(o: Output, machine: SimulatedMachine, gpus: number[], gis: number[] | null, profiles: string[]): void {
  const targets = gpus.flatMap((gpu) => (gis ?? machine.listGpuInstances(gpu).map((i) => i.id)).map((gi) => ({ gpu, gi })));
  if (targets.length === 0) {
    o.out.push(NO_GPU_INSTANCES);
    o.code = 6;
    return;
  }
  const wanted: Array<string | undefined> = profiles.length === 0 ? [undefined] : profiles;
  for (const { gpu, gi } of targets) {
    for (const profile of wanted) {
      try {
        const ci = machine.createComputeInstance(gpu, gi, profile);
        o.out.push(createdCiLine(gpu, gi, ci.id, ci.profile, ci.profileId));
      } catch (e) {
        const kind = kindOf(e);
        failWith(o, machine, gpu, kind, createCiFailure(gpu, gi, ciProfileLabel(machine, gpu, gi, profile), kind));
        return;
      }
    }
  }
}

function destroyComputeInstances(o: Output, machine: SimulatedMachine, gpus: number[], gis: number[] | null, cis: number[] | null): void {
  const victims = gpus.flatMap((gpu) =>
    machine
      .listComputeInstances(gpu)
      .filter((c) => (gis === null || gis.includes(c.gpuInstanceId)) && (cis === null || cis.includes(c.id)))
      .sort((a, b) => a.gpuInstanceId - b.gpuInstanceId || a.id - b.id),
  );
  if (victims.length === 0) {
    o.out.push(NO_COMPUTE_INSTANCES);
    o.code = 6;
    return;
  }
  for (const c of victims) {
    try {
      machine.destroyComputeInstance(c.gpu, c.gpuInstanceId, c.id);
      o.out.push(destroyedCiLine(c.gpu, c.gpuInstanceId, c.id));
    } catch (e) {
      const kind = kindOf(e);
      failWith(o, machine, c.gpu, kind, destroyCiFailure(c.gpu, c.gpuInstanceId, c.id, kind));
      return;
    }
  }
}

function destroyGpuInstances(o: Output, machine: SimulatedMachine, gpus: number[], gis: number[] | null): void {
  const victims = gpus.flatMap((gpu) => machine.listGpuInstances(gpu).filter((i) => gis === null || gis.includes(i.id)));
  if (victims.length === 0) {
    o.out.push(NO_GPU_INSTANCES);
    o.code = 6;
    return;
  }
  for (const gi of victims) {
    try {
      machine.destroyGpuInstance(gi.gpu, gi.id);
      o.out.push(destroyedGiLine(gi.gpu, gi.id));
    } catch (e) {
      const kind = kindOf(e);
      failWith(o, machine, gi.gpu, kind, destroyGiFailure(gi.gpu, gi.id, kind));
      return;
    }
  }
}

function listing(o: Output, body: string, empty: string): void {
  if (body === '') {
    o.out.push(empty);
    o.code = 6;
  } else o.out.push(body.replace(/\n$/, ''));
}

function runMig(o: Output, machine: SimulatedMachine, gpus: number[], explicit: boolean, c: Extract<FakeCommand, { kind: 'mig' }>): void {
  const enabled = migEnabled(machine, gpus);
  // Creating on a GPU named with -i lets the simulator say why it cannot (MIG off, pending).
  const creating = c.action === 'cgi' || c.action === 'cci';
  const targets = creating && explicit ? gpus : enabled;
  if (targets.length === 0) {
    o.out.push(NO_MIG_DEVICES);
    o.code = 6;
    return;
  }
  switch (c.action) {
    case 'lgip':
      o.out.push(formatLgip(machine, targets).replace(/\n$/, ''));
      return;
    case 'lgipp':
      o.out.push(formatLgipp(machine, targets).replace(/\n$/, ''));
      return;
    case 'lgi':
      listing(o, formatLgi(machine, targets), NO_GPU_INSTANCES);
      return;
    case 'lci':
      listing(o, formatLci(machine, targets, c.gpuInstances ?? undefined, c.computeInstances ?? undefined), NO_COMPUTE_INSTANCES);
      return;
    case 'lcip':
      listing(o, formatLcip(machine, targets, c.gpuInstances ?? undefined), NO_GPU_INSTANCES);
      return;
    case 'cgi':
      if (c.tuples.length === 0) throw new UsageError('-cgi needs profile tuples');
      createGpuInstances(o, machine, targets, c.tuples, c.withDefaultCi);
      return;
    case 'cci':
      createComputeInstances(o, machine, targets, c.gpuInstances, c.ciProfiles);
      return;
    case 'dci':
      destroyComputeInstances(o, machine, targets, c.gpuInstances, c.computeInstances);
      return;
    case 'dgi':
      destroyGpuInstances(o, machine, targets, c.gpuInstances);
      return;
  }
}

function setMigMode(o: Output, machine: SimulatedMachine, gpus: number[], enable: boolean): void {
  for (const gpu of gpus) {
    const bus = busOf(machine, gpu);
    try {
      const r = machine.setMigMode(gpu, enable);
      if (r.pending && r.reason !== null) o.out.push(...migModePendingLines(bus, enable, r.reason));
      else o.out.push(migModeSetLine(bus, enable));
    } catch (e) {
      const kind = kindOf(e);
      if (kind === 'driver-not-loaded') o.fail(9, DRIVER_NOT_LOADED);
      else o.fail(exitCodeFor(kind), migModeFailureLine(bus, enable, kind));
    }
  }
  o.out.push('All done.');
}

function reset(o: Output, machine: SimulatedMachine, gpus: number[]): void {
  const blocked: Array<{ busId: string; kind: GpuErrorKind }> = [];
  for (const gpu of gpus) {
    const bus = busOf(machine, gpu);
    try {
      machine.resetGpu(gpu);
      o.out.push(resetLine(bus));
    } catch (e) {
      const kind = kindOf(e);
      if (kind === 'reset-blocked' || kind === 'in-use') blocked.push({ busId: bus, kind });
      else if (kind === 'not-supported') o.fail(3, resetNotSupportedLine(bus));
      else if (kind === 'driver-not-loaded') o.fail(9, DRIVER_NOT_LOADED);
      else o.fail(exitCodeFor(kind), `Unable to reset GPU ${bus}: ${reasonText(kind)}`);
    }
  }
  if (blocked.length > 0) o.fail(255, ...resetBlockedLines(blocked));
}

function run(machine: SimulatedMachine, command: FakeCommand, gpus: number[], explicit: boolean, now: () => Date): FakeResult {
  const o = new Output();
  switch (command.kind) {
    case 'list':
      o.out.push(formatListGpus(machine, gpus).replace(/\n$/, ''));
      break;
    case 'xml':
      o.out.push(formatXml(machine, gpus, ctime(now())).replace(/\n$/, ''));
      break;
    case 'query-gpu':
    case 'query-apps': {
      const r = command.kind === 'query-gpu' ? formatQueryGpu(machine, gpus, command.fields, command.format) : formatQueryComputeApps(machine, gpus, command.fields, command.format);
      if ('unknownField' in r) o.fail(2, `Field "${r.unknownField}" is not a valid field to query.`);
      else if (r.text !== '') o.out.push(r.text.replace(/\n$/, ''));
      break;
    }
    case 'mig-mode':
      setMigMode(o, machine, gpus, command.enable);
      break;
    case 'reset':
      reset(o, machine, gpus);
      break;
    case 'mig':
      runMig(o, machine, gpus, explicit, command);
      break;
  }
  return o.result();
}

/**
 * Adds what nvidia-smi says of single GPUs beside its answer: a lost GPU's "Unable to determine
 * the device handle" line on stderr (the form of an 8-GPU capture, index then bus with a 4-digit
 * domain: fixture rtx-3080-8gpu_query-gpu-one-lost) and exit status 15, a corrupted infoROM's
 * warning after the answer and exit status 14 (fixture p100-pcie_infoROM-corrupted-exit-14; the
 * statuses are nvidia-smi's RETURN VALUE list quoted there). The warning goes to stdout, as that
 * capture shows it inline after the table (public scripts also meet it on stderr; the adapter
 * reads both), the harder case for a parser. A failure's own status is kept.
 */
function withNotices(machine: SimulatedMachine, gpus: readonly number[], result: FakeResult): FakeResult {
  const lost = gpus.filter((g) => machine.isLost(g));
  const corrupted = gpus.filter((g) => !machine.isLost(g) && machine.state.gpus[g]?.infoRomCorrupted === true);
  if (lost.length === 0 && corrupted.length === 0) return result;
  const bus = (g: number): string => busOf(machine, g).replace(/^0000(?=[0-9A-Fa-f]{4}:)/, '');
  const lostLines = lost.map((g) => `Unable to determine the device handle for GPU${g}: ${bus(g)}: Unknown Error\n`).join('');
  const warnings = corrupted.map((g) => `WARNING: infoROM is corrupted at gpu ${bus(g)}\n`).join('');
  return { stdout: result.stdout + warnings, stderr: lostLines + result.stderr, code: result.code !== 0 ? result.code : lost.length > 0 ? 15 : 14 };
}

/**
 * Runs the fake nvidia-smi once: `argv` without the program name, `env` for the state file.
 * Saves the machine back when the command changed it (a consumed injected fault counts).
 */
export function runFakeNvidiaSmi(argv: string[], env: Record<string, string | undefined>, now: () => Date = () => new Date()): FakeResult {
  const path = env[STATE_ENV];
  if (path === undefined || path === '') {
    return text('', 255, `fake nvidia-smi: ${STATE_ENV} is not set; point it at a simulator state file (SimulatedMachine + saveMachine write one)\n`);
  }
  let parsed;
  try {
    parsed = parseArgs(argv);
  } catch (e) {
    if (e instanceof UsageError) return text('', 2, `${INVALID_ARGUMENTS}\n`);
    throw e;
  }
  const command = parsed;
  try {
    // Read, change and write under the state file's lock: `migpool sim attach`, an apply or the
    // service may change the machine at the same moment. A job's user that may only read the
    // state directory still gets its queries answered.
    return withStateLock(path, () => {
      const machine = loadMachine(path);
      if (machine === null) return text(DRIVER_NOT_LOADED, 9);
      const gpus = selectGpus(machine, command.select);
      if (gpus === null || gpus.length === 0) return text(NO_DEVICES, 6);
      const before = JSON.stringify(machine.state);
      // GPUs that fell off the bus are left out, each named in a line of its own on stderr.
      const reached = gpus.filter((g) => !machine.isLost(g));
      let result: FakeResult;
      try {
        result = reached.length > 0 ? run(machine, command.command, reached, command.select !== null, now) : text('', 0);
      } catch (e) {
        if (e instanceof UsageError) return text('', 2, `${INVALID_ARGUMENTS}\n`);
        throw e;
      }
      if (JSON.stringify(machine.state) !== before) saveMachine(path, machine);
      return withNotices(machine, gpus, result);
    }, { readOnlyOk: true });
  } catch (e) {
    return text('', 255, `fake nvidia-smi: ${e instanceof Error ? e.message : String(e)}\n`);
  }
}

/** Entry point of `bin/fake-nvidia-smi.js` and installed launchers: runs, prints, returns the status. */
export function main(argv: string[] = process.argv.slice(2), env: Record<string, string | undefined> = process.env): number {
  const r = runFakeNvidiaSmi(argv, env);
  process.stdout.write(r.stdout);
  process.stderr.write(r.stderr);
  return r.code;
}
