import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MigpoolError } from '../errors.js';
import { matchEntries, parseMigPartedConfig, parseMigProfileName, parsePciDeviceId, resolveSelectedConfigName, selectConfig } from './config.js';
import type { GpuIdentity, MigConfigEntry } from './config.js';

const FIXTURES = join(import.meta.dirname, '../../test/fixtures/mig-parted');
const read = (name: string): string => readFileSync(join(FIXTURES, name), 'utf8');

function errorOf(f: () => unknown): MigpoolError {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(MigpoolError);
    return e as MigpoolError;
  }
  throw new Error('expected an error');
}

const v1 = (body: string): string => `version: v1\nmig-configs:\n${body}`;

describe('parseMigPartedConfig: NVIDIA files', () => {
  it('reads all 81 configs of config-default.yaml, with every profile name', () => {
    const config = parseMigPartedConfig(read('config-default.yaml'), 'config-default.yaml');
    expect(config.version).toBe('v1');
    expect(config.configs.size).toBe(81);
    expect([...config.configs.keys()].slice(0, 3)).toEqual(['all-disabled', 'all-enabled', 'all-1g.5gb']);
    for (const entries of config.configs.values()) {
      expect(entries.length).toBeGreaterThan(0);
      for (const e of entries) for (const name of Object.keys(e.migDevices)) expect(() => parseMigProfileName(name)).not.toThrow();
    }
    expect(selectConfig(config, 'all-enabled')).toEqual([{ devices: 'all', deviceFilter: null, migEnabled: true, migDevices: {}, line: 8 }]);
    expect(selectConfig(config, 'all-1g.24gb-me')[0]?.migDevices).toEqual({ '1g.24gb-me': 4 });
    const withFilter = [...config.configs.values()].flat().filter((e) => e.deviceFilter !== null);
    expect(withFilter.length).toBe(16);
    expect(withFilter.some((e) => e.deviceFilter?.length === 1 && e.deviceFilter[0] === '0x20B710DE')).toBe(true);
  });

  it('reads example-config.yaml with its per-index entries', () => {
    const config = parseMigPartedConfig(read('example-config.yaml'), 'example-config.yaml');
    expect([...config.configs.keys()]).toContain('custom-config');
    const custom = selectConfig(config, 'custom-config');
    expect(custom.map((e) => e.devices)).toEqual([[0, 1, 2, 3], [4], [5], [6], [7]]);
    expect(custom[0]).toMatchObject({ migEnabled: false, migDevices: {} });
    expect(custom[4]?.migDevices).toEqual({ '1g.5gb': 2, '2g.10gb': 1, '3g.20gb': 1 });
    expect(custom[4]?.line).toBe(custom[3] ? custom[3].line + 4 : -1);
  });
});

