import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ClientNodeApi, loadKubeConfig } from '../src/k8s/client-node-api.js';
import { runController, type ControllerReport } from '../src/k8s/controller.js';
import { controllerRules, type PolicyRule } from '../src/k8s/install.js';
import { clusterPolicy, gpuNode, gpuPod, kubeconfigFor, startFakeK8s, type FakeK8s, type FakeK8sOptions, type RecordedRequest } from './fixtures/k8s-api-server.js';

const DEFAULT_CONFIG = readFileSync(new URL('./fixtures/mig-parted/config-default.yaml', import.meta.url), 'utf8');
const NS = 'gpu-operator';
const CM = 'migpool-mig-parted-config';
const LEASE = 'migpool-controller';
const TOKENS = ['token-a', 'token-b'];

let dir: string;
let server: FakeK8s | null = null;
const running: { stop: () => Promise<ControllerReport> }[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'migpool-k8s-ctl-'));
});
afterEach(async () => {
  for (const c of running.splice(0)) await c.stop();
  await server?.close();
  server = null;
  rmSync(dir, { recursive: true, force: true });
});

async function start(options: Partial<FakeK8sOptions> = {}): Promise<FakeK8s> {
  const cut = { 'nvidia.com/mig-3g.20gb': 2 };
  server = await startFakeK8s({
    nodes: [gpuNode('a100-1', { config: 'all-3g.20gb', resources: cut }), gpuNode('a100-2', { config: 'all-3g.20gb', resources: cut })],
    clusterPolicies: [clusterPolicy(CM)],
    workloads: [],
    configMaps: [{ metadata: { name: CM, namespace: NS }, data: { 'config.yaml': DEFAULT_CONFIG } }],
    ...options,
    token: TOKENS,
    migManager: { namespace: NS, name: CM },
    stepMs: 20,
  });
  return server;
}

/** Starts a controller replica in this process, talking to the stand-in with its own token. */
function controller(token: string, identity: string, extra: { drain?: boolean; leaseDurationSeconds?: number; intervalSeconds?: number } = {}): { logs: string[]; stop: () => Promise<ControllerReport> } {
  const file = join(dir, `kubeconfig-${identity}`);
  writeFileSync(file, kubeconfigFor(server!.url, token));
  const api = new ClientNodeApi(loadKubeConfig(file));
  const abort = new AbortController();
  const logs: string[] = [];
  const done = runController(api, {
    read: { namespace: NS, configMap: CM, configKey: 'config.yaml', kueue: true },
    apply: { drain: extra.drain === true, timeoutSeconds: 5, drainTimeoutSeconds: 5, pollSeconds: 0.02, configSyncSeconds: 0 },
    lease: { namespace: NS, name: LEASE, identity, leaseDurationSeconds: extra.leaseDurationSeconds ?? 2 },
    retrySeconds: 0.1,
    intervalSeconds: extra.intervalSeconds ?? 0.05,
    now: () => Date.now(),
    sleep: (ms, signal) => delay(ms, undefined, { signal }).catch(() => undefined),
    signal: abort.signal,
    log: (line) => logs.push(line),
  });
  let stopped: Promise<ControllerReport> | null = null;
  const handle = {
    logs,
    stop: () => {
      stopped ??= (abort.abort(), done);
      return stopped;
    },
  };
  running.push(handle);
  return handle;
}

async function waitFor(what: string, f: () => boolean, ms = 8000): Promise<void> {
  const until = Date.now() + ms;
  while (!f()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await delay(20);
  }
}

const labels = (node: Record<string, unknown>): Record<string, string> => ((node['metadata'] as Record<string, unknown>)['labels'] ?? {}) as Record<string, string>;
const allocatable = (node: Record<string, unknown>): Record<string, string> => ((node['status'] as Record<string, unknown>)['allocatable'] ?? {}) as Record<string, string>;
const leaseSpec = (): Record<string, unknown> => (server!.lease(NS, LEASE)?.['spec'] ?? {}) as Record<string, unknown>;
const holder = (): unknown => leaseSpec()['holderIdentity'];
/** Writes other than the Lease's: what acting on the cluster means. */
const actions = (from = 0): RecordedRequest[] => server!.requests.slice(from).filter((q) => q.method !== 'GET' && !q.path.includes('/leases'));
const settled = (name: string, resource: string, min: number): boolean => {
  const n = server!.node(name);
  return labels(n)['nvidia.com/mig.config']?.startsWith('migpool-') === true && labels(n)['nvidia.com/mig.config.state'] === 'success' && Number(allocatable(n)[resource] ?? 0) >= min;
};

