import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClusterRole } from 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRole';
import { ClusterRoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRoleBinding';
import { Role } from 'kubernetes-models/rbac.authorization.k8s.io/v1/Role';
import { RoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1/RoleBinding';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { ServiceAccount } from 'kubernetes-models/v1/ServiceAccount';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { clusterPolicy, gpuNode, gpuPod, kubeconfigFor, startFakeK8s, type FakeK8s, type FakeK8sOptions } from './fixtures/k8s-api-server.js';
import { cli } from './run-cli.js';

// The GPU Operator as its Helm chart installs it: a ClusterPolicy `cluster-policy` with no
// migManager.config.name, and the operator's own default-mig-parted-config.
const DEFAULT_CONFIG = readFileSync(new URL('./fixtures/mig-parted/config-default.yaml', import.meta.url), 'utf8');
const NS = 'gpu-operator';
const FAST = ['--config-sync-seconds', '0', '--poll', '0.02', '--timeout', '5'];

let dir: string;
let server: FakeK8s | null = null;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'migpool-k8s-gpuop-'));
});
afterEach(async () => {
  await server?.close();
  server = null;
  rmSync(dir, { recursive: true, force: true });
});

async function start(options: Partial<FakeK8sOptions>): Promise<string> {
  server = await startFakeK8s({
    nodes: [],
    clusterPolicies: [clusterPolicy()],
    configMaps: [
      { metadata: { name: 'default-mig-parted-config', namespace: NS }, data: { 'config.yaml': DEFAULT_CONFIG } },
      { metadata: { name: 'migpool-mig-parted-config', namespace: NS }, data: { 'config.yaml': DEFAULT_CONFIG } },
    ],
    ...options,
    migManager: { namespace: NS, name: 'default-mig-parted-config' },
  });
  const kubeconfig = join(dir, 'kubeconfig');
  writeFileSync(kubeconfig, kubeconfigFor(server.url, 't'));
  return kubeconfig;
}

const labels = (node: Record<string, unknown>): Record<string, string> => ((node['metadata'] as Record<string, unknown>)['labels'] ?? {}) as Record<string, string>;
const cut = { 'nvidia.com/mig-3g.20gb': 2 };

