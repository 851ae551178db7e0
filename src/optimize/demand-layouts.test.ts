import { describe, expect, it } from 'vitest';
import { placeProfiles } from '../mig/geometry.js';
import { resolveGpuModel } from '../mig/catalog/index.js';
import { planLayoutsForDemand, type DemandGpu } from './demand-layouts.js';

const a100 = resolveGpuModel('A100-SXM4-40GB');
const a30 = resolveGpuModel('A30');

function profilesOf(layout: readonly { profile: string }[] | null): string[] {
  return layout === null ? ['gpu'] : layout.map((i) => i.profile).sort();
}

describe('planLayoutsForDemand', () => {
  it('cuts an idle whole GPU into seven 1g.5gb for seven waiting 1g.5gb requests', () => {
    const plan = planLayoutsForDemand([{ key: 'n1/0', model: a100, current: null, changeable: true }], [{ profile: '1g.5gb', count: 7 }]);
    expect(profilesOf(plan.gpus[0]!.layout)).toEqual(Array(7).fill('1g.5gb'));
    expect(plan.gpus[0]!.changed).toBe(true);
    expect(plan.served).toEqual({ '1g.5gb': 7 });
    expect(plan.unserved).toEqual({});
  });

  it('chooses only legal layouts, and serves a mixed demand as far as one GPU can', () => {
    const plan = planLayoutsForDemand([{ key: 'g', model: a100, current: null, changeable: true }], [
      { profile: '3g.20gb', count: 1 },
      { profile: '2g.10gb', count: 1 },
      { profile: '1g.5gb', count: 5 },
    ]);
    const layout = plan.gpus[0]!.layout!;
    expect(placeProfiles(a100, layout.map((i) => a100.giProfiles.find((p) => p.name === i.profile)!)).valid).toBe(true);
    // 3g+2g+1g+1g fills the 7 compute slices: 7 slices of demand served, the rest waits.
    expect(plan.served['3g.20gb']).toBe(1);
    expect(plan.served['2g.10gb']).toBe(1);
    expect(plan.served['1g.5gb']).toBe(2);
    expect(plan.unserved).toEqual({ '1g.5gb': 3 });
  });

  it('leaves a GPU alone when nothing waits, or when its layout already serves the demand', () => {
    const current = [{ profile: '3g.20gb', start: 4 }, { profile: '4g.20gb', start: 0 }];
    const idle = planLayoutsForDemand([{ key: 'g', model: a100, current, changeable: true }], []);
    expect(idle.gpus[0]).toEqual({ key: 'g', layout: current, changed: false });
    const served = planLayoutsForDemand([{ key: 'g', model: a100, current, changeable: true }], [{ profile: '3g.20gb', count: 1 }]);
    expect(served.gpus[0]!.changed).toBe(false);
  });

  it('uses free slices of GPUs that stay as they are before cutting another', () => {
    const gpus: DemandGpu[] = [
      { key: 'busy', model: a100, current: Array.from({ length: 7 }, (_, i) => ({ profile: '1g.5gb', start: i })), changeable: false, free: { '1g.5gb': 2 } },
      { key: 'idle', model: a100, current: null, changeable: true },
    ];
    const two = planLayoutsForDemand(gpus, [{ profile: '1g.5gb', count: 2 }]);
    expect(two.gpus.find((g) => g.key === 'idle')!.changed).toBe(false);
    expect(two.served).toEqual({ '1g.5gb': 2 });
    const three = planLayoutsForDemand(gpus, [{ profile: '1g.5gb', count: 3 }]);
    expect(three.gpus.find((g) => g.key === 'idle')!.changed).toBe(true);
    expect(three.gpus.find((g) => g.key === 'busy')!.changed).toBe(false);
  });

  it('turns MIG off for whole-GPU requests, and never changes an unchangeable GPU', () => {
    const cut = [{ profile: '7g.40gb', start: 0 }];
    const plan = planLayoutsForDemand(
      [
        { key: 'a', model: a100, current: cut, changeable: false },
        { key: 'b', model: a100, current: cut, changeable: true },
      ],
      [{ profile: 'gpu', count: 2 }],
    );
    expect(plan.gpus[0]).toEqual({ key: 'a', layout: cut, changed: false });
    expect(plan.gpus[1]!.layout).toBeNull();
    expect(plan.unserved).toEqual({ gpu: 1 });
  });

  it('matches profiles by the GPU model: an A30 cannot serve 1g.5gb', () => {
    const plan = planLayoutsForDemand([{ key: 'a30', model: a30, current: null, changeable: true }], [
      { profile: '1g.5gb', count: 4 },
      { profile: '1g.6gb', count: 2 },
    ]);
    expect(profilesOf(plan.gpus[0]!.layout).filter((p) => p === '1g.6gb').length).toBeGreaterThanOrEqual(2);
    expect(plan.unserved).toEqual({ '1g.5gb': 4 });
  });

  it('rejects bad counts and repeated keys', () => {
    expect(() => planLayoutsForDemand([], [{ profile: '1g.5gb', count: -1 }])).toThrow(/whole number/);
    const g: DemandGpu = { key: 'x', model: a100, current: null, changeable: true };
    expect(() => planLayoutsForDemand([g, g], [])).toThrow(/twice/);
  });
});