describe('parseMigPartedConfig: rejections name file:line and field', () => {
  const dir = join(FIXTURES, 'invalid');
  const files = readdirSync(dir).filter((f) => f.endsWith('.yaml') && !f.startsWith('hooks-'));
  it('has the invalid fixtures', () => expect(files.length).toBeGreaterThanOrEqual(18));
  for (const name of files) {
    it(name, () => {
      const text = readFileSync(join(dir, name), 'utf8');
      const [, line, field] = /^# expect: (\d+) ?(.*)$/m.exec(text) ?? [];
      const file = `invalid/${name}`;
      const err = errorOf(() => parseMigPartedConfig(text, file));
      expect(err.code).toBe('BAD_INPUT');
      expect(err.message).not.toContain('\n');
      expect(err.message.startsWith(field ? `${file}:${line}: ${field}: ` : `${file}:${line}: `)).toBe(true);
      expect(err.details).toMatchObject({ file, line: Number(line) });
    });
  }

  it('says what is valid', () => {
    const cases: [string, RegExp][] = [
      ['unknown-version.yaml', /only valid value is v1/],
      ['devices-bad-string.yaml', /all, or a list of GPU indices/],
      ['bad-profile-name.yaml', /'MIG 2g.10gb'.*malformed number.*1g\.5gb\+me/],
      ['negative-count.yaml', /whole numbers >= 0/],
      ['device-filter-unquoted.yaml', /unquoted hex ID reads as a number/],
      ['mig-devices-when-disabled.yaml', /set mig-enabled: true or remove mig-devices/],
      ['missing-mig-devices.yaml', /required when mig-enabled is true/],
      ['duplicate-config.yaml', /not valid YAML: Map keys must be unique/],
    ];
    for (const [name, pattern] of cases) {
      expect(errorOf(() => parseMigPartedConfig(read(`invalid/${name}`), name)).message).toMatch(pattern);
    }
  });

  it('finds duplicate keys at any depth, at the second key, and tells 1 from "1" as the yaml package does', () => {
    expect(errorOf(() => parseMigPartedConfig(v1('  a: [{devices: all, mig-enabled: false}]\n  b: [{devices: all, mig-enabled: false}]\n  a: [{devices: all, mig-enabled: true}]\n'), 'd.yaml')).message).toBe(
      'd.yaml:5: not valid YAML: Map keys must be unique; fix the YAML syntax',
    );
    expect(errorOf(() => parseMigPartedConfig(v1('  a:\n    - devices: all\n      mig-enabled: false\n      devices: [0]\n'), 'd.yaml')).message).toMatch(/^d\.yaml:6: not valid YAML: Map keys must be unique/);
    const config = parseMigPartedConfig(v1('  1: [{devices: all, mig-enabled: false}]\n  "1 ": [{devices: all, mig-enabled: false}]\n'), 'k.yaml');
    expect([...config.configs.keys()]).toEqual(['1', '1 ']);
  });

  it('reads 40,000 configs (2 MB) in seconds: the yaml package\'s own duplicate-key check, quadratic, took 28 s', { timeout: 15_000 }, () => {
    const text = v1(Array.from({ length: 40_000 }, (_, i) => `  c${i}:\n    - devices: all\n      mig-enabled: false\n`).join(''));
    expect(parseMigPartedConfig(text, 'many.yaml').configs.size).toBe(40_000);
  });

  it('follows the rest of spec.go', () => {
    expect(errorOf(() => parseMigPartedConfig('', 'e.yaml')).message).toMatch(/^e\.yaml:1: the file is empty/);
    expect(errorOf(() => parseMigPartedConfig('- a\n', 'l.yaml')).message).toMatch(/^l\.yaml:1: expected a mapping/);
    expect(errorOf(() => parseMigPartedConfig('version: 1\n', 'n.yaml')).message).toMatch(/^n\.yaml:1: version: unknown version 1/);
    expect(errorOf(() => parseMigPartedConfig('version: v1\nmig-configs:\n', 'x.yaml')).message).toMatch(/^x\.yaml:2: mig-configs: at least one/);
    expect(errorOf(() => parseMigPartedConfig(v1('  a:\n'), 'x.yaml')).message).toMatch(/^x\.yaml:3: mig-configs\.a: at least one/);
    expect(errorOf(() => parseMigPartedConfig(v1('  a: [null]\n'), 'x.yaml')).message).toMatch(/^x\.yaml:3: mig-configs\.a\[0\]: expected a mapping/);
    expect(errorOf(() => parseMigPartedConfig(v1('  a: [{devices: {}, mig-enabled: false}]\n'), 'x.yaml')).message).toMatch(/mig-configs\.a\[0\]\.devices: invalid value a mapping/);
    expect(errorOf(() => parseMigPartedConfig(v1('  a: [{devices: ~, mig-enabled: false}]\n'), 'x.yaml')).message).toMatch(/\.devices: invalid value nothing/);
    expect(errorOf(() => parseMigPartedConfig(v1('  a: [{devices: all, mig-enabled: ~}]\n'), 'x.yaml')).message).toMatch(/\.mig-enabled: must be true or false/);
    expect(errorOf(() => parseMigPartedConfig(v1('  a: [{devices: all, mig-enabled: true, mig-devices: {"1g.5gb": 1.5}}]\n'), 'x.yaml')).message).toMatch(/mig-devices\.1g\.5gb: invalid count 1\.5/);
    expect(errorOf(() => parseMigPartedConfig(v1('  a: [{devices: all, mig-enabled: true, mig-devices: {"1g.5gb": "7"}}]\n'), 'x.yaml')).message).toMatch(/invalid count "7"/);
    expect(errorOf(() => parseMigPartedConfig(v1('  a: [{devices: all, mig-enabled: true, mig-devices: [1]}]\n'), 'x.yaml')).message).toMatch(/mig-devices: expected a mapping/);
    expect(errorOf(() => parseMigPartedConfig(v1('  a: [{devices: all, mig-enabled: false, device-filter: {a: 1}}]\n'), 'x.yaml')).message).toMatch(/device-filter: must be a string/);
    expect(errorOf(() => parseMigPartedConfig(v1('  a: [{devices: [x], mig-enabled: false}]\n'), 'x.yaml')).message).toMatch(/devices\[0\]: invalid device "x"/);
    expect(errorOf(() => parseMigPartedConfig('version: v1\n---\nversion: v1\n', 'm.yaml')).message).toMatch(/^m\.yaml:\d+: not valid YAML/);
  });

  it('accepts what mig-parted accepts', () => {
    // Only a version: accepted, no configs (spec_test.go "Only version field").
    expect(parseMigPartedConfig('version: v1\n', 'v.yaml').configs.size).toBe(0);
    const c = parseMigPartedConfig(
      v1(
        [
          '  a:',
          '    - devices: [0, 1.0, -1, GPU-5d1f7a3e-1c2b-4a5e-8f9d-0123456789ab]',
          '      device-filter: "0x20B010DE:0x145F10DE"',
          '      mig-enabled: yes', // YAML 1.1, as go-yaml v2
          '      mig-devices: {"1g.5gb": 0, "1c.3g.20gb": 2, "0g.0gb": 1, "1g.24gb+me.all": 1, "1g.24gb+gfx": 1, "2g.48gb-me": 1}',
          '    - devices: all',
          '      device-filter: ""',
          '      mig-enabled: true',
          '      mig-devices:',
          '    - devices: []',
          '      device-filter: []',
          '      mig-enabled: false',
          '      mig-devices: {}',
        ].join('\n'),
      ),
      'ok.yaml',
    );
    const [a, b, d] = selectConfig(c, 'a');
    expect(a).toEqual({
      devices: [0, 1, -1, 'GPU-5d1f7a3e-1c2b-4a5e-8f9d-0123456789ab'],
      deviceFilter: ['0x20B010DE:0x145F10DE'],
      migEnabled: true,
      migDevices: { '1g.5gb': 0, '1c.3g.20gb': 2, '0g.0gb': 1, '1g.24gb+me.all': 1, '1g.24gb+gfx': 1, '2g.48gb-me': 1 },
      line: 4,
    });
    expect(b).toMatchObject({ devices: 'all', deviceFilter: null, migEnabled: true, migDevices: {}, line: 8 });
    expect(d).toMatchObject({ devices: [], deviceFilter: null, migEnabled: false, line: 12 });
  });

  it('resolves anchors and merge keys', () => {
    const c = parseMigPartedConfig(
      v1(['  a:', '    - &base {devices: all, mig-enabled: true, mig-devices: {"1g.5gb": 7}}', '  b:', '    - <<: *base', '      devices: [0]', '  c:', '    - *base'].join('\n')),
      'anchors.yaml',
    );
    expect(selectConfig(c, 'b')[0]).toMatchObject({ devices: [0], migEnabled: true, migDevices: { '1g.5gb': 7 } });
    expect(selectConfig(c, 'c')[0]).toMatchObject({ devices: 'all', migDevices: { '1g.5gb': 7 } });
  });
});

