import { gpuPortConformance } from '../../../test/gpu-conformance.js';
import { SimulatedGpuPort } from './driver.js';
import { SimulatedMachine } from './machine.js';
import { parseSimulateSpec } from './spec.js';

gpuPortConformance('in-memory simulator', async () => {
  const machine = SimulatedMachine.create(parseSimulateSpec('1xA100-SXM4-40GB,1xH100-80GB'), 3);
  const port = new SimulatedGpuPort(machine);
  return { port, control: (act) => act(machine) };
});
