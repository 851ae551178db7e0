import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { parseMigPartedConfig } from '../src/partition/config.js';
import { clusterPolicy, gpuNode, gpuPod, kubeconfigFor, startFakeK8s, type FakeK8s, type FakeK8sOptions } from './fixtures/k8s-api-server.js';
import { cli } from './run-cli.js';

const DEFAULT_CONFIG = readFileSync(new URL('./fixtures/mig-parted/config-default.yaml', import.meta.url), 'utf8');
const NS = 'gpu-operator';
const CM = 'migpool-mig-parted-config';
const FAST = ['--config-sync-seconds', '0', '--poll', '0.02', '--timeout', '5'];

let dir: string;
let server: FakeK8s | null = null;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'migpool-k8s-'));
});
afterEach(async () => {
  await server?.close();
  server = null;
  rmSync(dir, { recursive: true, force: true });
});

/** Starts the fake API with the default mig-parted config and writes a kubeconfig for it. */
async function start(options: Omit<FakeK8sOptions, 'migManager' | 'token'> & { configText?: string }): Promise<string> {
  server = await startFakeK8s({
    clusterPolicies: [clusterPolicy(CM)],
    ...options,
    token: 'secret-token',
    migManager: { namespace: NS, name: CM },
    configMaps: options.configMaps ?? [{ metadata: { name: CM, namespace: NS }, data: { 'config.yaml': options.configText ?? DEFAULT_CONFIG } }],
  });
  const kubeconfig = join(dir, 'kubeconfig');
  writeFileSync(kubeconfig, kubeconfigFor(server.url, 'secret-token'));
  return kubeconfig;
}

const labels = (node: Record<string, unknown>): Record<string, string> => ((node['metadata'] as Record<string, unknown>)['labels'] ?? {}) as Record<string, string>;
const allocatable = (node: Record<string, unknown>): Record<string, string> => ((node['status'] as Record<string, unknown>)['allocatable'] ?? {}) as Record<string, string>;

/** An idle node cut as 2 x 3g.20gb, a busy one cut the same way, and pods waiting for 1g.5gb. */
function scenario(): Omit<FakeK8sOptions, 'migManager' | 'token'> {
  const cut = { 'nvidia.com/mig-3g.20gb': 2 };
  return {
    nodes: [
      gpuNode('idle-a100', { config: 'all-3g.20gb', resources: cut }),
      gpuNode('busy-a100', { config: 'all-3g.20gb', resources: cut }),
      { metadata: { name: 'cpu-only', labels: { 'kubernetes.io/hostname': 'cpu-only' } }, status: { allocatable: { cpu: '8' } } },
    ],
    pods: [
      gpuPod('team', 'running-3g', { 'nvidia.com/mig-3g.20gb': 1 }, 'busy-a100'),
      gpuPod('team', 'wait-1', { 'nvidia.com/mig-1g.5gb': 1 }),
      gpuPod('team', 'wait-2', { 'nvidia.com/mig-1g.5gb': 1 }),
      gpuPod('team', 'wait-3', { 'nvidia.com/mig-1g.5gb': 1 }),
      gpuPod('team', 'web', {}, 'cpu-only'),
    ],
  };
}

