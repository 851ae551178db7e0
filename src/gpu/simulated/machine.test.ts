import { describe, expect, it } from 'vitest';
import { GpuError } from '../port.js';
import { SimulatedMachine } from './machine.js';
import { parseSimulateSpec } from './spec.js';

function a100(): SimulatedMachine {
  const m = SimulatedMachine.create(parseSimulateSpec('1xA100-SXM4-40GB'));
  m.setMigMode(0, true);
  m.resetGpu(0);
  return m;
}

describe('simulated GPU: what the driver does when no placement is given', () => {
  it('reproduces the MIG User Guide capture of -cgi 14,19,19,19,19,19 (2g at 4, then 1g at 6, 0..3)', () => {
    const m = a100();
    const made = ['14', '19', '19', '19', '19', '19'].map((p) => m.createGpuInstance(0, p));
    expect(made.map((g) => `${g.profile}@${g.start}#${g.id}`)).toEqual([
      '2g.10gb@4#5',
      '1g.5gb@6#13',
      '1g.5gb@0#7',
      '1g.5gb@1#8',
      '1g.5gb@2#9',
      '1g.5gb@3#10',
    ]);
  });

  it('reproduces the MIG User Guide capture of -cgi 9,19,14,19 (3g at 4, 1g at 0, 2g at 2, 1g at 1)', () => {
    const m = a100();
    const made = ['9', '19', '14', '19'].map((p) => m.createGpuInstance(0, p));
    expect(made.map((g) => `${g.profile}@${g.start}#${g.id}`)).toEqual(['3g.20gb@4#2', '1g.5gb@0#7', '2g.10gb@2#4', '1g.5gb@1#8']);
  });

  it('fits a 2c beside a 1c in a 3g GPU instance', () => {
    const m = a100();
    const gi = m.createGpuInstance(0, '3g.20gb', 0);
    m.createComputeInstance(0, gi.id, '1c.3g.20gb');
    expect(m.createComputeInstance(0, gi.id, '2c.3g.20gb').id).toBe(1);
  });

  it('reproduces the Insufficient Resources capture of -cgi 19,19,14 then 9', () => {
    const m = a100();
    const made = ['19', '19', '14'].map((p) => m.createGpuInstance(0, p));
    expect(made.map((g) => `${g.start}#${g.id}`)).toEqual(['6#13', '4#11', '0#3']);
    expect(() => m.createGpuInstance(0, '9')).toThrow(GpuError);
    try {
      m.createGpuInstance(0, '9');
    } catch (e) {
      expect((e as GpuError).kind).toBe('insufficient-resources');
    }
  });
});

describe('simulated GPU: spec', () => {
  it('reads counts and names, and keeps the product name asked for', () => {
    const kinds = parseSimulateSpec('2xA30, 1xA100-PCIE-40GB');
    expect(kinds.map((k) => k.productName)).toEqual(['NVIDIA A30', 'NVIDIA A30', 'NVIDIA A100-PCIE-40GB']);
    expect(() => parseSimulateSpec('0xA30')).toThrow(/--simulate '0xA30': the count must be 1 or more, as in 8xA100-SXM4-40GB/);
    expect(() => parseSimulateSpec('65xA30')).toThrow("--simulate '65xA30': 65 is more GPUs than one entry of a machine spec holds (at most 64 per entry); split it into entries, as in 64xA30,1xA30");
    // What the message suggests parses.
    expect(parseSimulateSpec('64xA30,1xA30')).toHaveLength(65);
    expect(() => parseSimulateSpec('2xV100')).toThrow(/--simulate '2xV100': unknown GPU 'V100'/);
    expect(() => parseSimulateSpec('')).toThrow(/empty --simulate spec/);
  });

  it('gives the same UUIDs for the same seed and different ones for another', () => {
    const a = SimulatedMachine.create(parseSimulateSpec('2xA30'), 7).listGpus().map((g) => g.uuid);
    const b = SimulatedMachine.create(parseSimulateSpec('2xA30'), 7).listGpus().map((g) => g.uuid);
    const c = SimulatedMachine.create(parseSimulateSpec('2xA30'), 8).listGpus().map((g) => g.uuid);
    expect(a).toEqual(b);
    expect(a).not.toEqual(c);
    expect(a[0]).toMatch(/^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  });
});
