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

describe('demand that fits only some nodes', () => {
  const cut = { 'nvidia.com/mig-3g.20gb': '2' };
  const nodes: NodeObject[] = [
    node('train-1', { 'nvidia.com/mig.config': 'all-3g.20gb', pool: 'train' }, cut),
    { ...node('infer-1', { 'nvidia.com/mig.config': 'all-3g.20gb', pool: 'infer' }, cut), spec: { taints: [{ key: 'dedicated', value: 'infer', effect: 'NoSchedule' }] } },
  ];
  const wants = (name: string, spec: Record<string, unknown>, count = 1): PodObject => ({
    metadata: { name, namespace: 'ns' },
    spec: { ...spec, containers: [{ resources: { limits: { 'nvidia.com/mig-1g.5gb': String(count) } } }] },
    status: { phase: 'Pending' },
  });
  const plan = (pods: PodObject[], workloads: unknown[] = []) => {
    const view = readClusterView(nodes, pods, { configText: DEFAULT_CONFIG, configSource: SOURCE, workloads: workloads as never });
    return { view, plan: planCluster(view) };
  };
  const changed = (p: ReturnType<typeof planCluster>): string[] => p.nodes.filter((n) => n.changed).map((n) => n.name);

  it('cuts only the node the pods can land on', () => {
    const { view, plan: p } = plan([wants('a', { nodeSelector: { pool: 'train' } }), wants('b', {})]);
    // Neither pod tolerates infer-1's taint: only train-1 may be cut, and it serves both.
    expect(view.pending.map((x) => x.eligible)).toEqual([['train-1'], ['train-1']]);
    expect(changed(p)).toEqual(['train-1']);
    expect(p.served).toEqual({ '1g.5gb': 2 });
  });

  it('a pod that tolerates the taint and selects the pool gets that node; one that fits nowhere stays unserved, with the reasons', () => {
    const { view, plan: p } = plan([
      wants('infer', { nodeSelector: { pool: 'infer' }, tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'infer', effect: 'NoSchedule' }] }),
      wants('nowhere', { affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'pool', operator: 'In', values: ['batch'] }] }] } } } }),
    ]);
    expect(changed(p)).toEqual(['infer-1']);
    expect(p.served).toEqual({ '1g.5gb': 1 });
    expect(p.unserved).toEqual({ '1g.5gb': 1 });
    expect(view.pending.find((x) => x.name === 'nowhere')?.whyNot).toBe('infer-1: required node affinity; train-1: required node affinity');
  });

  it('the most constrained pods are planned first, and a node cut for them is not cut again', () => {
    // 7 x 1g.5gb fill an A100-40GB: the train-only pods take train-1, the others must not take it back.
    const { plan: p } = plan([
      wants('train', { nodeSelector: { pool: 'train' } }, 7),
      wants('any', { tolerations: [{ operator: 'Exists' }] }, 7),
    ]);
    expect(changed(p)).toEqual(['infer-1', 'train-1']);
    expect(p.served).toEqual({ '1g.5gb': 14 });
    const train = p.nodes.find((n) => n.name === 'train-1');
    expect(train?.slicesAfter['1g.5gb']).toBe(7);
  });

  it('gated pods are not demand; Kueue Workloads not yet admitted are, admitted or finished ones are not', () => {
    const template = (n: number) => ({ spec: { nodeSelector: { pool: 'train' }, containers: [{ resources: { limits: { 'nvidia.com/mig-1g.5gb': String(n) } } }] } });
    const { view, plan: p } = plan(
      [{ ...wants('gated', {}), spec: { schedulingGates: [{ name: 'example.com/wait' }], containers: [{ resources: { limits: { 'nvidia.com/mig-1g.5gb': '1' } } }] } }],
      [
        { metadata: { name: 'job-a', namespace: 'team' }, spec: { podSets: [{ name: 'main', count: 3, template: template(1) }] }, status: { conditions: [{ type: 'QuotaReserved', status: 'False' }] } },
        { metadata: { name: 'job-b', namespace: 'team' }, spec: { podSets: [{ name: 'main', count: 2, template: template(1) }] }, status: { conditions: [{ type: 'Admitted', status: 'True' }] } },
        { metadata: { name: 'job-c', namespace: 'team' }, spec: { podSets: [{ name: 'main', count: 2, template: template(1) }] }, status: { conditions: [{ type: 'Finished', status: 'True' }] } },
        { metadata: { name: 'job-d', namespace: 'team' }, spec: { active: false, podSets: [{ name: 'main', count: 2, template: template(1) }] } },
      ],
    );
    expect(view.gated).toEqual([{ namespace: 'ns', name: 'gated', gates: ['example.com/wait'] }]);
    expect(view.pending.map((x) => [x.source, x.name, x.slices])).toEqual([['workload', 'workload/job-a/main', { '1g.5gb': 3 }]]);
    expect(p.demand).toEqual({ '1g.5gb': 3 });
    expect(changed(p)).toEqual(['train-1']);
  });
});