describe('migpool k8s plan', () => {
  it('plans 1g.5gb slices on the idle node and leaves the busy one alone', async () => {
    const kubeconfig = await start(scenario());
    const r = await cli('k8s', 'plan', '--kubeconfig', kubeconfig, '--json');
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    const plan = JSON.parse(r.out) as {
      nodes: { name: string; changed: boolean; changeable: boolean; reason: string | null; newConfig: string | null; slicesAfter: Record<string, number>; gpus: { current: unknown; planned: { profile: string }[] }[] }[];
      demand: Record<string, number>;
      served: Record<string, number>;
      unserved: Record<string, number>;
      configs: Record<string, unknown>;
    };
    expect(plan.demand).toEqual({ '1g.5gb': 3 });
    expect(plan.served).toEqual({ '1g.5gb': 3 });
    expect(plan.unserved).toEqual({});
    const idle = plan.nodes.find((n) => n.name === 'idle-a100');
    const busy = plan.nodes.find((n) => n.name === 'busy-a100');
    expect(idle?.changed).toBe(true);
    expect(idle?.newConfig).toMatch(/^migpool-[0-9a-f]{10}$/);
    expect(idle?.slicesAfter['1g.5gb'] ?? 0).toBeGreaterThanOrEqual(3);
    expect(busy?.changeable).toBe(false);
    expect(busy?.changed).toBe(false);
    expect(busy?.reason).toContain('team/running-3g');
    expect(plan.nodes.map((n) => n.name)).not.toContain('cpu-only');
    // Reading only: no writes went to the API.
    expect(server?.requests.filter((q) => q.method !== 'GET')).toEqual([]);
  });

  it('prints a table', async () => {
    const kubeconfig = await start(scenario());
    const r = await cli('k8s', 'plan', '--kubeconfig', kubeconfig);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/NODE\s+GPU\s+CONFIG/);
    expect(r.out).toMatch(/idle-a100\s+A100-40GB\s+all-3g\.20gb\s+success\s+2x3g\.20gb\s+\S*1g\.5gb/);
    expect(r.out).toContain('pending pods: 3, waiting for 3 x 1g.5gb');
  });

  it('reads KUBECONFIG when no --kubeconfig is given', async () => {
    const kubeconfig = await start(scenario());
    const saved = process.env['KUBECONFIG'];
    process.env['KUBECONFIG'] = kubeconfig;
    try {
      const r = await cli('k8s', 'plan', '--json');
      expect(r.code).toBe(0);
      expect(server?.requests.length).toBeGreaterThan(0);
    } finally {
      if (saved === undefined) delete process.env['KUBECONFIG'];
      else process.env['KUBECONFIG'] = saved;
    }
  });
});