describe('on GPU Operator defaults', () => {
  it('refuses with the fix while the ClusterPolicy names no ConfigMap, then works once it names migpool\'s', async () => {
    const kubeconfig = await start({
      nodes: [gpuNode('a100-1', { config: 'all-3g.20gb', resources: cut })],
      pods: [gpuPod('team', 'small', { 'nvidia.com/mig-1g.5gb': 1 })],
    });
    const refused = await cli('k8s', 'apply', '--kubeconfig', kubeconfig, ...FAST);
    expect(refused.code).toBe(2);
    expect(refused.err.trim().split('\n')).toHaveLength(1);
    expect(refused.err.trim()).toBe(
      `migpool: ClusterPolicy cluster-policy leaves migManager.config.name unset, so the MIG manager generates its configs from the hardware (GPU Operator 26.3+) and never reads ConfigMap gpu-operator/migpool-mig-parted-config; point it there: kubectl patch clusterpolicy cluster-policy --type merge -p '{"spec":{"migManager":{"config":{"name":"migpool-mig-parted-config"}}}}'`,
    );
    expect(server!.requests.filter((q) => q.method !== 'GET')).toEqual([]);

    // The operator's own ConfigMap is refused outright.
    const owned = await cli('k8s', 'plan', '--kubeconfig', kubeconfig, '--configmap', 'default-mig-parted-config');
    expect(owned.code).toBe(2);
    expect(owned.err).toMatch(/^migpool: --configmap default-mig-parted-config: the GPU Operator owns that ConfigMap, rewrites it on every reconcile/);

    // The fix the message names; the stand-in's MIG manager now reads migpool's ConfigMap.
    server!.patchClusterPolicy('cluster-policy', { spec: { migManager: { config: { name: 'migpool-mig-parted-config' } } } });
    const applied = await cli('k8s', 'apply', '--kubeconfig', kubeconfig, ...FAST, '--json');
    expect(applied.err).toBe('');
    expect(applied.code).toBe(0);
    const out = JSON.parse(applied.out) as { nodes: { node: string; outcome: string }[] };
    expect(out.nodes).toEqual([expect.objectContaining({ node: 'a100-1', outcome: 'success' })]);
    expect(labels(server!.node('a100-1'))['nvidia.com/mig.config']).toMatch(/^migpool-/);
    // The operator's ConfigMap was left alone.
    expect(server!.requests.filter((q) => q.method !== 'GET' && q.path.includes('default-mig-parted-config'))).toEqual([]);
  });

  it("control: the stand-in's MIG manager follows the ClusterPolicy, so with no ConfigMap named a migpool label ends in failed", async () => {
    // What the old default led to on a real cluster: the label names a config the MIG manager never reads.
    await start({ nodes: [gpuNode('a100-1', { config: 'all-3g.20gb', resources: cut })] });
    const before = server!.node('a100-1');
    expect(labels(before)['nvidia.com/mig.config.state']).toBe('success');
    const res = await fetch(`${server!.url}/api/v1/nodes/a100-1`, {
      method: 'PATCH',
      headers: { 'Content-Type': 'application/merge-patch+json' },
      body: JSON.stringify({ metadata: { labels: { 'nvidia.com/mig.config': 'migpool-0000000000' } } }),
    });
    expect(res.status).toBe(200);
    for (let i = 0; i < 100 && labels(server!.node('a100-1'))['nvidia.com/mig.config.state'] !== 'failed'; i++) await new Promise((r) => setTimeout(r, 20));
    expect(labels(server!.node('a100-1'))['nvidia.com/mig.config.state']).toBe('failed');
  });

  it('a pod that only fits another pool does not cut this node', async () => {
    const kubeconfig = await start({
      clusterPolicies: [clusterPolicy('migpool-mig-parted-config')],
      nodes: [
        gpuNode('train-a100', { config: 'all-3g.20gb', resources: cut, labels: { pool: 'train' } }),
        gpuNode('infer-a100', { config: 'all-3g.20gb', resources: cut, labels: { pool: 'infer' }, taints: [{ key: 'dedicated', value: 'infer', effect: 'NoSchedule' }] }),
      ],
      pods: [
        // Runs on the inference node, so that node may not change.
        gpuPod('serve', 'llm', { 'nvidia.com/mig-3g.20gb': 1 }, 'infer-a100', { spec: { tolerations: [{ key: 'dedicated', operator: 'Exists' }] } }),
        // Waits for a slice, but only on the inference pool.
        gpuPod('serve', 'embedder', { 'nvidia.com/mig-1g.5gb': 1 }, undefined, { spec: { nodeSelector: { pool: 'infer' }, tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'infer', effect: 'NoSchedule' }] } }),
        // Tolerates nothing: the tainted node is out of its reach, and the train node is not in its selector.
        gpuPod('serve', 'stray', { 'nvidia.com/mig-1g.5gb': 1 }, undefined, { spec: { nodeSelector: { pool: 'infer' } } }),
        // Gated: not demand yet.
        gpuPod('team', 'gated', { 'nvidia.com/mig-1g.5gb': 1 }, undefined, { spec: { schedulingGates: [{ name: 'example.com/quota' }] } }),
      ],
    });
    const r = await cli('k8s', 'apply', '--kubeconfig', kubeconfig, ...FAST);
    expect(r.code).toBe(0);
    expect(r.out).toContain('nothing to change');
    expect(r.out).toContain('pending pods: 2, waiting for 2 x 1g.5gb');
    expect(r.out).toContain('serve/stray fits no GPU node (infer-a100: taint dedicated=infer:NoSchedule; train-a100: nodeSelector pool=infer)');
    expect(r.out).toContain('not counted (scheduling gates): team/gated [example.com/quota]');
    expect(r.out).toContain('still waiting: 2 x 1g.5gb');
    expect(labels(server!.node('train-a100'))['nvidia.com/mig.config']).toBe('all-3g.20gb');
    expect(server!.requests.filter((q) => q.method !== 'GET')).toEqual([]);

    // The same pod without its selector could land on the train node: then that node is cut.
    server!.deletePod('serve', 'embedder');
    server!.addPod(gpuPod('serve', 'embedder', { 'nvidia.com/mig-1g.5gb': 1 }));
    const again = await cli('k8s', 'apply', '--kubeconfig', kubeconfig, ...FAST);
    expect(again.code).toBe(0);
    expect(labels(server!.node('train-a100'))['nvidia.com/mig.config']).toMatch(/^migpool-/);
    expect(labels(server!.node('infer-a100'))['nvidia.com/mig.config']).toBe('all-3g.20gb');
  });

  it('Kueue: a Workload whose Job is still suspended is demand; --no-kueue leaves it out', async () => {
    const template = { spec: { containers: [{ name: 'main', image: 'x', resources: { limits: { 'nvidia.com/mig-1g.5gb': '1' } } }] } };
    const kubeconfig = await start({
      clusterPolicies: [clusterPolicy('migpool-mig-parted-config')],
      nodes: [gpuNode('a100-1', { config: 'all-3g.20gb', resources: cut })],
      workloads: [{ metadata: { name: 'job-resnet-1a2b3', namespace: 'team' }, spec: { queueName: 'team-queue', podSets: [{ name: 'main', count: 4, template }] }, status: {} }],
    });
    const plan = await cli('k8s', 'plan', '--kubeconfig', kubeconfig, '--json');
    expect(plan.code).toBe(0);
    const parsed = JSON.parse(plan.out) as { demand: Record<string, number>; served: Record<string, number>; pending: { source: string; name: string }[] };
    expect(parsed.demand).toEqual({ '1g.5gb': 4 });
    expect(parsed.served).toEqual({ '1g.5gb': 4 });
    expect(parsed.pending).toEqual([expect.objectContaining({ source: 'workload', name: 'workload/job-resnet-1a2b3/main' })]);
    const without = JSON.parse((await cli('k8s', 'plan', '--kubeconfig', kubeconfig, '--json', '--no-kueue')).out) as { demand: Record<string, number> };
    expect(without.demand).toEqual({});
  });
});