describe('parseMigProfileName (go-nvlib parseMigProfile syntax)', () => {
  it('parses the forms mig-parted accepts', () => {
    expect(parseMigProfileName('1g.5gb')).toEqual({ computeSlices: null, gpuSlices: 1, memoryGB: 5, attributes: [], negatedAttributes: [] });
    expect(parseMigProfileName('1c.3g.20gb')).toMatchObject({ computeSlices: 1, gpuSlices: 3, memoryGB: 20 });
    expect(parseMigProfileName('1g.5gb+me').attributes).toEqual(['me']);
    expect(parseMigProfileName('1g.24gb+me.all').attributes).toEqual(['me.all']);
    expect(parseMigProfileName('1g.24gb+gfx').attributes).toEqual(['gfx']);
    expect(parseMigProfileName('1c.1g.5gb+me,gfx').attributes).toEqual(['me', 'gfx']);
    expect(parseMigProfileName('1g.24gb-me')).toMatchObject({ attributes: [], negatedAttributes: ['me'] });
    expect(parseMigProfileName('0g.0gb').gpuSlices).toBe(0);
  });

  it('rejects what it rejects', () => {
    for (const bad of ['', 'MIG 1g.5gb', ' 1g.5gb', '1g.5gb ', '1 g.5gb', '1g.5', 'g.5gb', '1g.gb', '1r.1g.5gb', '1g.5gbk', '1c.f1g.5gb', '1g.5gb+', '1g.5gb+me,', '1g.5gb+me,me', '1g.5gb+2me', '1g.5gb+.me', '1g.5gb+me.', '1g.5gb*me', '1g.5gb+me-x', '1g.5gb-', 'bogus', '1c.1g.5gb.me']) {
      const err = errorOf(() => parseMigProfileName(bad));
      expect(err.code).toBe('BAD_INPUT');
      expect(err.message).toMatch(/is not a MIG profile name.*e\.g\. 1g\.5gb/);
    }
  });
});

