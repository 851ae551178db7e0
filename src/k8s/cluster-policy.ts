/**
 * Checks that the GPU Operator's MIG manager reads the ConfigMap migpool writes. Pure.
 *
 * Facts from NVIDIA/gpu-operator (v26.3):
 * - ClusterPolicy `spec.migManager.config.name` names the MIG manager's mig-parted ConfigMap
 *   (api/nvidia/v1/clusterpolicy_types.go, MIGPartedConfigSpec). A name that is empty or equal to
 *   `default-mig-parted-config` counts as not custom (GetConfigMapName).
 * - Without a custom name, the operator mounts `default-mig-parted-config`'s `config.yaml` as
 *   `config-default.yaml` and sets `DEFAULT_CONFIG_FILE`: the MIG manager generates its configs
 *   from the hardware and reads that file only as a fallback when discovery fails
 *   (controllers/object_controls.go, TransformMigManager). With a custom name it sets
 *   `CONFIG_FILE=/mig-parted-config/config.yaml` from that ConfigMap.
 * - The operator creates `default-mig-parted-config` and, when it exists, updates it to its own
 *   content on every reconcile (controllers/object_controls.go, createConfigMap: Create, then Update
 *   on AlreadyExists), so edits to it are lost.
 */
import { badInput } from '../errors.js';
import type { ClusterPolicyObject } from './api.js';

/** The ConfigMap the GPU Operator owns (controllers/object_controls.go, MigPartedDefaultConfigMapName). */
export const OPERATOR_DEFAULT_CONFIGMAP = 'default-mig-parted-config';

/** migpool's default for `--configmap`: a ConfigMap of its own, named in the ClusterPolicy. */
export const MIGPOOL_CONFIGMAP = 'migpool-mig-parted-config';

function patchCommand(policy: string, configMap: string): string {
  return `kubectl patch clusterpolicy ${policy} --type merge -p '{"spec":{"migManager":{"config":{"name":"${configMap}"}}}}'`;
}

/**
 * Throws BAD_INPUT (one line, naming the ClusterPolicy and the fix) unless every ClusterPolicy has
 * the MIG manager enabled and reading `configMap`. `policies` null or empty (no GPU Operator, a MIG
 * manager deployed by hand): returns a warning, since nothing can be checked.
 */
export function checkClusterPolicy(policies: readonly ClusterPolicyObject[] | null, namespace: string, configMap: string): string | null {
  if (configMap === OPERATOR_DEFAULT_CONFIGMAP) {
    throw badInput(
      `--configmap ${OPERATOR_DEFAULT_CONFIGMAP}: the GPU Operator owns that ConfigMap, rewrites it on every reconcile and (26.3+) mounts it only as a fallback, so configs migpool writes there are never applied; create a ConfigMap of migpool's own (default ${MIGPOOL_CONFIGMAP}, see README, Kubernetes) and name it in the ClusterPolicy's migManager.config.name`,
    );
  }
  if (policies === null || policies.length === 0) {
    return `no GPU Operator ClusterPolicy found (${policies === null ? 'the nvidia.com/v1 ClusterPolicy CRD is not installed' : 'none exists'}): cannot check that the MIG manager reads ConfigMap ${namespace}/${configMap}`;
  }
  for (const p of policies) {
    const name = p.metadata?.name ?? '?';
    const mm = p.spec?.migManager;
    if (mm?.enabled === false) {
      throw badInput(`ClusterPolicy ${name} has migManager.enabled=false: no MIG manager applies configs; enable it: kubectl patch clusterpolicy ${name} --type merge -p '{"spec":{"migManager":{"enabled":true}}}'`);
    }
    const used = mm?.config?.name ?? '';
    if (used === configMap) continue;
    if (used === '' || used === OPERATOR_DEFAULT_CONFIGMAP) {
      throw badInput(
        `ClusterPolicy ${name} leaves migManager.config.name ${used === '' ? 'unset' : `at ${used}`}, so the MIG manager generates its configs from the hardware (GPU Operator 26.3+) and never reads ConfigMap ${namespace}/${configMap}; point it there: ${patchCommand(name, configMap)}`,
      );
    }
    throw badInput(`ClusterPolicy ${name} has migManager.config.name=${used}, so the MIG manager reads ConfigMap ${used}, not ${configMap}; pass --configmap ${used}, or point it at ${configMap}: ${patchCommand(name, configMap)}`);
  }
  return null;
}
