import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gpuPortConformance } from '../../../test/gpu-conformance.js';
import { installFakeNvidiaSmi } from '../fake-nvidia-smi/install.js';
import { STATE_ENV } from '../fake-nvidia-smi/main.js';
import { SimulatedMachine } from '../simulated/machine.js';
import { parseSimulateSpec } from '../simulated/spec.js';
import { loadMachine, saveMachine } from '../simulated/state-file.js';
import { NvidiaSmiPort } from './driver.js';

/**
 * The nvidia-smi adapter, unchanged, driving the fake `nvidia-smi` executable put first on PATH,
 * over a state file that the harness edits behind its back (processes, faults). Needs the build
 * (`npm test` builds first).
 */
gpuPortConformance('nvidia-smi adapter over the fake nvidia-smi', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'migpool-fake-smi-'));
  installFakeNvidiaSmi(dir);
  const state = join(dir, 'state.json');
  saveMachine(state, SimulatedMachine.create(parseSimulateSpec('1xA100-SXM4-40GB,1xH100-80GB'), 3));
  const port = new NvidiaSmiPort({ env: { ...process.env, PATH: `${dir}:${process.env['PATH'] ?? ''}`, [STATE_ENV]: state } });
  return {
    port,
    control: (act) => {
      const machine = loadMachine(state);
      if (!machine) throw new Error(`state file ${state} missing`);
      act(machine);
      saveMachine(state, machine);
    },
  };
});