describe('migpool k8s controller', () => {
  it('two replicas: one leads and acts, the other stands by, takes over when the first stops, and re-partitions on new demand', async () => {
    await start();
    const a = controller('token-a', 'ctl-a');
    await waitFor('ctl-a to lead', () => holder() === 'ctl-a');
    const b = controller('token-b', 'ctl-b');
    await delay(300);
    expect(holder()).toBe('ctl-a');
    expect(b.logs.some((l) => l.includes('ctl-b: standing by (Lease gpu-operator/migpool-controller held by ctl-a)'))).toBe(true);
    // Nothing waits yet: nobody changes anything.
    expect(actions()).toEqual([]);

    for (const i of [1, 2, 3]) server!.addPod(gpuPod('team', `small-${i}`, { 'nvidia.com/mig-1g.5gb': 1 }));
    await waitFor('a node cut for 3 x 1g.5gb', () => settled('a100-1', 'nvidia.com/mig-1g.5gb', 3) || settled('a100-2', 'nvidia.com/mig-1g.5gb', 3));
    const cut = settled('a100-1', 'nvidia.com/mig-1g.5gb', 3) ? 'a100-1' : 'a100-2';
    const other = cut === 'a100-1' ? 'a100-2' : 'a100-1';
    expect(actions().length).toBeGreaterThan(0);
    expect(new Set(actions().map((q) => q.token))).toEqual(new Set(['token-a']));
    expect(server!.requests.filter((q) => q.token === 'token-b' && q.method !== 'GET')).toEqual([]);
    expect(a.logs.some((l) => /re-partitioning a100-\d \(migpool-[0-9a-f]{10}\)/.test(l))).toBe(true);
    await waitFor('the leader to see the MIG manager succeed', () => a.logs.some((l) => l.startsWith(`node ${cut}: success, advertises `)));

    // The scheduler binds the pods; then the first replica stops and releases the Lease.
    for (const i of [1, 2, 3]) server!.bindPod('team', `small-${i}`, cut);
    const reportA = await a.stop();
    expect(reportA.leaderships).toBe(1);
    expect(reportA.reconfigured).toBe(1);
    await waitFor('ctl-b to take over', () => holder() === 'ctl-b', 2000);
    expect(leaseSpec()['leaseTransitions']).toBe(1);
    const takeover = server!.requests.length;

    // New demand: a whole GPU. The new leader turns MIG off on the other node; the busy one stays.
    server!.addPod(gpuPod('team', 'big', { 'nvidia.com/gpu': 1 }));
    await waitFor('the other node with MIG off', () => labels(server!.node(other))['nvidia.com/mig.config.state'] === 'success' && allocatable(server!.node(other))['nvidia.com/gpu'] === '1');
    expect(new Set(actions(takeover).map((q) => q.token))).toEqual(new Set(['token-b']));
    expect(server!.requests.slice(takeover).filter((q) => q.token === 'token-a')).toEqual([]);
    expect(actions(takeover).some((q) => q.path.startsWith(`/api/v1/nodes/${cut}`))).toBe(false);

    await b.stop();
    expect(holder()).toBe('');
  });

  it('a watch event wakes the leader: new demand is served long before the interval', async () => {
    await start();
    const a = controller('token-a', 'ctl-a', { intervalSeconds: 600 });
    await waitFor('ctl-a to read the cluster once', () => a.logs.some((l) => l.startsWith('node a100-2: nvidia.com/mig.config=')));
    await waitFor('both watches open', () => server!.requests.filter((q) => /\/api\/v1\/(nodes|pods)\?watch=true/.test(q.path)).length >= 2);
    const reads = server!.requests.filter((q) => q.path === '/api/v1/nodes').length;
    const added = Date.now();
    server!.addPod(gpuPod('team', 'small', { 'nvidia.com/mig-1g.5gb': 1 }));
    await waitFor('a node cut for the new pod', () => settled('a100-1', 'nvidia.com/mig-1g.5gb', 1) || settled('a100-2', 'nvidia.com/mig-1g.5gb', 1), 5000);
    expect(Date.now() - added).toBeLessThan(5000);
    expect(server!.requests.filter((q) => q.path === '/api/v1/nodes').length).toBeGreaterThan(reads);
  });

  it('takes over a Lease whose holder stopped renewing only after the lease duration', async () => {
    await start();
    const file = join(dir, 'kubeconfig-ghost');
    writeFileSync(file, kubeconfigFor(server!.url, 'token-a'));
    const ghost = new ClientNodeApi(loadKubeConfig(file));
    const now = new Date().toISOString();
    await ghost.createLease(NS, { metadata: { name: LEASE, namespace: NS }, spec: { holderIdentity: 'ghost', leaseDurationSeconds: 2, acquireTime: now, renewTime: now, leaseTransitions: 4 } });
    const started = Date.now();
    const b = controller('token-b', 'ctl-b');
    await waitFor('ctl-b to take over', () => holder() === 'ctl-b', 5000);
    // It must have seen the same record for the whole duration before taking it.
    expect(Date.now() - started).toBeGreaterThanOrEqual(1950);
    expect(leaseSpec()['leaseTransitions']).toBe(5);
    expect(b.logs[0]).toContain('standing by (Lease gpu-operator/migpool-controller held by ghost)');
    expect(String(leaseSpec()['renewTime'])).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
  });

  it('a ClusterPolicy that does not name the ConfigMap: the leader says so once and changes nothing', async () => {
    await start({ clusterPolicies: [clusterPolicy()], pods: [gpuPod('team', 'small', { 'nvidia.com/mig-1g.5gb': 1 })] });
    const a = controller('token-a', 'ctl-a');
    await delay(400);
    const failures = a.logs.filter((l) => l.startsWith('reconcile failed'));
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatch(/ClusterPolicy cluster-policy leaves migManager.config.name unset.*kubectl patch clusterpolicy cluster-policy/);
    expect(actions()).toEqual([]);
  });

  it('uses exactly the RBAC rules install-manifest grants (drain, Kueue Workloads)', async () => {
    const template = { spec: { containers: [{ name: 'main', image: 'x', resources: { limits: { 'nvidia.com/mig-1g.5gb': '1' } } }] } };
    await start({
      nodes: [gpuNode('a100-1', { config: 'all-3g.20gb', resources: { 'nvidia.com/mig-3g.20gb': 2 } })],
      pods: [gpuPod('web', 'frontend', {}, 'a100-1')],
      workloads: [{ metadata: { name: 'job-x', namespace: 'team' }, spec: { queueName: 'q', podSets: [{ name: 'main', count: 2, template }] }, status: {} }],
    });
    const a = controller('token-a', 'ctl-a', { drain: true });
    await waitFor('the node cut for the Workload', () => settled('a100-1', 'nvidia.com/mig-1g.5gb', 2));
    await a.stop();
    expect(server!.pod('web', 'frontend')).toBeUndefined();

    const rules = controllerRules({ configMap: CM, name: LEASE, drain: true, kueue: true });
    const used = new Set<string>();
    for (const q of server!.requests) {
      const call = rbacCall(q);
      const rule = [...rules.cluster.map((r) => ({ r, ns: null })), ...rules.namespaced.map((r) => ({ r, ns: NS }))].find(
        ({ r, ns }) => allows(r, call) && (ns === null || ns === call.namespace),
      );
      expect(rule, `${q.method} ${q.path} needs ${JSON.stringify(call)}`).toBeDefined();
      used.add(`${call.group}/${call.resource}/${call.verb}`);
    }
    // And nothing more: every verb granted was used.
    const granted = [...rules.cluster, ...rules.namespaced].flatMap((r) => r.verbs.map((v) => `${r.apiGroups[0] ?? ''}/${r.resources[0] ?? ''}/${v}`));
    expect([...new Set(granted)].sort()).toEqual([...used].sort());
  });
});