describe('parsePciDeviceId (device.go NewDeviceIDFromString)', () => {
  it('parses device+vendor and the optional subsystem, with Go ParseUint base 0', () => {
    expect(parsePciDeviceId('0x20B010DE')).toEqual({ device: 0x20b0, vendor: 0x10de, subsystem: null });
    expect(parsePciDeviceId('0x25B610DE:0x14A910DE')).toEqual({ device: 0x25b6, vendor: 0x10de, subsystem: { device: 0x14a9, vendor: 0x10de } });
    expect(parsePciDeviceId('548409566')).toEqual({ device: 0x20b0, vendor: 0x10de, subsystem: null });
    expect(parsePciDeviceId('0x20B0_10DE')).toEqual({ device: 0x20b0, vendor: 0x10de, subsystem: null });
    for (const bad of ['', 'A100', '0x', '0x1_', '0x__1', '0x1FFFFFFFF', '0x20B010DE:', '0x20B010DE:x', '0x1:0x2:0x3', ' 0x20B010DE', '+0x20B010DE']) {
      expect(parsePciDeviceId(bad)).toBeNull();
    }
  });
});

describe('selectConfig', () => {
  const config = parseMigPartedConfig(read('example-config.yaml'), 'example-config.yaml');
  it('returns the entries or lists the names', () => {
    expect(selectConfig(config, 'all-balanced')).toHaveLength(1);
    const err = errorOf(() => selectConfig(config, 'all-balance'));
    expect(err.code).toBe('BAD_INPUT');
    expect(err.message).toBe(`example-config.yaml: no config named 'all-balance'; available: ${[...config.configs.keys()].join(', ')}`);
  });
  it('needs a name unless the file has one config (assert.go GetSelectedMigConfig)', () => {
    expect(errorOf(() => selectConfig(config)).message).toMatch(/no config selected and the file has 9/);
    const one = parseMigPartedConfig(v1('  only:\n    - {devices: all, mig-enabled: false}\n'), 'one.yaml');
    expect(resolveSelectedConfigName(one)).toBe('only');
    expect(selectConfig(one, '')).toHaveLength(1);
    expect(errorOf(() => selectConfig(parseMigPartedConfig('version: v1\n', 'v.yaml'), 'x')).message).toMatch(/the file defines no configs/);
  });
});

