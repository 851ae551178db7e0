import { describe, expect, it } from 'vitest';
import { resolveGpuModel } from '../mig/catalog/index.js';
import { formatGeneratedJson, generateMigConfig, yamlV2KeyOrder } from './generate-config.js';

describe('yamlV2KeyOrder (gopkg.in/yaml.v2 sorter.go)', () => {
  it('compares runs of digits as numbers and puts other characters before letters', () => {
    const keys = ['all-balanced', 'all-1g.10gb', 'all-disabled', 'all-1g.5gb.me', 'all-1g.5gb', 'all-7g.40gb', 'all-2g.10gb'];
    expect([...keys].sort(yamlV2KeyOrder)).toEqual(['all-1g.5gb', 'all-1g.5gb.me', 'all-1g.10gb', 'all-2g.10gb', 'all-7g.40gb', 'all-balanced', 'all-disabled']);
    expect(['b', 'a1', 'a'].sort(yamlV2KeyOrder)).toEqual(['a', 'a1', 'b']);
  });
});

describe('generateMigConfig (mig-parted pkg/mig/builder)', () => {
  it('A30: a 4-slice balanced config and one all-<profile> per GPU instance profile, + written as .', () => {
    const config = generateMigConfig([{ index: 0, pciDeviceId: '0x20B710DE', model: resolveGpuModel('A30') }]);
    expect(Object.keys(config['mig-configs'])).toEqual(['all-1g.6gb', 'all-1g.6gb.me', 'all-2g.12gb', 'all-2g.12gb.me', 'all-4g.24gb', 'all-balanced', 'all-disabled', 'all-enabled']);
    // The same counts mig-parted hard-codes for the A30 (discovery.go getHardcodedA30Profiles).
    expect(config['mig-configs']['all-1g.6gb']).toEqual([{ devices: 'all', 'mig-enabled': true, 'mig-devices': { '1g.6gb': 4 } }]);
    expect(config['mig-configs']['all-2g.12gb.me']).toEqual([{ devices: 'all', 'mig-enabled': true, 'mig-devices': { '2g.12gb+me': 1 } }]);
    expect(config['mig-configs']['all-balanced']).toEqual([{ devices: 'all', 'mig-enabled': true, 'mig-devices': { '1g.6gb': 2, '2g.12gb': 1 } }]);
  });

  it('splits an all-<profile> config by maximum count when two models share a profile name', () => {
    const config = generateMigConfig([
      { index: 0, pciDeviceId: '0x233010DE', model: resolveGpuModel('H100-80GB') },
      { index: 1, pciDeviceId: '0x20B210DE', model: resolveGpuModel('A100-80GB') },
      { index: 2, pciDeviceId: '0x1DB610DE', model: null },
    ]);
    expect(config['mig-configs']['all-1g.10gb']).toEqual([
      { 'device-filter': ['0x20B210DE', '0x233010DE'], devices: 'all', 'mig-enabled': true, 'mig-devices': { '1g.10gb': 7 } },
    ]);
    expect(config['mig-configs']['all-balanced']).toHaveLength(2);
    expect(JSON.parse(formatGeneratedJson(config))['mig-configs']['all-disabled']).toEqual([{ devices: 'all', 'mig-enabled': false, 'mig-devices': null }]);
  });

  it('refuses a node without a MIG-capable GPU, as mig-parted does', () => {
    expect(() => generateMigConfig([{ index: 0, pciDeviceId: '0x1DB610DE', model: null }])).toThrow(/no MIG-capable GPU/);
  });
});
