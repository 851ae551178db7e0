import { describe, expect, it } from 'vitest';
import { SimulatedMachine } from './machine.js';
import { parseSimulateSpec } from './spec.js';
import { simStateProblem } from './state-check.js';

describe('simStateProblem', () => {
  const fresh = () => JSON.parse(JSON.stringify(SimulatedMachine.create(parseSimulateSpec('2xA100-SXM4-40GB'), 1, '2xA100-SXM4-40GB').state)) as Record<string, unknown> & { gpus: Record<string, unknown>[] };

  it('accepts a machine as the simulator writes it, also with instances, processes and faults', () => {
    const machine = SimulatedMachine.create(parseSimulateSpec('1xA100-SXM4-40GB'));
    machine.setMigMode(0, true);
    machine.resetGpu(0);
    const gi = machine.createGpuInstance(0, '3g.20gb');
    machine.createComputeInstance(0, gi.id, '3g.20gb');
    machine.attachProcess(0, { gpuInstanceId: gi.id, computeInstanceId: 0 });
    machine.injectFault({ operation: 'resetGpu', gpu: 0, kind: 'in-use' });
    expect(simStateProblem(JSON.parse(JSON.stringify(machine.state)))).toBeNull();
    expect(simStateProblem(fresh())).toBeNull();
  });

  it('names the first field that is missing or of the wrong type', () => {
    const s = fresh();
    s['nextPid'] = 'x';
    expect(simStateProblem(s)).toBe('nextPid: expected a whole number of at least 1, got "x"');
    const t = fresh();
    (t.gpus[1]!['gpuInstances'] as unknown[]).push({ id: 1, profile: '1g.5gb', profileId: 0, start: 1.5, size: 1, computeInstances: [] });
    expect(simStateProblem(t)).toBe('gpus[1].gpuInstances[0].start: expected a whole number of at least 0, got 1.5');
    const u = fresh();
    u['faults'] = [{ operation: 'explode', kind: 'in-use' }];
    expect(simStateProblem(u)).toMatch(/^faults\[0\]\.operation: expected one of setMigMode, .*, got "explode"$/);
  });
});
