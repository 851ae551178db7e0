import { describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { MigpoolError } from '../errors.js';
import {
  exportK8s,
  exportMigPartedConfig,
  exportMigPartedJson,
  exportMigPartedYaml,
  exportSlurm,
  k8sMigResourceName,
  type ExportGpu,
} from './export.js';

const A100_40 = { pciDeviceId: '0x20B010DE', productName: 'NVIDIA A100-SXM4-40GB' };
const A100_80 = { pciDeviceId: '0x20B210DE', productName: 'NVIDIA A100-SXM4-80GB' };
const H100 = { pciDeviceId: '0x233010DE', productName: 'NVIDIA H100 80GB HBM3' };

function gpu(index: number, kind: typeof A100_40, migDevices: Record<string, number> | null): ExportGpu {
  return { index, uuid: `GPU-${index}`, ...kind, migEnabled: migDevices !== null, migDevices: migDevices ?? {} };
}

function entries(gpus: ExportGpu[]) {
  return exportMigPartedConfig(gpus)['mig-configs']['current'];
}

describe('exportMigPartedConfig: mig-parted export merge rules', () => {
  it('writes an empty list for a node without GPUs', () => {
    expect(exportMigPartedConfig([])).toEqual({ version: 'v1', 'mig-configs': { current: [] } });
  });

  it('collapses identical GPUs into one entry for all devices, without a device filter', () => {
    const seven = { '1g.5gb': 7 };
    expect(entries([gpu(0, A100_40, seven), gpu(1, A100_40, seven)])).toEqual([
      { devices: 'all', 'mig-enabled': true, 'mig-devices': { '1g.5gb': 7 } },
    ]);
  });

  it('merges 30,000 GPUs into one entry per layout, devices in order (merging sorted lists GPU by GPU took minutes: advise --count 100000 ran over 5 minutes)', () => {
    const n = 30_000;
    const gpus = Array.from({ length: n }, (_, i) => gpu(i, i % 2 === 0 ? A100_40 : A100_80, i % 3 === 0 ? null : { '3g.20gb': 2 }));
    const [disabled, enabled] = entries(gpus) ?? [];
    expect(disabled).toMatchObject({ 'device-filter': ['0x20B010DE', '0x20B210DE'], 'mig-enabled': false });
    expect(disabled?.devices).toEqual(Array.from({ length: n / 3 }, (_, k) => 3 * k));
    expect(enabled?.devices).toHaveLength(n - n / 3);
    expect((enabled?.devices as number[]).slice(0, 4)).toEqual([1, 2, 4, 5]);
  });

  it('writes mig-devices {} for a MIG-disabled GPU and ignores any counts passed for it', () => {
    const g = { ...gpu(0, A100_40, null), migDevices: { '1g.5gb': 3 } };
    expect(entries([g])).toEqual([{ devices: 'all', 'mig-enabled': false, 'mig-devices': {} }]);
  });

  it('one PCI ID, different configs: index lists and no filter (export_test "Single Filter - Different Config")', () => {
    expect(entries([gpu(0, A100_40, null), gpu(1, A100_40, { '3g.20gb': 2 })])).toEqual([
      { devices: [0], 'mig-enabled': false, 'mig-devices': {} },
      { devices: [1], 'mig-enabled': true, 'mig-devices': { '3g.20gb': 2 } },
    ]);
  });

  it('two PCI IDs, same config everywhere: one entry, all, no filter ("Multi Filter - Same Config")', () => {
    expect(entries([gpu(0, A100_40, null), gpu(1, A100_80, null)])).toEqual([
      { devices: 'all', 'mig-enabled': false, 'mig-devices': {} },
    ]);
  });

  it('one config per PCI ID: the filter as a string and devices all ("Same config per filter")', () => {
    const got = entries([gpu(0, A100_40, null), gpu(1, A100_40, null), gpu(2, A100_80, { '7g.80gb': 1 }), gpu(3, A100_80, { '7g.80gb': 1 })]);
    expect(got).toEqual([
      { 'device-filter': '0x20B010DE', devices: 'all', 'mig-enabled': false, 'mig-devices': {} },
      { 'device-filter': '0x20B210DE', devices: 'all', 'mig-enabled': true, 'mig-devices': { '7g.80gb': 1 } },
    ]);
    expect(Object.keys(got?.[0] ?? {})).toEqual(['device-filter', 'devices', 'mig-enabled', 'mig-devices']);
  });

  it('configs that cut across PCI IDs: filter lists and index lists ("Common config across devices")', () => {
    const on = { '1g.5gb': 2 };
    const on80 = { '1g.5gb': 2 };
    expect(entries([gpu(0, A100_40, null), gpu(1, A100_40, on), gpu(2, A100_80, null), gpu(3, A100_80, on80)])).toEqual([
      { 'device-filter': ['0x20B010DE', '0x20B210DE'], devices: [0, 2], 'mig-enabled': false, 'mig-devices': {} },
      { 'device-filter': ['0x20B010DE', '0x20B210DE'], devices: [1, 3], 'mig-enabled': true, 'mig-devices': { '1g.5gb': 2 } },
    ]);
  });

  it('orders entries by first GPU index whatever the input order, and sorts mig-devices keys', () => {
    const got = entries([gpu(2, A100_40, { '3g.20gb': 1, '1g.5gb': 4 }), gpu(0, A100_40, null), gpu(1, A100_40, { '1g.5gb': 4, '3g.20gb': 1 })]);
    expect(got).toEqual([
      { devices: [0], 'mig-enabled': false, 'mig-devices': {} },
      { devices: [1, 2], 'mig-enabled': true, 'mig-devices': { '1g.5gb': 4, '3g.20gb': 1 } },
    ]);
    expect(Object.keys(got?.[1]?.['mig-devices'] ?? {})).toEqual(['1g.5gb', '3g.20gb']);
  });

  it('normalises PCI IDs to 0x%04X%04X, drops zero counts, keeps CI profiles as given', () => {
    const cfg = exportMigPartedConfig(
      [
        { ...gpu(0, A100_40, { '1c.3g.20gb': 3, '4g.20gb': 1, '1g.5gb': 0 }), pciDeviceId: '0x20b010de' },
        gpu(1, A100_80, null),
      ],
      'now',
    );
    expect(cfg['mig-configs']['now']).toEqual([
      { 'device-filter': '0x20B010DE', devices: 'all', 'mig-enabled': true, 'mig-devices': { '1c.3g.20gb': 3, '4g.20gb': 1 } },
      { 'device-filter': '0x20B210DE', devices: 'all', 'mig-enabled': false, 'mig-devices': {} },
    ]);
  });

  it('rejects bad input with a MigpoolError that names the GPU', () => {
    expect(() => exportMigPartedConfig([gpu(0, A100_40, { '1g.5': 1 })])).toThrow(/GPU 0: '1g.5' is not a MIG profile/);
    expect(() => exportMigPartedConfig([gpu(0, A100_40, { '1g.5gb': -1 })])).toThrow(MigpoolError);
    expect(() => exportMigPartedConfig([gpu(0, A100_40, null), gpu(0, A100_40, null)])).toThrow(/listed twice/);
    expect(() => exportMigPartedConfig([{ ...gpu(0, A100_40, null), pciDeviceId: '20B0' }])).toThrow(/PCI device ID/);
  });
});

describe('exportMigPartedYaml / Json', () => {
  const node = [gpu(0, A100_40, null), gpu(1, A100_40, { '1g.5gb': 7 }), gpu(2, A100_80, { '1g.5gb+me': 1, '3g.40gb': 1 })];

  it('lays YAML out like mig-parted (yaml.v2): flow lists, quoted PCI IDs, unindented sequences', () => {
    expect(exportMigPartedYaml(node)).toBe(
      [
        'version: v1',
        'mig-configs:',
        '  current:',
        '  - device-filter: "0x20B010DE"',
        '    devices: [0]',
        '    mig-enabled: false',
        '    mig-devices: {}',
        '  - device-filter: "0x20B010DE"',
        '    devices: [1]',
        '    mig-enabled: true',
        '    mig-devices:',
        '      1g.5gb: 7',
        '  - device-filter: "0x20B210DE"',
        '    devices: all',
        '    mig-enabled: true',
        '    mig-devices:',
        '      1g.5gb+me: 1',
        '      3g.40gb: 1',
        '',
      ].join('\n'),
    );
  });

  it('round-trips: YAML and JSON parse back to the config object', () => {
    const cfg = exportMigPartedConfig(node, 'x');
    expect(YAML.parse(exportMigPartedYaml(node, 'x'))).toEqual(cfg);
    expect(JSON.parse(exportMigPartedJson(node, 'x'))).toEqual(cfg);
    expect(exportMigPartedJson(node, 'x')).toContain('\n  "mig-configs": {\n    "x": [');
  });
});

describe('exportK8s: GPU Operator label and device-plugin resources (mixed)', () => {
  it('names +me resources with a dot and leaves -me alone', () => {
    expect(k8sMigResourceName('1g.5gb')).toBe('nvidia.com/mig-1g.5gb');
    expect(k8sMigResourceName('1g.5gb+me')).toBe('nvidia.com/mig-1g.5gb.me');
    expect(k8sMigResourceName('MIG 2g.48gb+me.all')).toBe('nvidia.com/mig-2g.48gb.me.all');
    expect(k8sMigResourceName('1g.24gb-me')).toBe('nvidia.com/mig-1g.24gb-me');
  });

  it('counts MIG devices across the node and whole GPUs as nvidia.com/gpu, in a fixed order', () => {
    const k = exportK8s([gpu(1, A100_40, { '3g.20gb': 1, '1g.5gb': 3, '1g.5gb+me': 1 }), gpu(0, A100_40, { '1g.5gb': 7 }), gpu(2, A100_40, null)], 'mixed-a');
    expect(k.label).toEqual({ 'nvidia.com/mig.config': 'mixed-a' });
    expect(k.resources).toEqual({ 'nvidia.com/gpu': 1, 'nvidia.com/mig-1g.5gb': 10, 'nvidia.com/mig-1g.5gb.me': 1, 'nvidia.com/mig-3g.20gb': 1 });
    expect(Object.keys(k.resources)).toEqual(['nvidia.com/gpu', 'nvidia.com/mig-1g.5gb', 'nvidia.com/mig-1g.5gb.me', 'nvidia.com/mig-3g.20gb']);
    expect(k.warnings).toEqual([]);
    expect(k.text).toContain('nvidia.com/mig.config=mixed-a\n');
    expect(k.text).toContain('nvidia.com/mig-1g.5gb: 10\n');
  });

  it('defaults the label to current and omits nvidia.com/gpu when every GPU is in MIG mode', () => {
    const k = exportK8s([gpu(0, A100_40, { '7g.40gb': 1 })]);
    expect(k.label['nvidia.com/mig.config']).toBe('current');
    expect(k.resources).toEqual({ 'nvidia.com/mig-7g.40gb': 1 });
  });

  it('counts partial compute instances under their GPU instance, with a warning', () => {
    const k = exportK8s([gpu(0, A100_40, { '1c.3g.20gb': 3, '3g.20gb': 1 })]);
    expect(k.resources).toEqual({ 'nvidia.com/mig-3g.20gb': 4 });
    expect(k.warnings.join()).toMatch(/1c\.3g\.20gb is a partial compute instance/);
  });

  it('warns about a MIG-enabled GPU without instances and rejects a bad label value', () => {
    expect(exportK8s([gpu(0, A100_40, {})]).warnings.join()).toMatch(/GPU 0 has MIG enabled but no MIG devices/);
    expect(() => exportK8s([], 'not valid!')).toThrow(MigpoolError);
    expect(() => exportK8s([], 'x'.repeat(64))).toThrow(/label value/);
  });
});

describe('exportSlurm: gres.conf and Gres= as AutoDetect=nvml names them', () => {
  it('names whole GPUs by the lower-cased product name and MIG devices by its part before the first -', () => {
    const s = exportSlurm([gpu(0, A100_40, { '3g.20gb': 1, '1g.5gb': 2, '1g.5gb+me': 1, '1c.2g.10gb': 2 }), gpu(1, A100_40, null)], 'gpu01');
    expect(s.gres).toEqual([
      { gpuIndex: 0, type: 'nvidia_a100_1g.5gb', count: 2, profile: '1g.5gb', files: ['/dev/nvidia0'], filesComplete: false },
      { gpuIndex: 0, type: 'nvidia_a100_1g.5gb', count: 1, profile: '1g.5gb+me', files: ['/dev/nvidia0'], filesComplete: false },
      { gpuIndex: 0, type: 'nvidia_a100_2g.10gb', count: 2, profile: '1c.2g.10gb', files: ['/dev/nvidia0'], filesComplete: false },
      { gpuIndex: 0, type: 'nvidia_a100_3g.20gb', count: 1, profile: '3g.20gb', files: ['/dev/nvidia0'], filesComplete: false },
      { gpuIndex: 1, type: 'nvidia_a100-sxm4-40gb', count: 1, profile: null, files: ['/dev/nvidia1'], filesComplete: true },
    ]);
    expect(s.gresValue).toBe('gpu:nvidia_a100_1g.5gb:3,gpu:nvidia_a100_2g.10gb:2,gpu:nvidia_a100_3g.20gb:1,gpu:nvidia_a100-sxm4-40gb:1');
    expect(s.slurmConfLine).toBe(`NodeName=gpu01 Gres=${s.gresValue}`);
    expect(s.gresConf).toContain('AutoDetect=nvml\n');
    expect(s.gresConf).toContain('NodeName=gpu01 Name=gpu Type=nvidia_a100-sxm4-40gb File=/dev/nvidia1\n');
    expect(s.gresConf.match(/^# NodeName=gpu01 Name=gpu Type=nvidia_a100_1g\.5gb MultipleFiles=\/dev\/nvidia0,/gm)).toHaveLength(3);
    expect(s.text).toContain('GresTypes=gpu\n');
  });

  it('rounds the NVML memory size, not the profile name: H100 7g.80gb is 7g.79gb', () => {
    const s = exportSlurm([gpu(0, H100, { '7g.80gb': 1 }), gpu(1, H100, { '1g.10gb': 7 })], 'h');
    expect(s.gres.map((r) => r.type)).toEqual(['nvidia_h100_80gb_hbm3_7g.79gb', 'nvidia_h100_80gb_hbm3_1g.10gb']);
    expect(s.gresValue).toBe('gpu:nvidia_h100_80gb_hbm3_7g.79gb:1,gpu:nvidia_h100_80gb_hbm3_1g.10gb:7');
  });

  it('under Slurm 23.02.6+ naming, types carry NVIDIA\'s profile names, +me and partial CIs included', () => {
    const s = exportSlurm([gpu(0, A100_40, { '3g.20gb': 1, '1g.5gb+me': 1, '1c.2g.10gb': 2 })], 'n', 'device-name');
    expect(s.gresValue).toBe('gpu:nvidia_a100_1g.5gb+me:1,gpu:nvidia_a100_1c.2g.10gb:2,gpu:nvidia_a100_3g.20gb:1');
  });

  it('falls back to the profile name, with a warning, for a GPU the catalogue does not know', () => {
    const s = exportSlurm([{ ...gpu(0, A100_40, { '1g.5gb': 1 }), pciDeviceId: '0xFFFF10DE', productName: 'NVIDIA Future-X' }], 'n');
    expect(s.gres[0]?.type).toBe('nvidia_future_1g.5gb');
    expect(s.warnings.join()).toMatch(/no measured memory size/);
  });

  it('is deterministic, warns about empty MIG GPUs and checks the node name', () => {
    const node = [gpu(1, A100_40, {}), gpu(0, A100_40, null)];
    expect(exportSlurm(node, 'n1')).toEqual(exportSlurm([...node].reverse(), 'n1'));
    expect(exportSlurm(node, 'n1').warnings.join()).toMatch(/GPU 1 has MIG enabled but no MIG devices/);
    expect(() => exportSlurm(node, 'bad name')).toThrow(/not a Slurm node name/);
    expect(exportSlurm([], 'n1').slurmConfLine).toBe('NodeName=n1');
  });
});
