/**
 * `migpool k8s apply`: carries out a {@link K8sPlan} through the Kubernetes API. Time is injected
 * (the caller's clock), so tests can run it against a stand-in API server quickly.
 *
 * For the whole plan, once: the new configs go into the MIG manager's ConfigMap (one merge patch
 * with the resourceVersion read, so a concurrent edit fails rather than being lost; migpool's own
 * configs no node uses are dropped, every other config is kept). Then node by node: check again
 * that no GPU pod is bound to it (unless forced); optionally cordon it and evict its pods
 * (DaemonSet and static pods stay, as with `kubectl drain --ignore-daemonsets`); set its
 * `nvidia.com/mig.config` label (dropping the old `nvidia.com/mig.config.state`, so that a stale
 * `success` is not mistaken for the new one); poll `nvidia.com/mig.config.state` until `success`
 * or `failed`; uncordon it after a success. A node that failed or timed out stays cordoned, so
 * that pods do not land on GPUs in an unknown state.
 */
import { MigpoolError } from '../errors.js';
import type { DrainPodObject, K8sApi } from './api.js';
import { editMigConfigs } from './configmap.js';
import type { ClusterView } from './inventory.js';
import type { K8sPlan } from './plan.js';
import { LABEL_MIG_CONFIG, LABEL_MIG_STATE, podSlices, slicesIn, type SliceName } from './resources.js';

export interface Clock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

export interface ApplyOptions {
  readonly namespace: string;
  readonly configMap: string;
  /** Key of the ConfigMap holding the mig-parted config (`config.yaml`). */
  readonly key: string;
  readonly drain: boolean;
  readonly force: boolean;
  readonly dryRun: boolean;
  /** How long to wait for a node's `nvidia.com/mig.config.state` to settle. */
  readonly timeoutSeconds: number;
  /** How long evicted pods may take to go. */
  readonly drainTimeoutSeconds: number;
  readonly pollSeconds: number;
  /**
   * Seconds to wait between writing the ConfigMap and labelling nodes: the MIG manager reads the
   * ConfigMap through a mounted volume, which the kubelet refreshes only after a while (about a
   * minute by default).
   */
  readonly configSyncSeconds: number;
  readonly clock: Clock;
  readonly log: (line: string) => void;
}

export type NodeOutcome = 'success' | 'failed' | 'timeout' | 'skipped' | 'dry-run';

export interface NodeApplyResult {
  readonly node: string;
  readonly config: string;
  readonly outcome: NodeOutcome;
  readonly cordoned: boolean;
  readonly evicted: readonly string[];
  /** What the node advertises at the end (slice -> count). */
  readonly advertised: Readonly<Record<SliceName, number>>;
  readonly message: string | null;
}

export interface ApplyResult {
  readonly configMap: { readonly added: readonly string[]; readonly removed: readonly string[]; readonly written: boolean };
  readonly nodes: readonly NodeApplyResult[];
}

const ENDED = (p: DrainPodObject): boolean => p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed';
const podId = (p: DrainPodObject): string => `${p.metadata?.namespace ?? 'default'}/${p.metadata?.name ?? '?'}`;

/** Pods `kubectl drain --ignore-daemonsets` would evict: not ended, not DaemonSet-owned, not static. */
function evictable(p: DrainPodObject): boolean {
  if (ENDED(p)) return false;
  if (p.metadata?.ownerReferences?.some((o) => o.kind === 'DaemonSet')) return false;
  if (p.metadata?.annotations?.['kubernetes.io/config.mirror'] !== undefined) return false;
  return true;
}

async function drainNode(api: K8sApi, node: string, options: ApplyOptions): Promise<{ evicted: string[]; left: string[] }> {
  const deadline = options.clock.now() + options.drainTimeoutSeconds * 1000;
  const asked = new Set<string>();
  for (;;) {
    const pods = (await api.listPods(`spec.nodeName=${node}`)).filter(evictable);
    if (pods.length === 0) return { evicted: [...asked], left: [] };
    if (options.clock.now() >= deadline) return { evicted: [...asked], left: pods.map(podId) };
    for (const p of pods) {
      const id = podId(p);
      if (asked.has(id)) continue;
      if (await api.evictPod(p.metadata?.namespace ?? 'default', p.metadata?.name ?? '')) {
        asked.add(id);
        options.log(`node ${node}: evicting ${id}`);
      }
    }
    await options.clock.sleep(options.pollSeconds * 1000);
  }
}

async function waitForState(api: K8sApi, node: string, options: ApplyOptions): Promise<{ state: string | null; advertised: Record<SliceName, number> }> {
  const deadline = options.clock.now() + options.timeoutSeconds * 1000;
  let last: string | null = null;
  for (;;) {
    const n = await api.readNode(node);
    const state = n.metadata?.labels?.[LABEL_MIG_STATE] ?? null;
    if (state !== last) options.log(`node ${node}: ${LABEL_MIG_STATE}=${state ?? '(unset)'}`);
    last = state;
    if (state === 'success' || state === 'failed') return { state, advertised: slicesIn(n.status?.allocatable) };
    if (options.clock.now() >= deadline) return { state: null, advertised: slicesIn(n.status?.allocatable) };
    await options.clock.sleep(options.pollSeconds * 1000);
  }
}

