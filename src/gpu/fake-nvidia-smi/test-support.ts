/**
 * Helpers for the fake nvidia-smi's tests (and for other suites that drive it): a machine with
 * MIG on, a temporary state file, and a runner bound to it.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SimulatedMachine } from '../simulated/machine.js';
import { parseSimulateSpec } from '../simulated/spec.js';
import { loadMachine, saveMachine } from '../simulated/state-file.js';
import { runFakeNvidiaSmi, STATE_ENV, type FakeResult } from './main.js';

/** A machine of `spec` (`2xA100-SXM4-40GB`) with MIG mode on (and applied) on the listed GPUs. */
export function machineWithMig(spec: string, migOn: readonly number[] | 'all' = 'all', seed = 1): SimulatedMachine {
  const m = SimulatedMachine.create(parseSimulateSpec(spec), seed);
  const gpus = migOn === 'all' ? m.listGpus().map((g) => g.index) : migOn;
  for (const g of gpus) {
    m.setMigMode(g, true);
    m.resetGpu(g);
  }
  return m;
}

/** A fake nvidia-smi bound to a fresh temporary state file holding `machine`. */
export interface FakeSession {
  readonly path: string;
  readonly env: Record<string, string>;
  /** Runs one command line; the timestamp of `-q -x` is fixed. */
  run(...argv: string[]): FakeResult;
  /** The machine as the state file holds it now. */
  machine(): SimulatedMachine;
}

export function fakeSession(machine: SimulatedMachine): FakeSession {
  const path = join(mkdtempSync(join(tmpdir(), 'fake-nvidia-smi-')), 'state.json');
  saveMachine(path, machine);
  const env = { [STATE_ENV]: path };
  return {
    path,
    env,
    run: (...argv) => runFakeNvidiaSmi(argv, env, () => new Date(2026, 9, 2, 19, 30, 0)),
    machine: () => {
      const m = loadMachine(path);
      if (!m) throw new Error(`state file ${path} vanished`);
      return m;
    },
  };
}
