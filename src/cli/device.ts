import { homedir } from 'node:os';
import { join } from 'node:path';
import { badInput } from '../errors.js';
import { NvidiaSmiPort } from '../gpu/nvidia-smi/driver.js';
import type { GpuPort } from '../gpu/port.js';
import { FileSimulatedGpuPort } from '../gpu/simulated/file-port.js';
import { SimulatedMachine } from '../gpu/simulated/machine.js';
import { parseSimulateSpec } from '../gpu/simulated/spec.js';
import { loadMachine, saveMachine } from '../gpu/simulated/state-file.js';
import { withStateLock } from '../gpu/simulated/state-lock.js';

/** The options every device command takes. */
export interface DeviceOptions {
  simulate?: string;
  stateDir?: string;
}

/** Where simulated machines live: --state-dir, $MIGPOOL_STATE_DIR, else ~/.local/state/migpool. */
export function stateDirOf(opts: DeviceOptions, env: NodeJS.ProcessEnv = process.env): string {
  return opts.stateDir ?? env['MIGPOOL_STATE_DIR'] ?? join(env['XDG_STATE_HOME'] ?? join(homedir(), '.local', 'state'), 'migpool');
}

/** The state file of the simulated machine. */
export function simulatorStatePath(opts: DeviceOptions, env: NodeJS.ProcessEnv = process.env): string {
  return join(stateDirOf(opts, env), 'simulated-machine.json');
}

/** The --simulate spec in force: the flag, else $MIGPOOL_SIMULATE, else none (real GPUs). */
export function simulateSpecOf(opts: DeviceOptions, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const spec = opts.simulate ?? env['MIGPOOL_SIMULATE'];
  return spec === undefined || spec.trim() === '' ? undefined : spec.trim();
}

/** Normal form of a spec for comparing machines: `2xA30,1xH100-80GB`, upper case. */
function specKey(spec: string): string {
  return parseSimulateSpec(spec)
    .map((k) => `${k.model.name}/${k.productName}`)
    .join(',');
}

/** Creates (or replaces) the simulated machine of `spec` and saves it (holding the state file's lock). */
export function resetSimulator(spec: string, path: string, seed = 1): SimulatedMachine {
  const machine = SimulatedMachine.create(parseSimulateSpec(spec), seed, spec);
  withStateLock(path, () => saveMachine(path, machine));
  return machine;
}

/**
 * Opens the GPUs a device command works on: the simulated machine of --simulate (kept in the state
 * directory so that successive commands see the same box; each change is made on the file's latest
 * state under its lock, so that `migpool sim attach` and others at the same time are kept), or the
 * real GPUs through nvidia-smi.
 */
export function openGpuPort(opts: DeviceOptions, env: NodeJS.ProcessEnv = process.env): GpuPort {
  const spec = simulateSpecOf(opts, env);
  if (spec === undefined) return new NvidiaSmiPort();
  const path = simulatorStatePath(opts, env);
  const machine = withStateLock(path, () => loadMachine(path) ?? resetSimulator(spec, path));
  if (machine.state.spec !== undefined && specKey(machine.state.spec) !== specKey(spec)) {
    throw badInput(
      `the simulated machine in ${path} is ${machine.state.spec}, not ${spec}: run 'migpool sim reset --simulate ${spec}' to replace it, or pass another --state-dir`,
    );
  }
  return new FileSimulatedGpuPort(path, machine);
}
