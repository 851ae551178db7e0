import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { findGiProfile, GPU_MODELS, resolveGpuModel } from './catalog/index.js';
import { countingViolation, enumerateLayouts, fragmentation, freePlacements, multisetKey, placeProfiles, type PlacedInstance } from './geometry.js';
import type { GpuModel } from './types.js';

function profilesOf(model: GpuModel, names: readonly string[]) {
  return names.map((n) => findGiProfile(model, n));
}

function assertDisjointAndLegal(model: GpuModel, instances: readonly PlacedInstance[]): void {
  for (const i of instances) {
    expect(i.profile.placements).toContainEqual({ start: i.start, size: i.size });
  }
  const used = new Set<number>();
  for (const i of instances) {
    for (let u = i.start; u < i.start + i.size; u++) {
      expect(used.has(u), `unit ${u} used twice`).toBe(false);
      used.add(u);
    }
  }
  expect(countingViolation(model, instances.map((i) => i.profile))).toBeNull();
}

describe('documented combinations', () => {
  const a100 = resolveGpuModel('A100-40GB');
  const a30 = resolveGpuModel('A30');

  // The MIG User Guide's A100 examples (Getting Started: -cgi 9,14,19,19 and 14,19,19,19,19,19;
  // fixtures a100-40gb_cgi-*), the R510 4g+3g note, and mig-parted's A100-40GB configs.
  it.each([
    [['3g.20gb', '2g.10gb', '1g.5gb', '1g.5gb']],
    [['2g.10gb', '1g.5gb', '1g.5gb', '1g.5gb', '1g.5gb', '1g.5gb']],
    [['4g.20gb', '3g.20gb']],
    [['3g.20gb', '3g.20gb']],
    [['7g.40gb']],
    [['2g.10gb', '2g.10gb', '2g.10gb']],
    [['1g.5gb', '1g.5gb', '1g.5gb', '1g.5gb', '1g.5gb', '1g.5gb', '1g.5gb']],
    [['1g.10gb', '1g.10gb', '1g.10gb', '1g.10gb']],
    [['4g.20gb', '2g.10gb', '1g.5gb']],
    [['4g.20gb', '1g.5gb', '1g.5gb', '1g.5gb']],
    [['1g.5gb+me']],
  ])('A100-40GB holds %j', (names) => {
    const outcome = placeProfiles(a100, profilesOf(a100, names));
    expect(outcome.valid).toBe(true);
    if (outcome.valid) assertDisjointAndLegal(a100, outcome.placements);
  });

  it('A100-40GB: 3g.20gb starts only at 0 or 4, 4g.20gb only at 0, 7g.40gb takes all 8 memory slices', () => {
    expect(findGiProfile(a100, '3g.20gb').placements.map((p) => p.start)).toEqual([0, 4]);
    expect(findGiProfile(a100, '4g.20gb').placements).toEqual([{ start: 0, size: 4 }]);
    expect(findGiProfile(a100, '7g.40gb').placements).toEqual([{ start: 0, size: 8 }]);
    expect(placeProfiles(a100, profilesOf(a100, ['7g.40gb', '1g.5gb'])).valid).toBe(false);
  });

  it('A100-40GB: 4g.20gb + 3g.20gb + 1g.5gb runs out of compute slices', () => {
    const outcome = placeProfiles(a100, profilesOf(a100, ['4g.20gb', '3g.20gb', '1g.5gb']));
    expect(outcome).toEqual({ valid: false, reason: 'the profiles need 8 compute slices and A100-40GB has 7' });
  });

  it('A100-40GB: two 4g.20gb collide (one placement, and a maximum of 1)', () => {
    const outcome = placeProfiles(a100, profilesOf(a100, ['4g.20gb', '4g.20gb']));
    expect(outcome.valid).toBe(false);
    if (!outcome.valid) expect(outcome.reason).toMatch(/at most 1 × 4g.20gb/);
  });

  it('A100-40GB: with driver-chosen 1g/2g placements, 3g.20gb no longer fits and the reason names the blockers', () => {
    // The MIG User Guide's "Insufficient Resources" example: 1g, 1g, 2g created first, then 3g.
    const existing = [
      { profile: findGiProfile(a100, '1g.5gb'), start: 6, size: 1 },
      { profile: findGiProfile(a100, '1g.5gb'), start: 4, size: 1 },
      { profile: findGiProfile(a100, '2g.10gb'), start: 0, size: 2 },
    ];
    const outcome = placeProfiles(a100, profilesOf(a100, ['3g.20gb']), existing);
    expect(outcome.valid).toBe(false);
    if (!outcome.valid) {
      expect(outcome.reason).toBe('3g.20gb can start only at slice 0,4 (size 4), and every such position collides with 2g.10gb at 0:2, 1g.5gb at 6:1, 1g.5gb at 4:1');
    }
    // Created in the right places, the same four instances fit (the guide's -lgi 3-2-1-1 listing).
    expect(placeProfiles(a100, profilesOf(a100, ['1g.5gb', '1g.5gb', '2g.10gb', '3g.20gb'])).valid).toBe(true);
  });

  it('A100-40GB: the +me profile takes the only JPEG/OFA, and only one may exist', () => {
    expect(placeProfiles(a100, profilesOf(a100, ['1g.5gb+me', '1g.5gb+me'])).valid).toBe(false);
  });

  // NVIDIA's A30 post ("Dividing NVIDIA A30 GPUs"): one 24GB, two 12GB, one 12GB + two 6GB, four 6GB.
  it.each([[['4g.24gb']], [['2g.12gb', '2g.12gb']], [['2g.12gb', '1g.6gb', '1g.6gb']], [['1g.6gb', '1g.6gb', '1g.6gb', '1g.6gb']]])(
    'A30 holds %j',
    (names) => {
      expect(placeProfiles(a30, profilesOf(a30, names)).valid).toBe(true);
    },
  );

  it('A30: its maximal layouts are exactly the four documented ones (without +me profiles)', () => {
    const plain = { ...a30, giProfiles: a30.giProfiles.filter((p) => !p.name.includes('+')) };
    const keys = enumerateLayouts(plain, { maximal: true }).map((l) => multisetKey(l.instances.map((i) => i.profile)));
    expect(keys.sort()).toEqual(['1g.6gb+1g.6gb+1g.6gb+1g.6gb', '1g.6gb+1g.6gb+2g.12gb', '2g.12gb+2g.12gb', '4g.24gb']);
  });

  it('A100-40GB: the classic profiles give 12 maximal layouts, 4g+3g among them', () => {
    const plain = { ...a100, giProfiles: a100.giProfiles.filter((p) => !p.name.includes('+') && p.name !== '1g.10gb') };
    const keys = enumerateLayouts(plain, { maximal: true }).map((l) => multisetKey(l.instances.map((i) => i.profile)));
    expect(keys).toHaveLength(12);
    expect(keys).toContain('3g.20gb+4g.20gb');
    expect(keys).toContain('1g.5gb+1g.5gb+2g.10gb+3g.20gb');
  });

  it('RTX PRO 6000: +me.all takes every media engine, so it cannot sit beside a plain 1g.24gb', () => {
    const rtx = resolveGpuModel('RTX-PRO-6000');
    expect(placeProfiles(rtx, profilesOf(rtx, ['1g.24gb+me.all', '1g.24gb-me', '1g.24gb-me', '1g.24gb-me'])).valid).toBe(true);
    const outcome = placeProfiles(rtx, profilesOf(rtx, ['1g.24gb+me.all', '1g.24gb']));
    expect(outcome.valid).toBe(false);
    if (!outcome.valid) expect(outcome.reason).toMatch(/need 5 decoders and RTX-PRO-6000 has 4/);
  });
});

