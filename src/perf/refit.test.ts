import { describe, expect, it } from 'vitest';
import { resolveGpuModel } from '../mig/catalog/index.js';
import { fitsOn } from './fits.js';
import { predict } from './model.js';
import { raiseMemoryAfterOom, refitWorkload } from './refit.js';
import { resolveWorkload } from './workloads.js';

const A100 = resolveGpuModel('A100-SXM4-40GB');

describe('refitWorkload', () => {
  it('with one observation keeps the slice-to-slice ratios and fixes the absolute time', () => {
    const w = resolveWorkload('small');
    const on1g = predict(w, { kind: 'mig', gpu: A100, profile: '1g.5gb' }).iterationMs ?? 0;
    const on3g = predict(w, { kind: 'mig', gpu: A100, profile: '3g.20gb' }).iterationMs ?? 0;
    const learned = refitWorkload(w, [{ resource: { kind: 'mig', gpu: A100, profile: '1g.5gb' }, iterationMs: on1g * 1.5 }]);
    expect(predict(learned, { kind: 'mig', gpu: A100, profile: '1g.5gb' }).iterationMs).toBeCloseTo(on1g * 1.5, 6);
    expect(predict(learned, { kind: 'mig', gpu: A100, profile: '3g.20gb' }).iterationMs).toBeCloseTo(on3g * 1.5, 6);
    expect(learned.source).toMatch(/learned: time scaled x1\.500/);
  });

  it('with points on three resources refits the curve to them', () => {
    const w = resolveWorkload('small');
    const pts = (['1g.5gb', '3g.20gb', '7g.40gb'] as const).map((profile, i) => ({ resource: { kind: 'mig' as const, gpu: A100, profile }, iterationMs: [80, 40, 25][i] ?? 0 }));
    const learned = refitWorkload(w, pts);
    for (const p of pts) expect(Math.abs((predict(learned, p.resource).iterationMs ?? 0) / p.iterationMs - 1)).toBeLessThan(0.1);
  });

  it('raises memory to the observed peak, never lowers it; unchanged without news', () => {
    const w = resolveWorkload('small');
    expect(refitWorkload(w, [], 10).memoryGiB).toBe(10);
    expect(refitWorkload(w, [], 1).memoryGiB).toBe(w.memoryGiB);
    expect(refitWorkload(w, [])).toBe(w);
  });
});

describe('raiseMemoryAfterOom', () => {
  it('makes the job no longer fit the instance it ran out of memory on, and fit a larger one', () => {
    const w = { ...resolveWorkload('small'), memoryGiB: null };
    const after = raiseMemoryAfterOom(w, 4.75);
    expect(fitsOn(after.memoryGiB, { kind: 'mig', gpu: A100, profile: '1g.5gb' })).toBe(false);
    expect(fitsOn(after.memoryGiB, { kind: 'mig', gpu: A100, profile: '2g.10gb' })).toBe(true);
  });
});
