import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { isMap, isSeq, parseDocument, type Pair, type Scalar, type YAMLMap } from 'yaml';
import { MigpoolError } from '../../errors.js';
import { ciProfilesOf } from '../compute-instances.js';
import { formatPlacementList } from '../placement-text.js';
import type { GpuModel } from '../types.js';
import { findGiProfile, GPU_MODELS, resolveGpuModel } from './index.js';

/** `name id GiB SMs CE/DEC/ENC/JPEG/OFA max placements`, the way `-lgip` + `-lgipp` print a row. */
function rows(model: GpuModel): string[] {
  return model.giProfiles.map((p) =>
    [
      p.name,
      p.id,
      p.memoryGiB ?? '?',
      p.sms ?? '?',
      [p.copyEngines, p.decoders, p.encoders, p.jpeg, p.ofa].map((v) => v ?? '?').join('/'),
      p.maxCount,
      formatPlacementList(p.placements),
    ].join(' '),
  );
}

describe('catalogue tables match NVIDIA', () => {
  it('A30: MIG User Guide Table 5 and a real -lgip/-lgipp capture', () => {
    expect(rows(resolveGpuModel('A30'))).toEqual([
      '1g.6gb 14 5.81 14 1/1/0/0/0 4 {0,1,2,3}:1',
      '1g.6gb+me 21 5.81 14 1/1/0/1/1 1 {0,1,2,3}:1',
      '2g.12gb 5 11.69 28 2/2/0/0/0 2 {0,2}:2',
      '2g.12gb+me 6 11.69 28 2/2/0/1/1 1 {0,2}:2',
      '4g.24gb 0 23.5 56 4/4/0/1/1 1 {0}:4',
    ]);
  });

  it('A100-40GB: Table 6, R510 -lgip and the R525 -lgipp listing', () => {
    expect(rows(resolveGpuModel('A100-SXM4-40GB'))).toEqual([
      '1g.5gb 19 4.75 14 1/0/0/0/0 7 {0,1,2,3,4,5,6}:1',
      '1g.5gb+me 20 4.75 14 1/1/0/1/1 1 {0,1,2,3,4,5,6}:1',
      '1g.10gb 15 9.62 14 1/1/0/0/0 4 {0,2,4,6}:2',
      '2g.10gb 14 9.75 28 2/1/0/0/0 3 {0,2,4}:2',
      '3g.20gb 9 19.62 42 3/2/0/0/0 2 {0,4}:4',
      '4g.20gb 5 19.62 56 4/2/0/0/0 1 {0}:4',
      '7g.40gb 0 39.5 98 7/5/0/1/1 1 {0}:8',
    ]);
  });

  it('A100-80GB: Table 6 (80GB names) and an R515 -lgip capture', () => {
    expect(rows(resolveGpuModel('A100-SXM4-80GB'))).toEqual([
      '1g.10gb 19 9.5 14 1/0/0/0/0 7 {0,1,2,3,4,5,6}:1',
      '1g.10gb+me 20 9.5 14 1/1/0/1/1 1 {0,1,2,3,4,5,6}:1',
      '1g.20gb 15 ? 14 1/1/0/0/0 4 {0,2,4,6}:2',
      '2g.20gb 14 19.5 28 2/1/0/0/0 3 {0,2,4}:2',
      '3g.40gb 9 39.25 42 3/2/0/0/0 2 {0,4}:4',
      '4g.40gb 5 39.25 56 4/2/0/0/0 1 {0}:4',
      '7g.80gb 0 79 98 7/5/0/1/1 1 {0}:8',
    ]);
  });

  it('H100-80GB: Table 7 and a real H100 80GB HBM3 -lgip/-lgipp capture', () => {
    expect(rows(resolveGpuModel('H100-80GB'))).toEqual([
      '1g.10gb 19 9.75 16 1/1/0/1/0 7 {0,1,2,3,4,5,6}:1',
      '1g.10gb+me 20 9.75 16 1/1/0/1/1 1 {0,1,2,3,4,5,6}:1',
      '1g.20gb 15 19.62 26 1/1/0/1/0 4 {0,2,4,6}:2',
      '2g.20gb 14 19.62 32 2/2/0/2/0 3 {0,2,4}:2',
      '3g.40gb 9 39.5 60 3/3/0/3/0 2 {0,4}:4',
      '4g.40gb 5 39.5 64 4/4/0/4/0 1 {0}:4',
      '7g.80gb 0 79.25 132 8/7/0/7/1 1 {0}:8',
    ]);
  });

  it('H200: Table 8 and the -lgip of mig-parted issue #120', () => {
    expect(rows(resolveGpuModel('H200'))).toEqual([
      '1g.18gb 19 16 16 1/1/0/1/0 7 {0,1,2,3,4,5,6}:1',
      '1g.18gb+me 20 16 16 1/1/0/1/1 1 {0,1,2,3,4,5,6}:1',
      '1g.35gb 15 32.25 26 1/1/0/1/0 4 {0,2,4,6}:2',
      '2g.35gb 14 32.25 32 2/2/0/2/0 3 {0,2,4}:2',
      '3g.71gb 9 69.5 60 3/3/0/3/0 2 {0,4}:4',
      '4g.71gb 5 69.5 64 4/4/0/4/0 1 {0}:4',
      '7g.141gb 0 139.75 132 8/7/0/7/1 1 {0}:8',
    ]);
  });

  it('RTX PRO 6000: 12 placement units, 3 per memory slice', () => {
    const m = resolveGpuModel('RTX-PRO-6000');
    expect(findGiProfile(m, '1g.24gb').memorySlices).toBe(1);
    expect(findGiProfile(m, '2g.48gb-me').memorySlices).toBe(2);
    expect(findGiProfile(m, '4g.96gb+gfx').placements).toEqual([{ start: 0, size: 12 }]);
  });

  it('compute instance profiles as -lcip lists them (no 3c on a 4g GI)', () => {
    const a100 = resolveGpuModel('A100-40GB');
    expect(ciProfilesOf(findGiProfile(a100, '4g.20gb')).map((c) => `${c.name}:${c.id}:${c.maxCount}`)).toEqual([
      '1c.4g.20gb:0:4',
      '2c.4g.20gb:1:2',
      '4g.20gb:3:1',
    ]);
    expect(ciProfilesOf(findGiProfile(a100, '2g.10gb')).map((c) => `${c.name}:${c.id}${c.isDefault ? '*' : ''}`)).toEqual([
      '1c.2g.10gb:0',
      '2g.10gb:1*',
    ]);
    expect(ciProfilesOf(findGiProfile(a100, '7g.40gb')).map((c) => c.name)).toEqual([
      '1c.7g.40gb',
      '2c.7g.40gb',
      '3c.7g.40gb',
      '4c.7g.40gb',
      '7g.40gb',
    ]);
  });
});