interface RbacCall {
  group: string;
  resource: string;
  verb: string;
  namespace: string | null;
  name: string | null;
}

/** The RBAC attributes of a request, as the API server's request info resolver derives them. */
function rbacCall(q: RecordedRequest): RbacCall {
  const parts = q.path.split('?')[0]!.split('/').filter((p) => p !== '');
  const [group, rest] = parts[0] === 'api' ? ['', parts.slice(2)] : [parts[1] ?? '', parts.slice(3)];
  let namespace: string | null = null;
  let path = rest;
  if (path[0] === 'namespaces' && path.length > 2) {
    namespace = path[1] ?? null;
    path = path.slice(2);
  }
  const resource = path.length > 2 ? `${path[0]}/${path[2]}` : (path[0] ?? '');
  const name = path[1] ?? null;
  const verb = { GET: name === null ? (/[?&]watch=true/.test(q.path) ? 'watch' : 'list') : 'get', POST: 'create', PUT: 'update', PATCH: 'patch', DELETE: 'delete' }[q.method] ?? q.method;
  return { group, resource, verb, namespace, name };
}

function allows(r: PolicyRule, c: RbacCall): boolean {
  return r.apiGroups.includes(c.group) && r.resources.includes(c.resource) && r.verbs.includes(c.verb) && (r.resourceNames === undefined || (c.name !== null && r.resourceNames.includes(c.name)));
}
