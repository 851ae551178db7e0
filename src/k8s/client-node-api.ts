/**
 * The {@link K8sApi} port over @kubernetes/client-node 1.4: kubeconfig found as kubectl finds it,
 * patches sent with the content type each needs, and API failures turned into one-line errors.
 */
import { ApiException, CoreV1Api, CustomObjectsApi, KubeConfig, PatchStrategy, setHeaderOptions, Watch } from '@kubernetes/client-node';
import { badInput, MigpoolError } from '../errors.js';
import type { ClusterPolicyObject, ConfigMapObject, DrainPodObject, K8sApi, LeaseObject } from './api.js';
import type { NodeObject, WorkloadObject } from './inventory.js';

/**
 * Leases go through the generic object API, with plain JSON bodies: client-node's typed V1Lease
 * would turn MicroTime fields into `Date`s and write them back with milliseconds only.
 */
const LEASES = { group: 'coordination.k8s.io', version: 'v1', plural: 'leases' } as const;
/** NVIDIA/gpu-operator: ClusterPolicy is `nvidia.com/v1`, resource `clusterpolicies`, cluster-scoped. */
const CLUSTER_POLICIES = { group: 'nvidia.com', version: 'v1', plural: 'clusterpolicies' } as const;
/**
 * Kueue's Workload: served as v1beta1 by every Kueue release, and as v1beta2 (then the storage
 * version, v1beta1 deprecated) by newer ones (kubernetes-sigs/kueue apis/kueue/v1beta2).
 */
const WORKLOAD_VERSIONS = ['v1beta1', 'v1beta2'] as const;

const isStatus = (e: unknown, code: number): boolean => e instanceof ApiException && (e as ApiException<unknown>).code === code;

/**
 * Loads a kubeconfig as kubectl does: `file` when given (`--kubeconfig`), else `$KUBECONFIG`
 * (paths joined by `:`, merged), else `~/.kube/config`, else the in-cluster service account.
 */
export function loadKubeConfig(file?: string, context?: string): KubeConfig {
  const kc = new KubeConfig();
  try {
    if (file) kc.loadFromFile(file);
    else kc.loadFromDefault();
  } catch (e) {
    const where = file ? `--kubeconfig '${file}'` : `the kubeconfig (${process.env['KUBECONFIG'] ? `KUBECONFIG=${process.env['KUBECONFIG']}` : '~/.kube/config'})`;
    throw badInput(`cannot load ${where}: ${(e as Error).message.split('\n')[0]}; give a readable kubeconfig with --kubeconfig FILE`);
  }
  if (context) {
    if (!kc.getContexts().some((c) => c.name === context)) {
      throw badInput(`--context '${context}' is not in the kubeconfig; it has ${kc.getContexts().map((c) => c.name).join(', ') || 'no contexts'}`);
    }
    kc.setCurrentContext(context);
  }
  if (!kc.getCurrentCluster()) throw badInput('the kubeconfig names no current cluster; set current-context or pass --context NAME');
  return kc;
}

/** The `message` of a Kubernetes Status object in an error body, if there is one. */
function statusMessage(body: unknown): string | null {
  let value: unknown = body;
  if (typeof body === 'string') {
    try {
      value = JSON.parse(body);
    } catch {
      return body.trim() === '' ? null : (body.trim().split('\n')[0] ?? null);
    }
  }
  if (value && typeof value === 'object' && 'message' in value && typeof (value as { message: unknown }).message === 'string') {
    return (value as { message: string }).message;
  }
  return null;
}

/** A failed call as one line: what was asked, of which server, what it said, what to do. */
export function apiError(server: string, what: string, e: unknown): MigpoolError {
  if (e instanceof MigpoolError) return e;
  if (e instanceof ApiException) {
    const code = (e as ApiException<unknown>).code;
    const said = statusMessage((e as ApiException<unknown>).body) ?? (e as Error).message.split('\n')[0] ?? '';
    if (code === 401) return new MigpoolError('RUNTIME', `${what}: the Kubernetes API at ${server} refused the credentials (401); refresh the kubeconfig's token or certificate`, { status: code });
    if (code === 403) return new MigpoolError('RUNTIME', `${what}: forbidden (403) by the Kubernetes API at ${server}: ${said}; grant the user the RBAC rights listed in the README (Kubernetes section)`, { status: code });
    if (code === 404) return new MigpoolError('BAD_INPUT', `${what}: not found (404) at ${server}: ${said}`, { status: code });
    if (code === 409) return new MigpoolError('RUNTIME', `${what}: conflict (409): ${said}; someone changed it meanwhile; run the command again`, { status: code });
    return new MigpoolError('RUNTIME', `${what}: the Kubernetes API at ${server} answered ${code}: ${said}`, { status: code });
  }
  const err = e as { code?: string; cause?: { code?: string }; message?: string };
  const code = err.code ?? err.cause?.code;
  const detail = code ?? (err.message ?? String(e)).split('\n')[0];
  return new MigpoolError('RUNTIME', `${what}: cannot reach the Kubernetes API at ${server} (${detail}); check that the cluster is up and the kubeconfig (--kubeconfig, KUBECONFIG, --context) points at it`, { code });
}

/** The port over client-node. */
export class ClientNodeApi implements K8sApi {
  readonly server: string;
  private readonly core: CoreV1Api;
  private readonly objects: CustomObjectsApi;
  private readonly watcher: Watch;

  constructor(kc: KubeConfig) {
    this.watcher = new Watch(kc);
    this.server = kc.getCurrentCluster()?.server ?? '(no server)';
    this.core = kc.makeApiClient(CoreV1Api);
    this.objects = kc.makeApiClient(CustomObjectsApi);
  }

