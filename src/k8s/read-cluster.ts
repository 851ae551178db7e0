/**
 * Reads what planning needs from the API: nodes, live pods, Kueue Workloads, the GPU Operator's
 * ClusterPolicy (checked to name migpool's ConfigMap) and the MIG manager's config. Used by
 * `k8s plan`, `k8s apply` and the controller.
 */
import { badInput, MigpoolError } from '../errors.js';
import type { K8sApi } from './api.js';
import { checkClusterPolicy } from './cluster-policy.js';
import { readClusterView, type ClusterView } from './inventory.js';

export interface ReadClusterOptions {
  readonly namespace: string;
  readonly configMap: string;
  readonly configKey: string;
  readonly only?: readonly string[];
  readonly ignore?: readonly string[];
  readonly force?: boolean;
  /** Read Kueue Workloads as demand (when Kueue is installed). */
  readonly kueue?: boolean;
}

export interface ClusterRead {
  readonly view: ClusterView;
  readonly configText: string;
  readonly resourceVersion: string;
}

/**
 * Reads the cluster. The ClusterPolicy check comes first: a MIG manager that does not read the
 * ConfigMap is BAD_INPUT with the fix, before anything else is looked at. Warnings (no
 * ClusterPolicy to check) are added to the view's.
 */
export async function readCluster(api: K8sApi, opts: ReadClusterOptions): Promise<ClusterRead> {
  const policyWarning = checkClusterPolicy(await api.listClusterPolicies(), opts.namespace, opts.configMap);
  const nodes = await api.listNodes();
  const pods = await api.listPods('status.phase!=Succeeded,status.phase!=Failed');
  const workloads = opts.kueue === false ? null : await api.listWorkloads();
  let cm;
  try {
    cm = await api.readConfigMap(opts.namespace, opts.configMap);
  } catch (e) {
    if (e instanceof MigpoolError && e.details['status'] === 404) {
      throw badInput(
        `ConfigMap ${opts.namespace}/${opts.configMap} not found at ${api.server}; create it from the operator's default (README, Kubernetes, step 1) or name the MIG manager's mig-parted ConfigMap with --namespace and --configmap`,
      );
    }
    throw e;
  }
  const configText = cm.data?.[opts.configKey];
  if (configText === undefined) {
    throw badInput(`ConfigMap ${opts.namespace}/${opts.configMap} has no key '${opts.configKey}' (it has ${Object.keys(cm.data ?? {}).join(', ') || 'no data'}); name the key with --config-key`);
  }
  const view = readClusterView(nodes, pods, {
    configText,
    configSource: `${opts.namespace}/${opts.configMap}:${opts.configKey}`,
    force: opts.force === true,
    ...(opts.only && opts.only.length > 0 ? { only: new Set(opts.only) } : {}),
    ignore: new Set(opts.ignore ?? []),
    ...(workloads ? { workloads } : {}),
  });
  for (const n of opts.only ?? []) {
    if (!view.nodes.some((v) => v.name === n)) throw badInput(`--node ${n}: no GPU node of that name at ${api.server}; GPU nodes: ${view.nodes.map((v) => v.name).join(', ') || 'none'}`);
  }
  const warnings = policyWarning === null ? view.warnings : [policyWarning, ...view.warnings];
  return { view: { ...view, warnings }, configText, resourceVersion: cm.metadata?.resourceVersion ?? '' };
}