describe('migpool k8s apply', () => {
  it('writes the config, relabels the idle node, waits for success; the busy node is untouched', async () => {
    const kubeconfig = await start(scenario());
    const r = await cli('k8s', 'apply', '--kubeconfig', kubeconfig, ...FAST, '--json');
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.out) as { nodes: { node: string; outcome: string; config: string; advertised: Record<string, number> }[]; configMap: { added: string[] } };
    expect(out.nodes).toHaveLength(1);
    const [done] = out.nodes;
    expect(done?.node).toBe('idle-a100');
    expect(done?.outcome).toBe('success');

    // The ConfigMap keeps NVIDIA's configs and has the new one, as mig-parted reads it.
    const cm = server!.configMap(NS, CM) as { data: Record<string, string> };
    const parsed = parseMigPartedConfig(cm.data['config.yaml'] ?? '', 'cm');
    expect(parsed.configs.has('all-balanced')).toBe(true);
    const entries = parsed.configs.get(done?.config ?? '');
    expect(entries?.[0]?.migEnabled).toBe(true);
    expect(entries?.[0]?.migDevices['1g.5gb'] ?? 0).toBeGreaterThanOrEqual(3);

    // The node is labelled, the MIG manager reported success, the device plugin advertises 1g.5gb.
    const idle = server!.node('idle-a100');
    expect(labels(idle)['nvidia.com/mig.config']).toBe(done?.config);
    expect(labels(idle)['nvidia.com/mig.config.state']).toBe('success');
    expect(Number(allocatable(idle)['nvidia.com/mig-1g.5gb'])).toBeGreaterThanOrEqual(3);
    expect(allocatable(idle)['nvidia.com/mig-3g.20gb']).toBeUndefined();
    expect(done?.advertised['1g.5gb']).toBe(Number(allocatable(idle)['nvidia.com/mig-1g.5gb']));

    // The busy node: no write of any kind, same label and resources.
    expect(server!.requests.filter((q) => q.path.startsWith('/api/v1/nodes/busy-a100') && q.method !== 'GET')).toEqual([]);
    expect(labels(server!.node('busy-a100'))['nvidia.com/mig.config']).toBe('all-3g.20gb');
    expect(allocatable(server!.node('busy-a100'))['nvidia.com/mig-3g.20gb']).toBe('2');

    // Patches went with the content types the real API accepts, the ConfigMap's with its resourceVersion.
    const cmPatch = server!.requests.find((q) => q.method === 'PATCH' && q.path.includes('/configmaps/'));
    expect(cmPatch?.contentType).toBe('application/merge-patch+json');
    expect((cmPatch?.body as { metadata: { resourceVersion: string } }).metadata.resourceVersion).toMatch(/^\d+$/);
    const labelPatch = server!.requests.find((q) => q.method === 'PATCH' && q.path.startsWith('/api/v1/nodes/idle-a100'));
    expect(labelPatch?.contentType).toBe('application/strategic-merge-patch+json');
    expect(labelPatch?.body).toEqual({ metadata: { labels: { 'nvidia.com/mig.config': done?.config, 'nvidia.com/mig.config.state': null } } });

    // A second run finds nothing to do.
    const again = await cli('k8s', 'apply', '--kubeconfig', kubeconfig, ...FAST);
    expect(again.code).toBe(0);
    expect(again.out).toContain('still waiting: nothing');
  });

  it('--dry-run writes nothing', async () => {
    const kubeconfig = await start(scenario());
    const r = await cli('k8s', 'apply', '--kubeconfig', kubeconfig, '--dry-run', ...FAST);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/would label idle-a100 nvidia.com\/mig.config=migpool-[0-9a-f]{10}/);
    expect(r.out).toMatch(/migpool-[0-9a-f]{10}:\n\s*- devices: all/);
    expect(server!.requests.filter((q) => q.method !== 'GET')).toEqual([]);
  });

  it('--drain cordons, evicts all but DaemonSet pods, and uncordons after success', async () => {
    const s = scenario();
    const kubeconfig = await start({
      ...s,
      pods: [
        ...(s.pods ?? []),
        gpuPod('web', 'frontend', {}, 'idle-a100'),
        gpuPod('gpu-operator', 'nvidia-device-plugin-x', {}, 'idle-a100', { ownerKind: 'DaemonSet' }),
      ],
    });
    const r = await cli('k8s', 'apply', '--kubeconfig', kubeconfig, '--drain', ...FAST);
    expect(r.code).toBe(0);
    expect(r.err).toContain('node idle-a100: cordoned');
    expect(r.err).toContain('evicting web/frontend');
    expect(r.err).toContain('node idle-a100: uncordoned');
    expect(server!.pod('web', 'frontend')).toBeUndefined();
    expect(server!.pod('gpu-operator', 'nvidia-device-plugin-x')).toBeDefined();
    const node = server!.node('idle-a100');
    expect((node['spec'] as { unschedulable?: boolean }).unschedulable).toBe(false);
    const evictions = server!.requests.filter((q) => q.path.endsWith('/eviction'));
    expect(evictions.map((q) => q.body)).toEqual([{ apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: 'frontend', namespace: 'web' } }]);
    // Cordon came before the label, uncordon after.
    const writes = server!.requests.filter((q) => q.method === 'PATCH' && q.path.startsWith('/api/v1/nodes/idle-a100')).map((q) => JSON.stringify(q.body));
    expect(writes[0]).toContain('"unschedulable":true');
    expect(writes[1]).toContain('nvidia.com/mig.config');
    expect(writes[2]).toContain('"unschedulable":false');
  });

  it('a failing MIG manager: exit 3, one line, the drained node stays cordoned', async () => {
    const kubeconfig = await start({ ...scenario(), failNodes: ['idle-a100'] });
    const r = await cli('k8s', 'apply', '--kubeconfig', kubeconfig, '--drain', ...FAST);
    expect(r.code).toBe(3);
    const last = r.err.trim().split('\n').pop() ?? '';
    expect(last).toMatch(/^migpool: 1 node\(s\) not reconfigured: idle-a100 failed \(the MIG manager reports failed.*stays cordoned\)$/);
    expect(labels(server!.node('idle-a100'))['nvidia.com/mig.config.state']).toBe('failed');
    expect((server!.node('idle-a100')['spec'] as { unschedulable?: boolean }).unschedulable).toBe(true);
  });

  it('a PodDisruptionBudget that keeps refusing: the node stays cordoned and keeps its label, exit 3', async () => {
    const s = scenario();
    const kubeconfig = await start({ ...s, pods: [...(s.pods ?? []), gpuPod('web', 'guarded', {}, 'idle-a100', { annotations: { 'test/pdb-blocks': 'true' } })] });
    const r = await cli('k8s', 'apply', '--kubeconfig', kubeconfig, '--drain', '--drain-timeout', '0.2', ...FAST);
    expect(r.code).toBe(3);
    expect(r.err.trim().split('\n').pop()).toMatch(/idle-a100 timeout \(pods still on the node after 0.2s: web\/guarded; the node stays cordoned and its label unchanged\)$/);
    expect(server!.pod('web', 'guarded')).toBeDefined();
    expect(server!.requests.filter((q) => q.path.endsWith('/eviction')).length).toBeGreaterThan(1);
    expect(labels(server!.node('idle-a100'))['nvidia.com/mig.config']).toBe('all-3g.20gb');
    expect((server!.node('idle-a100')['spec'] as { unschedulable?: boolean }).unschedulable).toBe(true);
  });

  it('--force re-partitions a node whose slices pods hold', async () => {
    const kubeconfig = await start({
      nodes: [gpuNode('busy-a100', { config: 'all-3g.20gb', resources: { 'nvidia.com/mig-3g.20gb': 2 } })],
      pods: [gpuPod('team', 'running-3g', { 'nvidia.com/mig-3g.20gb': 1 }, 'busy-a100'), gpuPod('team', 'wait-1', { 'nvidia.com/mig-1g.5gb': 2 })],
    });
    const without = await cli('k8s', 'apply', '--kubeconfig', kubeconfig, ...FAST);
    expect(without.code).toBe(0);
    expect(without.out).toContain('nothing to change');
    expect(labels(server!.node('busy-a100'))['nvidia.com/mig.config']).toBe('all-3g.20gb');
    const forced = await cli('k8s', 'apply', '--kubeconfig', kubeconfig, '--force', ...FAST);
    expect(forced.code).toBe(0);
    expect(labels(server!.node('busy-a100'))['nvidia.com/mig.config']).toMatch(/^migpool-/);
    expect(Number(allocatable(server!.node('busy-a100'))['nvidia.com/mig-1g.5gb'])).toBeGreaterThanOrEqual(2);
  });

  it('drops migpool configs no node uses any more and keeps those in use', async () => {
    const config = `${DEFAULT_CONFIG}\n  migpool-stale00000:\n    - devices: all\n      mig-enabled: true\n      mig-devices:\n        "7g.40gb": 1\n  migpool-inuse00000:\n    - devices: all\n      mig-enabled: true\n      mig-devices:\n        "3g.20gb": 2\n`;
    const s = scenario();
    const kubeconfig = await start({
      ...s,
      configText: config,
      nodes: [gpuNode('idle-a100', { config: 'all-3g.20gb', resources: { 'nvidia.com/mig-3g.20gb': 2 } }), gpuNode('busy-a100', { config: 'migpool-inuse00000', resources: { 'nvidia.com/mig-3g.20gb': 2 } })],
    });
    const r = await cli('k8s', 'apply', '--kubeconfig', kubeconfig, ...FAST, '--json');
    expect(r.code).toBe(0);
    expect((JSON.parse(r.out) as { configMap: { removed: string[] } }).configMap.removed).toEqual(['migpool-stale00000']);
    const text = (server!.configMap(NS, CM) as { data: Record<string, string> }).data['config.yaml'] ?? '';
    expect(text).toContain('migpool-inuse00000');
    expect(text).not.toContain('migpool-stale00000');
  });
});

