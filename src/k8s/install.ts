/**
 * `migpool k8s install-manifest`: what runs the controller in a cluster: a ServiceAccount, RBAC
 * that allows exactly the calls the controller makes, and a Deployment whose replicas elect a
 * leader through a Lease. Pure.
 *
 * RBAC: cluster-wide, nodes get/list/watch/patch (read, label, cordon), pods list/watch, pods/eviction create
 * (only with drain), clusterpolicies list (nvidia.com), workloads list (kueue.x-k8s.io, unless Kueue
 * is left out); in the controller's namespace, its ConfigMap get/patch and its Lease get/update by
 * name, plus leases create, which RBAC cannot restrict by name ("You cannot restrict create or
 * deletecollection requests by their resource name", Kubernetes docs, Using RBAC Authorization).
 */

export interface InstallOptions {
  /** Namespace of the controller, its Lease and the MIG manager's ConfigMap (the GPU Operator's). */
  readonly namespace: string;
  readonly configMap: string;
  readonly configKey: string;
  readonly image: string;
  /** Name of the Deployment, ServiceAccount, roles and Lease. */
  readonly name: string;
  readonly replicas: number;
  readonly drain: boolean;
  readonly kueue: boolean;
}

export interface PolicyRule {
  readonly apiGroups: readonly string[];
  readonly resources: readonly string[];
  readonly resourceNames?: readonly string[];
  readonly verbs: readonly string[];
}

/** The rules the controller needs: cluster-wide, and in its namespace. */
export function controllerRules(o: Pick<InstallOptions, 'configMap' | 'name' | 'drain' | 'kueue'>): { cluster: PolicyRule[]; namespaced: PolicyRule[] } {
  return {
    cluster: [
      { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'watch', 'patch'] },
      { apiGroups: [''], resources: ['pods'], verbs: ['list', 'watch'] },
      ...(o.drain ? [{ apiGroups: [''], resources: ['pods/eviction'], verbs: ['create'] }] : []),
      { apiGroups: ['nvidia.com'], resources: ['clusterpolicies'], verbs: ['list'] },
      ...(o.kueue ? [{ apiGroups: ['kueue.x-k8s.io'], resources: ['workloads'], verbs: ['list'] }] : []),
    ],
    namespaced: [
      { apiGroups: [''], resources: ['configmaps'], resourceNames: [o.configMap], verbs: ['get', 'patch'] },
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], resourceNames: [o.name], verbs: ['get', 'update'] },
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
    ],
  };
}

/** The objects, in the order `kubectl apply` should create them. */
export function installManifest(o: InstallOptions): Record<string, unknown>[] {
  const labels = { 'app.kubernetes.io/name': o.name, 'app.kubernetes.io/managed-by': 'migpool' };
  const meta = { name: o.name, namespace: o.namespace, labels };
  const rules = controllerRules(o);
  const subjects = [{ kind: 'ServiceAccount', name: o.name, namespace: o.namespace }];
  const args = [
    'k8s',
    'controller',
    '--namespace',
    o.namespace,
    '--configmap',
    o.configMap,
    '--config-key',
    o.configKey,
    '--lease',
    o.name,
    '--identity',
    '$(POD_NAME)',
    ...(o.drain ? ['--drain'] : []),
    ...(o.kueue ? [] : ['--no-kueue']),
  ];
  return [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta },
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: o.name, labels }, rules: rules.cluster },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: o.name, labels },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: o.name },
      subjects,
    },
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: meta, rules: rules.namespaced },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: meta,
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: o.name },
      subjects,
    },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: meta,
      spec: {
        replicas: o.replicas,
        selector: { matchLabels: { 'app.kubernetes.io/name': o.name } },
        template: {
          metadata: { labels },
          spec: {
            serviceAccountName: o.name,
            containers: [
              {
                name: 'controller',
                image: o.image,
                command: ['migpool'],
                args,
                env: [{ name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }],
                // migpool's choice: the controller idles between a few list calls every interval.
                resources: { requests: { cpu: '50m', memory: '128Mi' } },
                securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
              },
            ],
          },
        },
      },
    },
  ];
}