describe('catalogue invariants', () => {
  it.each(GPU_MODELS.map((m) => [m.name, m] as const))('%s is self-consistent', (_name, m) => {
    const names = m.giProfiles.map((p) => p.name);
    expect(new Set(names).size).toBe(names.length);
    const ids = m.giProfiles.map((p) => p.id).filter((id) => id !== null);
    expect(new Set(ids).size).toBe(ids.length);
    for (const p of m.giProfiles) {
      expect(p.computeSlices).toBeLessThanOrEqual(m.computeSlices);
      expect(p.maxCount).toBeGreaterThanOrEqual(1);
      expect(p.maxCount).toBeLessThanOrEqual(p.placements.length);
      for (const pl of p.placements) {
        expect(pl.start + pl.size).toBeLessThanOrEqual(m.placementUnits);
        expect(pl.size).toBe(p.placements[0]?.size);
      }
      // The name's memory is the memory slices' share of the GPU, rounded as NVIDIA names it.
      const gb = Number(/\.(\d+)gb/.exec(p.name)?.[1]);
      expect(Math.abs(gb - (m.memoryGB * p.memorySlices) / m.memorySlices)).toBeLessThanOrEqual(m.memoryGB / m.memorySlices / 2 + 1.5);
    }
    expect(m.sources.length).toBeGreaterThan(0);
  });

  it('no two families share a name, alias, product name or PCI ID', () => {
    const seen = new Map<string, string>();
    for (const m of GPU_MODELS) {
      for (const key of [m.name, ...m.aliases, ...m.productNames, ...m.pciDeviceIds].map((s) => s.toUpperCase())) {
        const owner = seen.get(key);
        if (owner && owner !== m.name) throw new Error(`${key} belongs to ${owner} and ${m.name}`);
        seen.set(key, m.name);
      }
    }
  });
});