describe('migpool k8s controller (the command)', () => {
  it('leads, re-partitions for a pending pod, and on SIGTERM releases the Lease and exits 0', async () => {
    const kubeconfig = await start({
      clusterPolicies: [clusterPolicy('migpool-mig-parted-config')],
      nodes: [gpuNode('a100-1', { config: 'all-3g.20gb', resources: cut })],
      pods: [gpuPod('team', 'small', { 'nvidia.com/mig-1g.5gb': 1 })],
    });
    const run = cli('k8s', 'controller', '--kubeconfig', kubeconfig, '--identity', 'cli-1', '--lease-duration', '2', '--retry', '0.1', '--interval', '0.1', ...FAST, '--json');
    const settled = (): boolean => labels(server!.node('a100-1'))['nvidia.com/mig.config.state'] === 'success' && labels(server!.node('a100-1'))['nvidia.com/mig.config']?.startsWith('migpool-') === true;
    for (let i = 0; i < 400 && !settled(); i++) await new Promise((r) => setTimeout(r, 20));
    expect(settled()).toBe(true);
    await new Promise((r) => setTimeout(r, 300));
    process.emit('SIGTERM');
    const r = await run;
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out)).toEqual({ leaderships: 1, reconciles: expect.any(Number) as number, reconfigured: 1 });
    expect(r.err).toMatch(/^\S+Z cli-1: leading \(Lease gpu-operator\/migpool-controller\)$/m);
    expect(r.err).toMatch(/cli-1: released the Lease gpu-operator\/migpool-controller$/m);
    expect((server!.lease('gpu-operator', 'migpool-controller')?.['spec'] as { holderIdentity: string }).holderIdentity).toBe('');
  });
});

