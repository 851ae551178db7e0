import { describe, expect, it } from 'vitest';
import { resolveGpuModel } from '../mig/catalog/index.js';
import { ciProfilesOf } from '../mig/compute-instances.js';
import { checkpointOf, nvmlGiProfileConstant, parseCheckpoint, planRestoreGpu } from './checkpoint.js';
import type { CurrentGpu } from './state.js';

const a100 = resolveGpuModel('A100-40GB');
const gi = (name: string) => a100.giProfiles.find((p) => p.name === name)!;

function gpu(instances: { name: string; start: number; id: number; pids?: number[] }[]): CurrentGpu {
  return {
    index: 0,
    uuid: 'GPU-1',
    model: a100,
    migMode: { current: 'enabled', pending: 'enabled' },
    gpuPids: [],
    instances: instances.map((i) => ({ id: i.id, profile: gi(i.name), start: i.start, size: gi(i.name).memorySlices, computeInstances: [{ id: 0, profile: i.name, pids: i.pids ?? [] }] })),
  };
}

describe('checkpoint (mig-parted api/checkpoint/v1)', () => {
  it("uses NVML's GPU instance profile constants, not nvidia-smi's -lgip IDs", () => {
    expect(['1g.5gb', '1g.5gb+me', '1g.10gb', '2g.10gb', '3g.20gb', '4g.20gb', '7g.40gb'].map((n) => nvmlGiProfileConstant(gi(n)))).toEqual([0, 7, 9, 1, 2, 3, 4]);
    const cp = checkpointOf([gpu([{ name: '3g.20gb', start: 4, id: 2 }, { name: '1g.5gb', start: 0, id: 9 }])]);
    expect(cp).toEqual({
      Version: 'v1',
      MigState: { Devices: [{ UUID: 'GPU-1', MigMode: 1, GpuInstances: [
        { ProfileID: 0, Placement: { Start: 0, Size: 1 }, ComputeInstances: [{ ProfileID: 0, EngProfileID: 0 }] },
        { ProfileID: 2, Placement: { Start: 4, Size: 4 }, ComputeInstances: [{ ProfileID: ciProfilesOf(gi('3g.20gb')).find((c) => c.isDefault)!.id, EngProfileID: 0 }] },
      ] }] },
    });
    expect(parseCheckpoint(JSON.stringify(cp), 'cp.json')).toEqual(cp);
  });

  it('reads field names case-insensitively and rejects bad values naming the field', () => {
    expect(parseCheckpoint('{"version":"v1","migState":{"devices":[{"uuid":"GPU-1","migMode":0,"gpuInstances":null}]}}', 'cp.json').MigState.Devices?.[0]?.UUID).toBe('GPU-1');
    expect(() => parseCheckpoint('{', 'cp.json')).toThrow(/^cp\.json: not a checkpoint \(not valid JSON/);
    expect(() => parseCheckpoint('{"Version":"v1","MigState":{"Devices":[{"UUID":"GPU-1","MigMode":2}]}}', 'cp.json')).toThrow(/^cp\.json: MigState\.Devices\[0\]\.MigMode: must be 0 \(disabled\) or 1 \(enabled\), got 2/);
  });

  it('restore keeps instances already in place, destroys the rest, and refuses a busy one unless forced', () => {
    const device = checkpointOf([gpu([{ name: '3g.20gb', start: 4, id: 2 }, { name: '3g.20gb', start: 0, id: 1 }])]).MigState.Devices![0]!;
    const now = gpu([{ name: '3g.20gb', start: 4, id: 7 }, { name: '2g.10gb', start: 0, id: 8, pids: [42] }]);
    const refused = planRestoreGpu(now, device, 'cp.json: MigState.Devices[0]');
    expect(refused.ok).toBe(false);
    const forced = planRestoreGpu(now, device, 'cp.json: MigState.Devices[0]', { force: true });
    if (!forced.ok) throw new Error(forced.reason);
    expect(forced.plan.kept.map((k) => k.id)).toEqual([7]);
    expect(forced.plan.forcedPids).toEqual([42]);
    expect(forced.plan.operations.map((o) => o.kind)).toEqual(['destroy-ci', 'destroy-gi', 'create-gi', 'create-ci']);
    expect(() => planRestoreGpu(now, { ...device, GpuInstances: [{ ProfileID: 2, Placement: { Start: 1, Size: 4 }, ComputeInstances: null }] }, 'cp')).toThrow(/cp\.GpuInstances\[0\]\.Placement: 1:4 is not a placement of 3g\.20gb/);
  });
});
