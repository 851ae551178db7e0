import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { resolveGpuModel } from '../mig/catalog/index.js';
import { parseMigPartedConfig } from '../partition/config.js';
import { editMigConfigs } from './configmap.js';
import { layoutsUnderConfig, readClusterView, slicesOfLayouts, type NodeObject, type PodObject } from './inventory.js';
import { planCluster } from './plan.js';
import { podSlices, sliceOfResource } from './resources.js';

const DEFAULT_CONFIG = readFileSync(new URL('../../test/fixtures/mig-parted/config-default.yaml', import.meta.url), 'utf8');
const SOURCE = 'gpu-operator/default-mig-parted-config:config.yaml';

function node(name: string, labels: Record<string, string>, allocatable: Record<string, string>, unschedulable = false): NodeObject {
  return {
    metadata: {
      name,
      labels: { 'nvidia.com/gpu.product': 'NVIDIA-A100-SXM4-40GB', 'nvidia.com/gpu.count': '1', 'nvidia.com/mig.capable': 'true', 'nvidia.com/mig.strategy': 'mixed', 'nvidia.com/mig.config.state': 'success', ...labels },
    },
    spec: { unschedulable },
    status: { allocatable },
  };
}
const pod = (name: string, limits: Record<string, string>, nodeName?: string, phase = nodeName ? 'Running' : 'Pending'): PodObject => ({
  metadata: { name, namespace: 'ns' },
  spec: { ...(nodeName ? { nodeName } : {}), containers: [{ resources: { limits } }] },
  status: { phase },
});

describe('resources', () => {
  it('maps device-plugin resource names back to profiles', () => {
    expect(sliceOfResource('nvidia.com/gpu')).toBe('gpu');
    expect(sliceOfResource('nvidia.com/mig-1g.5gb')).toBe('1g.5gb');
    expect(sliceOfResource('nvidia.com/mig-1g.5gb.me')).toBe('1g.5gb+me');
    expect(sliceOfResource('nvidia.com/mig-1g.24gb-me')).toBe('1g.24gb-me');
    expect(sliceOfResource('cpu')).toBeNull();
  });

  it('counts a pod as the scheduler does: containers summed, init containers at their peak', () => {
    expect(
      podSlices({
        containers: [{ resources: { limits: { 'nvidia.com/mig-1g.5gb': '1' } } }, { resources: { requests: { 'nvidia.com/mig-1g.5gb': '2', cpu: '1' } } }],
        initContainers: [{ resources: { limits: { 'nvidia.com/mig-1g.5gb': '2', 'nvidia.com/gpu': '1' } } }],
      }),
    ).toEqual({ '1g.5gb': 3, gpu: 1 });
  });
});

describe('layoutsUnderConfig', () => {
  const config = parseMigPartedConfig(DEFAULT_CONFIG, SOURCE);
  const a100 = resolveGpuModel('A100-SXM4-40GB');

  it("resolves NVIDIA's default configs on each GPU of the node", () => {
    const balanced = layoutsUnderConfig(config, 'all-balanced', a100, 2);
    expect(typeof balanced).not.toBe('string');
    expect(slicesOfLayouts(balanced as never)).toEqual({ '1g.5gb': 4, '2g.10gb': 2, '3g.20gb': 2 });
    expect(layoutsUnderConfig(config, 'all-disabled', a100, 3)).toEqual([null, null, null]);
  });

  it('says why when the label names no config', () => {
    expect(layoutsUnderConfig(config, 'nope', a100, 1)).toMatch(/'nope' is not a config of gpu-operator/);
  });
});