describe('migpool k8s errors', () => {
  it('an unreachable API is one line, exit 3', async () => {
    const kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(kubeconfig, kubeconfigFor('http://127.0.0.1:1', 't'));
    const r = await cli('k8s', 'plan', '--kubeconfig', kubeconfig);
    expect(r.code).toBe(3);
    expect(r.err.trim().split('\n')).toHaveLength(1);
    expect(r.err).toMatch(/^migpool: listing ClusterPolicies \(nvidia.com\/v1\): cannot reach the Kubernetes API at http:\/\/127\.0\.0\.1:1 \(ECONNREFUSED\); check/);
  });

  it('a missing ConfigMap names it and the flags, exit 2', async () => {
    const kubeconfig = await start({ ...scenario(), configMaps: [] });
    const r = await cli('k8s', 'plan', '--kubeconfig', kubeconfig);
    expect(r.code).toBe(2);
    expect(r.err.trim()).toMatch(/^migpool: ConfigMap gpu-operator\/migpool-mig-parted-config not found at http:\/\/127\.0\.0\.1:\d+; create it from the operator's default/);
  });

  it('an unknown GPU product names the node, exit 2; --ignore-node gets past it', async () => {
    const s = scenario();
    const kubeconfig = await start({ ...s, nodes: [...s.nodes, gpuNode('odd', { product: 'NVIDIA-Z9000' })] });
    const r = await cli('k8s', 'plan', '--kubeconfig', kubeconfig);
    expect(r.code).toBe(2);
    expect(r.err.trim()).toMatch(/^migpool: node odd: nvidia.com\/gpu.product=NVIDIA-Z9000 is not a MIG-capable GPU migpool knows .*--ignore-node odd$/);
    expect((await cli('k8s', 'plan', '--kubeconfig', kubeconfig, '--ignore-node', 'odd')).code).toBe(0);
  });

  it('a wrong token is refused with the reason, exit 3', async () => {
    await start(scenario());
    const kubeconfig = join(dir, 'bad');
    writeFileSync(kubeconfig, kubeconfigFor(server!.url, 'wrong'));
    const r = await cli('k8s', 'plan', '--kubeconfig', kubeconfig);
    expect(r.code).toBe(3);
    expect(r.err).toMatch(/refused the credentials \(401\)/);
  });

  it('a missing kubeconfig file is bad input', async () => {
    const r = await cli('k8s', 'plan', '--kubeconfig', join(dir, 'nope'));
    expect(r.code).toBe(2);
    expect(r.err.trim()).toMatch(/^migpool: cannot load --kubeconfig '.*nope'/);
  });
});

describe('migpool k8s manifest', () => {
  it('writes a Job requesting the slice for a job spec', async () => {
    const file = join(dir, 'job.yaml');
    writeFileSync(file, 'name: resnet_cifar\ncommand: [python, train.py, --epochs, "3"]\nresources: {memory: 8GiB}\npriority: background\nmaxRuntime: 2h\nretries: 2\nenv: {WANDB_MODE: offline}\n');
    const r = await cli('k8s', 'manifest', file, '--image', 'pytorch:latest', '--gpu', 'A100-SXM4-40GB');
    expect(r.code).toBe(0);
    const job = YAML.parse(r.out) as { kind: string; spec: { backoffLimit: number; template: { spec: { priorityClassName: string; activeDeadlineSeconds: number; containers: { resources: { limits: Record<string, number> }; command: string[]; args: string[] }[] } } } };
    expect(job.kind).toBe('Job');
    expect(r.out).not.toMatch(/[&*]a1/); // no YAML anchors: plain manifests
    expect(job.spec.backoffLimit).toBe(2);
    expect(job.spec.template.spec.activeDeadlineSeconds).toBe(7200);
    expect(job.spec.template.spec.priorityClassName).toBe('migpool-background');
    expect(job.spec.template.spec.containers[0]?.resources.limits).toEqual({ 'nvidia.com/mig-1g.10gb': 1 });
    expect(job.spec.template.spec.containers[0]?.command).toEqual(['python']);
    expect(job.spec.template.spec.containers[0]?.args).toEqual(['train.py', '--epochs', '3']);
  });

  it('refuses without --image, saying why', async () => {
    const file = join(dir, 'job.yaml');
    writeFileSync(file, 'name: a\ncommand: [python]\n');
    const r = await cli('k8s', 'manifest', file);
    expect(r.code).toBe(2);
    expect(r.err.trim()).toMatch(/^migpool: --image is required: a job spec names a command but no container image/);
  });
});