async function applyNode(api: K8sApi, name: string, config: string, options: ApplyOptions): Promise<NodeApplyResult> {
  const result = (outcome: NodeOutcome, rest: Partial<NodeApplyResult>): NodeApplyResult => ({
    node: name,
    config,
    outcome,
    cordoned: false,
    evicted: [],
    advertised: {},
    message: null,
    ...rest,
  });
  const gpuPods = (await api.listPods(`spec.nodeName=${name}`)).filter((p) => !ENDED(p) && Object.keys(podSlices(p.spec)).length > 0);
  if (gpuPods.length > 0 && !options.force) {
    return result('skipped', { message: `GPU pods started meanwhile: ${gpuPods.map(podId).join(', ')}; left alone (--force to change it anyway)` });
  }
  let cordoned = false;
  let evicted: string[] = [];
  if (options.drain) {
    const node = await api.readNode(name);
    if (node.spec?.unschedulable !== true) {
      await api.setUnschedulable(name, true);
      cordoned = true;
      options.log(`node ${name}: cordoned`);
    }
    const drained = await drainNode(api, name, options);
    evicted = drained.evicted;
    if (drained.left.length > 0) {
      return result('timeout', { cordoned, evicted, message: `pods still on the node after ${options.drainTimeoutSeconds}s: ${drained.left.join(', ')}; the node stays cordoned and its label unchanged` });
    }
  }
  await api.patchNodeLabels(name, { [LABEL_MIG_CONFIG]: config, [LABEL_MIG_STATE]: null });
  options.log(`node ${name}: ${LABEL_MIG_CONFIG}=${config}`);
  const { state, advertised } = await waitForState(api, name, options);
  if (state !== 'success') {
    const what = state === 'failed' ? 'the MIG manager reports failed (see its pod logs on the node)' : `no success or failure within ${options.timeoutSeconds}s`;
    return result(state === 'failed' ? 'failed' : 'timeout', { cordoned, evicted, advertised, message: `${what}${cordoned ? '; the node stays cordoned' : ''}` });
  }
  if (cordoned) {
    await api.setUnschedulable(name, false);
    options.log(`node ${name}: uncordoned`);
  }
  return result('success', { cordoned: false, evicted, advertised });
}

/**
 * Applies the plan's changed nodes. `view` is what the plan was made from (its node labels say
 * which migpool configs are still in use); `configText` and `resourceVersion` are the ConfigMap's
 * data as read for it.
 */
export async function applyPlan(api: K8sApi, plan: K8sPlan, view: ClusterView, configText: string, resourceVersion: string, options: ApplyOptions): Promise<ApplyResult> {
  const changes = plan.nodes.filter((n) => n.changed && n.newConfig !== null);
  const source = `${options.namespace}/${options.configMap}:${options.key}`;
  if (changes.length === 0) return { configMap: { added: [], removed: [], written: false }, nodes: [] };
  const inUse = new Set<string>();
  for (const n of view.nodes) if (n.config !== null && !changes.some((c) => c.name === n.name)) inUse.add(n.config);
  const edit = editMigConfigs(configText, plan.configs, inUse, source);
  if (options.dryRun) {
    return {
      configMap: { added: edit.added, removed: edit.removed, written: false },
      nodes: changes.map((n) => ({ node: n.name, config: n.newConfig ?? '', outcome: 'dry-run', cordoned: false, evicted: [], advertised: n.slicesAfter, message: null })),
    };
  }
  if (edit.text !== configText) {
    await api.patchConfigMapData(options.namespace, options.configMap, { [options.key]: edit.text }, resourceVersion);
    options.log(`ConfigMap ${options.namespace}/${options.configMap}: added ${edit.added.join(', ') || 'nothing'}${edit.removed.length > 0 ? `, removed ${edit.removed.join(', ')}` : ''}`);
    if (options.configSyncSeconds > 0) {
      options.log(`waiting ${options.configSyncSeconds}s for the MIG manager's mounted copy of the ConfigMap to update (--config-sync-seconds)`);
      await options.clock.sleep(options.configSyncSeconds * 1000);
    }
  }
  const nodes: NodeApplyResult[] = [];
  for (const n of changes) {
    try {
      nodes.push(await applyNode(api, n.name, n.newConfig ?? '', options));
    } catch (e) {
      if (!(e instanceof MigpoolError)) throw e;
      nodes.push({ node: n.name, config: n.newConfig ?? '', outcome: 'failed', cordoned: false, evicted: [], advertised: {}, message: e.message });
    }
  }
  return { configMap: { added: edit.added, removed: edit.removed, written: edit.text !== configText }, nodes };
}