describe('readClusterView', () => {
  it('decides which nodes may change, and why not', () => {
    const nodes = [
      node('idle', { 'nvidia.com/mig.config': 'all-1g.5gb' }, { 'nvidia.com/mig-1g.5gb': '7' }),
      node('busy', { 'nvidia.com/mig.config': 'all-1g.5gb' }, { 'nvidia.com/mig-1g.5gb': '7' }),
      node('single', { 'nvidia.com/mig.strategy': 'single', 'nvidia.com/gpu.product': 'NVIDIA-A100-SXM4-40GB-MIG-1g.5gb' }, { 'nvidia.com/gpu': '7' }),
      node('moving', { 'nvidia.com/mig.config': 'all-1g.5gb', 'nvidia.com/mig.config.state': 'pending' }, {}),
      node('cordoned', { 'nvidia.com/mig.config': 'all-1g.5gb' }, { 'nvidia.com/mig-1g.5gb': '7' }, true),
      { metadata: { name: 't4', labels: { 'nvidia.com/gpu.product': 'Tesla-T4', 'nvidia.com/mig.capable': 'false' } }, status: { allocatable: { 'nvidia.com/gpu': '1' } } },
    ];
    const pods = [pod('r', { 'nvidia.com/mig-1g.5gb': '1' }, 'busy'), pod('done', { 'nvidia.com/mig-1g.5gb': '1' }, 'idle', 'Succeeded'), pod('w', { 'nvidia.com/gpu': '2' })];
    const view = readClusterView(nodes, pods, { configText: DEFAULT_CONFIG, configSource: SOURCE });
    const why = Object.fromEntries(view.nodes.map((n) => [n.name, n.reason]));
    expect(why['idle']).toBeNull();
    expect(why['busy']).toMatch(/GPU pods running: ns\/r/);
    expect(why['single']).toMatch(/mig.strategy=single/);
    expect(why['moving']).toMatch(/state=pending/);
    expect(why['cordoned']).toMatch(/cordoned/);
    expect(why['t4']).toMatch(/not MIG-capable/);
    expect(view.demand).toEqual({ gpu: 2 });
    expect(view.warnings).toEqual([]);

    // The T4's free GPU serves one of the two; the idle A100 turns MIG off for the other. (Under
    // the single strategy a node advertises its slices as nvidia.com/gpu, which would serve it too.)
    const plan = planCluster(readClusterView(nodes.filter((n) => n.metadata?.name !== 'single'), pods, { configText: DEFAULT_CONFIG, configSource: SOURCE }));
    expect(plan.served).toEqual({ gpu: 2 });
    expect(plan.nodes.find((n) => n.name === 'idle')?.gpus[0]?.planned).toBeNull();
    expect(plan.nodes.filter((n) => n.changed).map((n) => n.name)).toEqual(['idle']);
    expect(readClusterView(nodes, pods, { configText: DEFAULT_CONFIG, configSource: SOURCE, force: true }).nodes.find((n) => n.name === 'busy')?.changeable).toBe(true);
  });

  it('warns when the device plugin advertises something other than the config gives', () => {
    const view = readClusterView([node('n', { 'nvidia.com/mig.config': 'all-1g.5gb' }, { 'nvidia.com/gpu': '1' })], [], { configText: DEFAULT_CONFIG, configSource: SOURCE });
    expect(view.warnings[0]).toMatch(/config 'all-1g.5gb' gives 7 x 1g.5gb but the node advertises 1 x gpu/);
  });
});

describe('editMigConfigs', () => {
  it('adds a config, keeps the others and their comments, drops unused migpool configs', () => {
    const text = `# site configs\nversion: v1\nmig-configs:\n  all-disabled:\n    - devices: all\n      mig-enabled: false\n  migpool-old:\n    - devices: all\n      mig-enabled: false\n  migpool-kept:\n    - devices: all\n      mig-enabled: false\n`;
    const edit = editMigConfigs(text, { 'migpool-new': [{ devices: 'all', 'mig-enabled': true, 'mig-devices': { '1g.5gb': 7 } }] }, new Set(['migpool-kept']), 'cm');
    expect(edit.added).toEqual(['migpool-new']);
    expect(edit.removed).toEqual(['migpool-old']);
    expect(edit.text).toContain('# site configs');
    const parsed = parseMigPartedConfig(edit.text, 'cm');
    expect([...parsed.configs.keys()]).toEqual(['all-disabled', 'migpool-kept', 'migpool-new']);
    expect(parsed.configs.get('migpool-new')?.[0]?.migDevices).toEqual({ '1g.5gb': 7 });
  });
});
