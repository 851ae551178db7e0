import { describe, expect, it } from 'vitest';
import { FakePoolService } from '../../test/fake-pool-service.js';
import { allocatedGpusByUser, allocatedSlices, computeSlicesOf } from './allocation.js';

const spec = { name: 'cifar', command: ['python', 'train.py'] };

describe('allocation', () => {
  it('counts compute slices of a profile, not its placement width', () => {
    expect(computeSlicesOf('3g.20gb')).toBe(3);
    expect(computeSlicesOf('7g.40gb')).toBe(7);
    expect(computeSlicesOf('1g.10gb+me')).toBe(1);
  });

  it("gives each owner GPUs' worth of what their running jobs hold; a shared whole GPU counts 1 for each of its jobs, as quotas count it", async () => {
    const fake = new FakePoolService();
    fake.addGpu('NVIDIA A100-SXM4-80GB', 7, [
      ['7g.80gb', 0, 8],
    ]);
    fake.addGpu('NVIDIA A100-SXM4-40GB', 7, [
      ['4g.20gb', 0, 4],
      ['2g.10gb', 4, 2],
    ]);
    fake.addGpu('NVIDIA H100 80GB HBM3', 7, []);
    for (let i = 0; i < 5; i++) await fake.submit(spec);
    fake.owners.set('1', 'alice');
    fake.owners.set('3', 'alice');
    fake.owners.set('4', 'bob');
    fake.startJob('1', 0, 0);
    fake.startJob('2', 1, 4);
    fake.startJob('3', 2, null);
    fake.startJob('4', 2, null);
    const gpus = await fake.gpus();
    expect(gpus.map(allocatedSlices)).toEqual([7, 2, 7]);
    const held = allocatedGpusByUser(gpus, fake.liveJobs());
    expect(held.get('alice')).toBeCloseTo(1 + 1, 9);
    expect(held.get('bob')).toBeCloseTo(1, 9);
    expect(held.get('default')).toBeCloseTo(2 / 7, 9);
  });
});