describe('resolving GPU names', () => {
  it.each([
    ['NVIDIA A100-SXM4-40GB', 'A100-40GB'],
    ['A100-SXM4-40GB', 'A100-40GB'],
    ['a100-pcie-40gb', 'A100-40GB'],
    ['0x20B010DE', 'A100-40GB'],
    ['0x20b010de:0x134f10de', 'A100-40GB'],
    ['0x2330', 'H100-80GB'],
    ['A30', 'A30-24GB'],
    ['A100-SXM4-80GB', 'A100-80GB'],
    ['A100-PCIE-80GB', 'A100-80GB'],
    ['NVIDIA A100 80GB PCIe', 'A100-80GB'],
    ['H100-80GB', 'H100-80GB'],
    ['NVIDIA H100 80GB HBM3', 'H100-80GB'],
    ['H100-PCIE', 'H100-PCIE-80GB'],
    ['h100 nvl', 'H100-NVL-94GB'],
    ['H200', 'H200-141GB'],
    ['NVIDIA H200 NVL', 'H200-141GB'],
    ['GH200', 'H100-96GB'],
    ['NVIDIA GH200 144G HBM3e', 'GH200-144GB'],
    ['B200', 'B200-180GB'],
    ['0x2BB510DE', 'RTX-PRO-6000'],
  ])('%s -> %s', (input, name) => {
    expect(resolveGpuModel(input).name).toBe(name);
  });

  it('a short name for parts of different geometry lists the candidates', () => {
    expect(() => resolveGpuModel('A100')).toThrow(/ambiguous.*A100-40GB, A100-80GB/);
    expect(() => resolveGpuModel('H100')).toThrow(/ambiguous.*H100-80GB.*H100-PCIE-80GB.*H100-NVL-94GB/);
  });

  it('an unknown GPU names the valid ones', () => {
    expect(() => resolveGpuModel('V100')).toThrow(MigpoolError);
    expect(() => resolveGpuModel('V100')).toThrow(/unknown GPU 'V100': use one of A30-24GB, A100-40GB/);
    expect(() => resolveGpuModel('0x1DB610DE')).toThrow(/unknown GPU PCI ID/);
  });

  it('a profile of another GPU says whose it is', () => {
    expect(() => findGiProfile(resolveGpuModel('A100-40GB'), '1g.24gb')).toThrow(
      /profile '1g.24gb' is not offered by A100-40GB \(it is a profile of H100-NVL-94GB.*RTX-PRO-6000\); A100-40GB offers 1g.5gb/,
    );
    expect(findGiProfile(resolveGpuModel('A100-40GB'), 'MIG 3g.20gb').id).toBe(9);
    expect(findGiProfile(resolveGpuModel('A100-40GB'), '9').name).toBe('3g.20gb');
  });
});

/** The GPU names mig-parted writes in the comment above a config: `# H100-80GB, H800-80GB, ...`. */
function commentedGpus(pair: Pair): string[] {
  const comment = (pair.key as Scalar).commentBefore ?? '';
  const last = comment.trim().split('\n').pop() ?? '';
  return last.split(',').map((s) => s.trim()).filter((s) => s.length > 0);
}

/** Profiles config-default.yaml names without saying for which GPU; no capture shows their owner. */
const UNASSIGNED = ['3g.95gb', '4g.95gb', '7g.189gb'];

describe("mig-parted's config-default.yaml", () => {
  const doc = parseDocument(readFileSync(new URL('../../../test/fixtures/mig-parted/config-default.yaml', import.meta.url), 'utf8'));
  const configs = doc.get('mig-configs') as YAMLMap;
  const pairs = configs.items as Pair[];

  it('has its 81 configs', () => {
    expect(pairs.length).toBe(81);
  });

  it.each(pairs.map((p) => [String((p.key as Scalar).value), p] as const))('%s resolves on the GPUs it is meant for', (_name, pair) => {
    const entries = pair.value;
    if (!isSeq(entries)) throw new Error('config is not a list');
    for (const entry of entries.items) {
      if (!isMap(entry)) throw new Error('entry is not a map');
      const devices = entry.get('mig-devices');
      const profiles = isMap(devices) ? (devices.items as Pair[]).map((d) => String((d.key as Scalar).value)) : [];
      if (profiles.length === 0) continue;
      const filter = entry.toJSON()['device-filter'] as string | string[] | undefined;
      const targets = filter
        ? [filter].flat().map((id) => resolveGpuModel(id))
        : commentedGpus(pair).map((g) => resolveGpuModel(g));
      if (targets.length === 0) {
        // No filter and no comment: the profile must exist on some catalogued GPU, except the three
        // that mig-parted lists for no GPU (probably pre-production GB200 boards; see blackwell.ts).
        for (const profile of profiles.filter((p) => !UNASSIGNED.includes(p))) {
          expect(GPU_MODELS.some((m) => m.giProfiles.some((p) => p.name === profile)), `${profile} on any GPU`).toBe(true);
        }
        continue;
      }
      for (const model of targets) for (const profile of profiles) expect(() => findGiProfile(model, profile)).not.toThrow();
    }
  });
});