describe('matchEntries', () => {
  const A100_40 = '0x20B010DE';
  const A100_80 = '0x20B210DE';
  const H100 = '0x233010DE';
  const gpu = (index: number, pciDeviceId: string, extra: Partial<GpuIdentity> = {}): GpuIdentity => ({ index, uuid: `GPU-0000000${index}-0000-0000-0000-000000000000`, pciDeviceId, ...extra });
  const entry = (e: Partial<MigConfigEntry>): MigConfigEntry => ({ devices: 'all', deviceFilter: null, migEnabled: true, migDevices: { '1g.5gb': 7 }, line: 1, ...e });

  it('devices: all selects every GPU; indices and UUIDs select those GPUs', () => {
    const gpus = [gpu(0, A100_40), gpu(1, A100_40), gpu(2, A100_40)];
    expect(matchEntries([entry({})], gpus).assignments.map((a) => a.gpu.index)).toEqual([0, 1, 2]);
    const r = matchEntries([entry({ devices: [0, 'gpu-00000002-0000-0000-0000-000000000000'] })], gpus);
    expect(r.assignments.map((a) => a.gpu.index)).toEqual([0, 2]);
    expect(r.untouchedGpus.map((g) => g.index)).toEqual([1]);
  });

  it('device-filter: one ID or any of a list; a subsystem part must match too', () => {
    const gpus = [gpu(0, A100_40, { subsystemId: '0x145F10DE' }), gpu(1, A100_80), gpu(2, H100)];
    const pick = (deviceFilter: string[] | null): number[] => matchEntries([entry({ deviceFilter })], gpus).assignments.map((a) => a.gpu.index);
    expect(pick([A100_40])).toEqual([0]);
    expect(pick([A100_80, H100])).toEqual([1, 2]);
    expect(pick(['0x20b010de'])).toEqual([0]);
    expect(pick([`${A100_40}:0x145F10DE`])).toEqual([0]);
    expect(() => pick([`${A100_40}:0x147E10DE`])).toThrow(/selects none/);
    // Unknown subsystem is 0: only a zero subsystem filter matches it (device_test.go).
    expect(pick([`${A100_80}:0x00000000`])).toEqual([1]);
    expect(pick(null)).toEqual([0, 1, 2]);
  });

  it('filters and indices combine; entries for other models are unused', () => {
    const gpus = [gpu(0, A100_40), gpu(1, A100_40), gpu(2, H100), gpu(3, H100)];
    const entries = [
      entry({ deviceFilter: [A100_40], devices: [0], migEnabled: false, migDevices: {} }),
      entry({ deviceFilter: [H100], devices: [2, 3], migDevices: { '3g.40gb': 2 } }),
      entry({ deviceFilter: ['0x233510DE'], devices: 'all' }),
    ];
    const r = matchEntries(entries, gpus, { file: 'c.yaml', configName: 'mixed' });
    expect(r.assignments.map((a) => [a.gpu.index, a.entryIndex])).toEqual([
      [0, 0],
      [2, 1],
      [3, 1],
    ]);
    expect(r.untouchedGpus.map((g) => g.index)).toEqual([1]);
    expect(r.unusedEntries).toEqual([2]);
  });

  it('several entries on one GPU: allowed when they agree (the last is the assignment), an error when not', () => {
    const gpus = [gpu(0, A100_40), gpu(1, A100_40)];
    const same = matchEntries([entry({ line: 4 }), entry({ devices: [1], migDevices: { '1g.5gb': 7, '2g.10gb': 0 }, line: 9 })], gpus);
    expect(same.assignments[1]).toMatchObject({ entryIndex: 1, matchedEntries: [0, 1] });
    const err = errorOf(() => matchEntries([entry({ line: 4 }), entry({ devices: [1], migDevices: { '3g.20gb': 2 }, line: 9 })], gpus, { file: 'c.yaml', configName: 'x' }));
    expect(err.code).toBe('BAD_INPUT');
    expect(err.message).toMatch(/^c\.yaml:9: mig-configs\.x\[1\]: selects GPU 1, which entry \[0\] \(line 4\) also selects with different settings/);
    expect(() => matchEntries([entry({ migEnabled: false, migDevices: {} }), entry({ devices: [0] })], gpus)).toThrow(/different settings/);
  });

  it('reports a config that selects no GPU', () => {
    const err = errorOf(() => matchEntries([entry({ deviceFilter: [H100], line: 7 })], [gpu(0, A100_40)], { file: 'c.yaml', configName: 'all-3g.40gb' }));
    expect(err.code).toBe('BAD_INPUT');
    expect(err.message).toMatch(/^c\.yaml:7: mig-configs\.all-3g\.40gb: selects none of the 1 GPU\(s\) here \(0: 0x20B010DE\); its entries want \[0\] device-filter 0x233010DE devices all;/);
    expect(() => matchEntries([entry({ devices: [5] })], [gpu(0, A100_40)])).toThrow(/selects none/);
    expect(() => matchEntries([entry({})], [])).toThrow(/selects none of the 0 GPU/);
  });

  it('skips non-MIG-capable GPUs as mig-parted apply does', () => {
    const gpus = [gpu(0, A100_40), gpu(1, '0x1DB610DE', { migCapable: false })];
    const r = matchEntries([entry({})], gpus);
    expect(r.assignments.map((a) => a.gpu.index)).toEqual([0]);
    expect(r.skippedNotMigCapable.map((s) => s.gpu.index)).toEqual([1]);
    expect(r.untouchedGpus).toEqual([]);
    expect(matchEntries([entry({ devices: [0, 1], migEnabled: false, migDevices: {} })], gpus).skippedNotMigCapable).toHaveLength(1);
    expect(() => matchEntries([entry({ devices: [0, 1] })], gpus)).toThrow(/GPU 1 is not MIG-capable/);
  });

  it('rejects a GPU with a malformed PCI ID when a filter needs it', () => {
    expect(() => matchEntries([entry({ deviceFilter: [A100_40] })], [gpu(0, 'A100')])).toThrow(/PCI device ID 'A100' is malformed/);
  });

  it('matches the whole config-default.yaml against an A100-40GB box', () => {
    const config = parseMigPartedConfig(read('config-default.yaml'), 'config-default.yaml');
    const gpus = [0, 1, 2, 3].map((i) => gpu(i, A100_40));
    const balanced = matchEntries(selectConfig(config, 'all-balanced'), gpus, { file: config.file, configName: 'all-balanced' });
    expect(balanced.assignments).toHaveLength(4);
    expect(balanced.assignments[0]?.entry.migDevices).toEqual({ '1g.5gb': 2, '2g.10gb': 1, '3g.20gb': 1 });
  });
});