  private async call<T>(what: string, f: () => Promise<T>): Promise<T> {
    try {
      return await f();
    } catch (e) {
      throw apiError(this.server, what, e);
    }
  }

  async listNodes(): Promise<NodeObject[]> {
    return this.call('listing nodes', async () => (await this.core.listNode()).items);
  }

  async readNode(name: string): Promise<NodeObject> {
    return this.call(`reading node ${name}`, () => this.core.readNode({ name }));
  }

  async listPods(fieldSelector: string): Promise<DrainPodObject[]> {
    return this.call(`listing pods (${fieldSelector})`, async () => (await this.core.listPodForAllNamespaces({ fieldSelector })).items);
  }

  async readConfigMap(namespace: string, name: string): Promise<ConfigMapObject> {
    return this.call(`reading ConfigMap ${namespace}/${name}`, () => this.core.readNamespacedConfigMap({ namespace, name }));
  }

  async patchConfigMapData(namespace: string, name: string, data: Readonly<Record<string, string>>, resourceVersion: string): Promise<ConfigMapObject> {
    return this.call(`updating ConfigMap ${namespace}/${name}`, () =>
      this.core.patchNamespacedConfigMap(
        { namespace, name, body: { metadata: { resourceVersion }, data }, fieldManager: 'migpool' },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      ),
    );
  }

  async patchNodeLabels(name: string, labels: Readonly<Record<string, string | null>>): Promise<NodeObject> {
    return this.call(`labelling node ${name}`, () =>
      this.core.patchNode({ name, body: { metadata: { labels } }, fieldManager: 'migpool' }, setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch)),
    );
  }

  async setUnschedulable(name: string, unschedulable: boolean): Promise<NodeObject> {
    return this.call(`${unschedulable ? 'cordoning' : 'uncordoning'} node ${name}`, () =>
      this.core.patchNode({ name, body: { spec: { unschedulable } }, fieldManager: 'migpool' }, setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch)),
    );
  }

  async evictPod(namespace: string, name: string): Promise<boolean> {
    try {
      await this.core.createNamespacedPodEviction({ namespace, name, body: { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name, namespace } } });
      return true;
    } catch (e) {
      if (e instanceof ApiException && (e as ApiException<unknown>).code === 429) return false;
      // Already gone: nothing left to evict.
      if (e instanceof ApiException && (e as ApiException<unknown>).code === 404) return true;
      throw apiError(this.server, `evicting pod ${namespace}/${name}`, e);
    }
  }

  async watch(kind: 'nodes' | 'pods', onChange: (type: string) => void, onEnd: (error: MigpoolError | null) => void): Promise<() => void> {
    const controller = await this.watcher.watch(
      `/api/v1/${kind}`,
      {},
      (type: string) => onChange(type),
      (err: unknown) => {
        if (err === null || err === undefined || (err as { name?: string }).name === 'AbortError') return onEnd(null);
        const status = (err as { statusCode?: number }).statusCode;
        onEnd(
          status !== undefined
            ? new MigpoolError('RUNTIME', `watching ${kind}: the Kubernetes API at ${this.server} answered ${status}`, { status })
            : apiError(this.server, `watching ${kind}`, err),
        );
      },
    );
    return () => controller.abort();
  }

  async listClusterPolicies(): Promise<ClusterPolicyObject[] | null> {
    try {
      return ((await this.objects.listClusterCustomObject({ ...CLUSTER_POLICIES })) as { items?: ClusterPolicyObject[] }).items ?? [];
    } catch (e) {
      if (isStatus(e, 404)) return null;
      throw apiError(this.server, 'listing ClusterPolicies (nvidia.com/v1)', e);
    }
  }

  async listWorkloads(): Promise<WorkloadObject[] | null> {
    for (const version of WORKLOAD_VERSIONS) {
      try {
        return ((await this.objects.listClusterCustomObject({ group: 'kueue.x-k8s.io', version, plural: 'workloads' })) as { items?: WorkloadObject[] }).items ?? [];
      } catch (e) {
        if (isStatus(e, 404)) continue;
        throw apiError(this.server, `listing Kueue Workloads (kueue.x-k8s.io/${version})`, e);
      }
    }
    return null;
  }

  async readLease(namespace: string, name: string): Promise<LeaseObject | null> {
    try {
      return (await this.objects.getNamespacedCustomObject({ ...LEASES, namespace, name })) as LeaseObject;
    } catch (e) {
      if (isStatus(e, 404)) return null;
      throw apiError(this.server, `reading Lease ${namespace}/${name}`, e);
    }
  }

  async createLease(namespace: string, lease: LeaseObject): Promise<LeaseObject> {
    const body = { ...lease, apiVersion: 'coordination.k8s.io/v1', kind: 'Lease' };
    return this.call(`creating Lease ${namespace}/${lease.metadata?.name ?? ''}`, async () =>
      (await this.objects.createNamespacedCustomObject({ ...LEASES, namespace, body, fieldManager: 'migpool' })) as LeaseObject,
    );
  }

  async replaceLease(namespace: string, name: string, lease: LeaseObject): Promise<LeaseObject> {
    const body = { ...lease, apiVersion: 'coordination.k8s.io/v1', kind: 'Lease' };
    return this.call(`updating Lease ${namespace}/${name}`, async () =>
      (await this.objects.replaceNamespacedCustomObject({ ...LEASES, namespace, name, body, fieldManager: 'migpool' })) as LeaseObject,
    );
  }
}