describe('migpool k8s install-manifest and controller flags', () => {
  it('prints a ServiceAccount, RBAC and a Deployment, each valid against the Kubernetes schemas', async () => {
    const r = await cli('k8s', 'install-manifest', '--image', 'registry.example.com/migpool:0.1.0', '--drain');
    expect(r.code).toBe(0);
    const docs = YAML.parseAllDocuments(r.out).map((d) => d.toJSON() as { kind: string; metadata: { name: string; namespace?: string } });
    expect(docs.map((d) => d.kind)).toEqual(['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding', 'Deployment']);
    const models: Record<string, new (x: never) => { validate(): void }> = { ServiceAccount, ClusterRole, ClusterRoleBinding, Role, RoleBinding, Deployment };
    for (const d of docs) expect(() => new models[d.kind]!(d as never).validate(), d.kind).not.toThrow();
    const deployment = docs[5] as unknown as { spec: { replicas: number; template: { spec: { serviceAccountName: string; containers: { args: string[]; env: unknown[] }[] } } } };
    expect(deployment.spec.replicas).toBe(2);
    expect(deployment.spec.template.spec.serviceAccountName).toBe('migpool-controller');
    expect(deployment.spec.template.spec.containers[0]?.args).toEqual([
      'k8s', 'controller', '--namespace', 'gpu-operator', '--configmap', 'migpool-mig-parted-config', '--config-key', 'config.yaml', '--lease', 'migpool-controller', '--identity', '$(POD_NAME)', '--drain',
    ]);
    const role = docs[1] as unknown as { rules: { resources: string[] }[] };
    expect(role.rules.some((x) => x.resources.includes('pods/eviction'))).toBe(true);
    const noDrain = await cli('k8s', 'install-manifest', '--image', 'x', '--no-kueue');
    expect(noDrain.out).not.toContain('pods/eviction');
    expect(noDrain.out).not.toContain('workloads');
    expect(noDrain.out).toContain('--no-kueue');
  });

  it('bad flags are one line, exit 2', async () => {
    expect((await cli('k8s', 'install-manifest')).err.trim()).toMatch(/^migpool: --image is required/);
    const retry = await cli('k8s', 'controller', '--lease-duration', '3', '--retry', '2');
    expect(retry.code).toBe(2);
    expect(retry.err.trim()).toBe('migpool: --retry 2: must be under two thirds of --lease-duration (3), or the leader cannot renew the Lease before it lapses');
    expect((await cli('k8s', 'controller', '--lease-duration', '0.5')).err.trim()).toMatch(/^migpool: --lease-duration '0.5': give a whole number of seconds/);
  });

  it('k8s manifest writes requests, /dev/shm, the product nodeSelector and the Kueue queue', async () => {
    const file = join(dir, 'job.yaml');
    writeFileSync(file, 'name: resnet\ncommand: [python, train.py]\nresources: {profile: 3g.20gb}\n');
    const r = await cli('k8s', 'manifest', file, '--image', 'pytorch:latest', '--gpu-product', 'NVIDIA-A100-SXM4-40GB', '--queue', 'team-queue');
    expect(r.code).toBe(0);
    const job = YAML.parse(r.out) as { metadata: { labels: Record<string, string> }; spec: { template: { spec: { nodeSelector: unknown; volumes: unknown; containers: { resources: unknown }[] } } } };
    expect(job.metadata.labels['kueue.x-k8s.io/queue-name']).toBe('team-queue');
    expect(job.spec.template.spec.nodeSelector).toEqual({ 'nvidia.com/gpu.product': 'NVIDIA-A100-SXM4-40GB' });
    expect(job.spec.template.spec.volumes).toEqual([{ name: 'dshm', emptyDir: { medium: 'Memory', sizeLimit: '8Gi' } }]);
    expect(job.spec.template.spec.containers[0]?.resources).toEqual({ requests: { cpu: '4', memory: '16Gi' }, limits: { 'nvidia.com/mig-3g.20gb': 1 } });
    const bare = YAML.parse((await cli('k8s', 'manifest', file, '--image', 'p', '--cpu', '', '--memory', '', '--shm', '')).out) as { spec: { template: { spec: Record<string, unknown> } } };
    expect(bare.spec.template.spec['volumes']).toBeUndefined();
    expect((bare.spec.template.spec['containers'] as { resources: unknown }[])[0]?.resources).toEqual({ limits: { 'nvidia.com/mig-3g.20gb': 1 } });
  });
});