describe('fit into an existing layout and fragmentation', () => {
  const a100 = resolveGpuModel('A100-40GB');
  const at = (name: string, start: number): PlacedInstance => {
    const profile = findGiProfile(a100, name);
    return { profile, start, size: profile.placements[0]?.size ?? 0 };
  };

  it('lists where a profile fits, keeping the instances already there', () => {
    const layout = [at('3g.20gb', 0)];
    expect(freePlacements(a100, layout, findGiProfile(a100, '2g.10gb')).map((p) => p.start)).toEqual([4]);
    expect(freePlacements(a100, layout, findGiProfile(a100, '3g.20gb')).map((p) => p.start)).toEqual([4]);
    expect(freePlacements(a100, layout, findGiProfile(a100, '4g.20gb'))).toEqual([]);
    expect(freePlacements(a100, [at('3g.20gb', 4)], findGiProfile(a100, '4g.20gb')).map((p) => p.start)).toEqual([0]);
  });

  it('a scattered layout is more fragmented than a compact one with the same free space', () => {
    const compact = fragmentation(a100, [at('1g.5gb', 0), at('1g.5gb', 1), at('1g.5gb', 2), at('1g.5gb', 3)]);
    const scattered = fragmentation(a100, [at('1g.5gb', 0), at('1g.5gb', 2), at('1g.5gb', 4), at('1g.5gb', 6)]);
    expect(compact.freeUnits).toBe(scattered.freeUnits);
    expect(compact.admits).toContain('3g.20gb');
    expect(scattered.admits).not.toContain('2g.10gb');
    expect(scattered.score).toBeGreaterThan(compact.score);
    expect(fragmentation(a100, []).score).toBe(0);
    expect(fragmentation(a100, [at('7g.40gb', 0)]).admits).toEqual([]);
  });
});

describe('properties over every catalogued GPU', () => {
  const layoutsByGpu = new Map(GPU_MODELS.map((m) => [m.name, enumerateLayouts(m)]));

  it.each(GPU_MODELS.map((m) => [m.name, m] as const))('%s: every enumerated layout is legal and re-validates', (name, m) => {
    const layouts = layoutsByGpu.get(name) ?? [];
    expect(layouts.length).toBeGreaterThan(0);
    const keys = new Set<string>();
    for (const l of layouts) {
      assertDisjointAndLegal(m, l.instances);
      const key = multisetKey(l.instances.map((i) => i.profile));
      expect(keys.has(key), `duplicate ${key}`).toBe(false);
      keys.add(key);
      const again = placeProfiles(m, l.instances.map((i) => i.profile));
      expect(again.valid).toBe(true);
    }
    // Every single profile is a layout on its own.
    for (const p of m.giProfiles) expect(keys.has(p.name)).toBe(true);
  });

  it('check agrees with layouts on random multisets', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...GPU_MODELS),
        fc.array(fc.nat(20), { minLength: 1, maxLength: 9 }),
        (model, picks) => {
          const profiles = picks.map((k) => model.giProfiles[k % model.giProfiles.length]).filter((p) => p !== undefined);
          const keys = new Set((layoutsByGpu.get(model.name) ?? []).map((l) => multisetKey(l.instances.map((i) => i.profile))));
          const outcome = placeProfiles(model, profiles);
          expect(outcome.valid).toBe(keys.has(multisetKey(profiles)));
          if (outcome.valid) assertDisjointAndLegal(model, outcome.placements);
          else expect(outcome.reason.length).toBeGreaterThan(10);
        },
      ),
      { numRuns: 2000, seed: 42 },
    );
  });

  it('maximal layouts admit no further instance', () => {
    for (const m of GPU_MODELS) {
      for (const l of enumerateLayouts(m, { maximal: true })) {
        for (const p of m.giProfiles) expect(placeProfiles(m, [...l.instances.map((i) => i.profile), p]).valid).toBe(false);
      }
    }
  });
});
