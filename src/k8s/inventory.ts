/**
 * What a Kubernetes cluster offers and wants, in migpool's terms: its GPU nodes (model, GPUs, the
 * MIG layout each GPU has under the node's `nvidia.com/mig.config`, what the device plugin
 * advertises, which slices pods hold, whether migpool may re-partition the node) and the GPU
 * slices pending pods wait for. Pure: the caller reads the API objects and the ConfigMap.
 */
import { badInput, MigpoolError } from '../errors.js';
import { resolveGpuModel } from '../mig/catalog/index.js';
import { placeProfiles } from '../mig/geometry.js';
import type { GpuModel } from '../mig/types.js';
import type { DemandInstance } from '../optimize/demand-layouts.js';
import { matchEntries, parseMigPartedConfig, type MigPartedConfig } from '../partition/config.js';
import { resolveMigDevices } from '../partition/desired.js';
import { schedulingGates, whyNotOnNode, type NodePlacement, type PodPlacementSpec, type Taint } from './scheduling.js';
import {
  addSlices,
  LABEL_COUNT,
  LABEL_MIG_CAPABLE,
  LABEL_MIG_CONFIG,
  LABEL_MIG_STATE,
  LABEL_MIG_STRATEGY,
  LABEL_PRODUCT,
  podSlices,
  slicesIn,
  type PodResourceSpec,
  type SliceName,
} from './resources.js';

/** The fields of a v1 Node migpool reads (client-node's V1Node fits). */
export interface NodeObject {
  readonly metadata?: { readonly name?: string; readonly labels?: Readonly<Record<string, string>> };
  readonly spec?: { readonly unschedulable?: boolean; readonly taints?: readonly Taint[] };
  readonly status?: { readonly allocatable?: Readonly<Record<string, string>>; readonly capacity?: Readonly<Record<string, string>> };
}

/** The fields of a v1 Pod migpool reads (client-node's V1Pod fits). */
export interface PodObject {
  readonly metadata?: { readonly name?: string; readonly namespace?: string };
  readonly spec?: PodResourceSpec & PodPlacementSpec & { readonly nodeName?: string };
  readonly status?: { readonly phase?: string };
}

/**
 * The fields of a Kueue Workload (kueue.x-k8s.io/v1beta1 or v1beta2; the fields read are the same
 * in both, kubernetes-sigs/kueue apis/kueue/v1beta1/workload_types.go): `spec.podSets[]` with a
 * `count` and a pod `template`, `spec.active`, and the `Admitted` and `Finished` conditions.
 */
export interface WorkloadObject {
  readonly metadata?: { readonly name?: string; readonly namespace?: string };
  readonly spec?: {
    readonly active?: boolean;
    readonly podSets?: readonly { readonly name?: string; readonly count?: number; readonly template?: { readonly spec?: PodResourceSpec & PodPlacementSpec } }[];
  };
  readonly status?: { readonly conditions?: readonly { readonly type?: string; readonly status?: string }[] };
}

/** One GPU node as migpool sees it. */
export interface K8sNodeView {
  readonly name: string;
  /** `nvidia.com/gpu.product` as labelled. */
  readonly product: string | null;
  /** The catalogue's model; null when not MIG-capable or ignored. */
  readonly model: GpuModel | null;
  readonly gpuCount: number;
  readonly migCapable: boolean;
  readonly migStrategy: string | null;
  /** `nvidia.com/mig.config` and `nvidia.com/mig.config.state`. */
  readonly config: string | null;
  readonly configState: string | null;
  readonly unschedulable: boolean;
  /** GPU slices the device plugin advertises as allocatable, slice -> count. */
  readonly allocatable: Readonly<Record<SliceName, number>>;
  /** GPU slices held by the pods bound to the node. */
  readonly used: Readonly<Record<SliceName, number>>;
  /** `namespace/name` of the pods bound to the node that hold GPU slices. */
  readonly gpuPods: readonly string[];
  /** Each GPU's instances under the node's config (null entry: MIG off); null when unknown. */
  readonly layouts: readonly (readonly DemandInstance[] | null)[] | null;
  readonly changeable: boolean;
  /** Why the node is not changeable; null when it is. */
  readonly reason: string | null;
}

/** Slices something waits for: a pending pod, or a pod set of a Kueue Workload not yet admitted. */
export interface PendingPod {
  readonly namespace: string;
  /** The pod's name, or `workload/<name>/<podSet>` for a Kueue Workload's pod set. */
  readonly name: string;
  readonly source: 'pod' | 'workload';
  readonly slices: Readonly<Record<SliceName, number>>;
  /** The GPU nodes it could be placed on (nodeSelector, required affinity, taints, cordon). */
  readonly eligible: readonly string[];
  /** When it fits no GPU node: why not, node by node. */
  readonly whyNot: string | null;
}

/** A pending GPU pod the scheduler does not consider yet (scheduling gates), so not demand. */
export interface GatedPod {
  readonly namespace: string;
  readonly name: string;
  readonly gates: readonly string[];
}

export interface ClusterView {
  readonly nodes: readonly K8sNodeView[];
  readonly pending: readonly PendingPod[];
  readonly gated: readonly GatedPod[];
  /** Slices the pending pods wait for, summed. */
  readonly demand: Readonly<Record<SliceName, number>>;
  readonly warnings: readonly string[];
}

export interface InventoryOptions {
  /** The mig-parted config the MIG manager reads (the ConfigMap's `config.yaml`). */
  readonly configText: string;
  /** Names the ConfigMap in messages, e.g. `gpu-operator/default-mig-parted-config:config.yaml`. */
  readonly configSource: string;
  /** Also change nodes whose GPU slices pods hold. */
  readonly force?: boolean;
  /** When given, only these nodes may be changed (the others still serve demand as they are). */
  readonly only?: ReadonlySet<string>;
  /** Nodes to leave out of planning entirely (they still serve demand as they are). */
  readonly ignore?: ReadonlySet<string>;
  /** Kueue Workloads; those not admitted (their Jobs are suspended, so no pods yet) are demand. */
  readonly workloads?: readonly WorkloadObject[];
}

/** `NVIDIA-A100-SXM4-40GB-MIG-1g.5gb` or `...-SHARED` -> `NVIDIA-A100-SXM4-40GB`. */
function productOf(label: string): string {
  return label.replace(/-SHARED$/, '').replace(/-MIG-\d+g\.\d+gb.*$/, '');
}

function sameCounts(a: Readonly<Record<string, number>>, b: Readonly<Record<string, number>>): boolean {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  return [...keys].every((k) => (a[k] ?? 0) === (b[k] ?? 0));
}

/** Slices a set of per-GPU layouts offers: one `gpu` per MIG-off GPU, one per instance otherwise. */
export function slicesOfLayouts(layouts: readonly (readonly DemandInstance[] | null)[]): Record<SliceName, number> {
  const out: Record<SliceName, number> = {};
  for (const l of layouts) {
    if (l === null) out['gpu'] = (out['gpu'] ?? 0) + 1;
    else for (const i of l) out[i.profile] = (out[i.profile] ?? 0) + 1;
  }
  return out;
}

/**
 * Each GPU's layout under the named config of the ConfigMap, as the MIG manager would apply it:
 * mig-parted's entry matching over GPUs 0..count-1 (GPU feature discovery gives no PCI ID, so each
 * of the model's PCI IDs is tried and the first under which the config selects every GPU wins),
 * mig-devices resolved on the model, instances placed as migpool would place them (the MIG manager
 * may choose other positions; only counts are visible through Kubernetes). A string says why not.
 */
export function layoutsUnderConfig(config: MigPartedConfig, name: string, model: GpuModel, count: number): (DemandInstance[] | null)[] | string {
  const entries = config.configs.get(name);
  if (!entries) return `its ${LABEL_MIG_CONFIG} '${name}' is not a config of ${config.file}`;
  let lastProblem = `config '${name}' selects none of its ${count} ${model.name} GPU(s)`;
  for (const pciDeviceId of model.pciDeviceIds) {
    let match;
    try {
      match = matchEntries(
        entries,
        Array.from({ length: count }, (_, index) => ({ index, uuid: `gpu-${index}`, pciDeviceId })),
        { file: config.file, configName: name },
      );
    } catch (e) {
      if (!(e instanceof MigpoolError)) throw e;
      lastProblem = e.message;
      continue;
    }
    if (match.assignments.length !== count) {
      lastProblem = `config '${name}' leaves GPU(s) ${match.untouchedGpus.map((g) => g.index).join(',')} unselected, so their layout is unknown`;
      continue;
    }
    const layouts: (DemandInstance[] | null)[] = [];
    for (const a of match.assignments) {
      if (!a.entry.migEnabled) {
        layouts.push(null);
        continue;
      }
      let groups;
      try {
        groups = resolveMigDevices(model, a.entry.migDevices, `${config.file}:${a.entry.line} (config '${name}')`);
      } catch (e) {
        if (e instanceof MigpoolError) return e.message;
        throw e;
      }
      const placed = placeProfiles(model, groups.map((g) => g.gi));
      if (!placed.valid) return `config '${name}' cannot be laid out on a ${model.name}: ${placed.reason}`;
      layouts.push([...placed.placements].sort((x, y) => x.start - y.start).map((p) => ({ profile: p.profile.name, start: p.start })));
    }
    return layouts;
  }
  return lastProblem;
}

/**
 * Reads the cluster: GPU nodes (those with a `nvidia.com/gpu.product` label or GPU resources),
 * the slices bound pods hold, and the demand of pending pods (not yet bound to a node, not held
 * back by scheduling gates) and of Kueue Workloads not yet admitted, each with the GPU nodes it
 * could land on. Pods in `pods` that have ended (Succeeded, Failed) are skipped. A MIG-capable node whose product the
 * catalogue does not know is BAD_INPUT (use `ignore` to leave it out).
 */
export function readClusterView(nodes: readonly NodeObject[], pods: readonly PodObject[], options: InventoryOptions): ClusterView {
  const config = parseMigPartedConfig(options.configText, options.configSource);
  const warnings: string[] = [];
  const usedBy = new Map<string, { used: Record<SliceName, number>; pods: string[] }>();
  const waiting: { namespace: string; name: string; source: 'pod' | 'workload'; slices: Record<SliceName, number>; spec: PodPlacementSpec | undefined }[] = [];
  const gated: GatedPod[] = [];
  for (const pod of pods) {
    const phase = pod.status?.phase;
    if (phase === 'Succeeded' || phase === 'Failed') continue;
    const slices = podSlices(pod.spec);
    if (Object.keys(slices).length === 0) continue;
    const id = { namespace: pod.metadata?.namespace ?? 'default', name: pod.metadata?.name ?? '?' };
    const nodeName = pod.spec?.nodeName;
    if (nodeName) {
      const entry = usedBy.get(nodeName) ?? { used: {}, pods: [] };
      addSlices(entry.used, slices);
      entry.pods.push(`${id.namespace}/${id.name}`);
      usedBy.set(nodeName, entry);
    } else {
      // Gated pods are not demand yet. Kueue's pod integration gates its pods with
      // `kueue.x-k8s.io/admission` (kubernetes-sigs/kueue pkg/controller/jobs/pod/constants) and
      // describes them in a Workload, so they count once, through the Workload, until admitted.
      const gates = schedulingGates(pod.spec);
      if (gates.length > 0) gated.push({ ...id, gates });
      else waiting.push({ ...id, source: 'pod', slices, spec: pod.spec });
    }
  }
  for (const w of options.workloads ?? []) {
    const cond = (type: string): boolean => (w.status?.conditions ?? []).some((c) => c.type === type && c.status === 'True');
    // Admitted: Kueue has unsuspended the Job and its pods count as pods; Finished: nothing waits.
    if (w.spec?.active === false || cond('Admitted') || cond('Finished')) continue;
    for (const ps of w.spec?.podSets ?? []) {
      const one = podSlices(ps.template?.spec);
      const count = ps.count ?? 1;
      if (Object.keys(one).length === 0 || count <= 0) continue;
      const slices: Record<SliceName, number> = {};
      for (const [k, n] of Object.entries(one)) slices[k] = n * count;
      waiting.push({ namespace: w.metadata?.namespace ?? 'default', name: `workload/${w.metadata?.name ?? '?'}/${ps.name ?? 'main'}`, source: 'workload', slices, spec: ps.template?.spec });
    }
  }

  const views: K8sNodeView[] = [];
  const placements: NodePlacement[] = [];
  for (const node of nodes) {
    const name = node.metadata?.name ?? '';
    const labels = node.metadata?.labels ?? {};
    const allocatable = slicesIn(node.status?.allocatable);
    const productLabel = labels[LABEL_PRODUCT] ?? null;
    if (productLabel === null && Object.keys(allocatable).length === 0) continue;
    placements.push({ name, labels, taints: node.spec?.taints ?? [], unschedulable: node.spec?.unschedulable === true });
    const use = usedBy.get(name) ?? { used: {}, pods: [] };
    const migCapable = labels[LABEL_MIG_CAPABLE] === 'true';
    const base = {
      name,
      product: productLabel,
      migCapable,
      migStrategy: labels[LABEL_MIG_STRATEGY] ?? null,
      config: labels[LABEL_MIG_CONFIG] ?? null,
      configState: labels[LABEL_MIG_STATE] ?? null,
      unschedulable: node.spec?.unschedulable === true,
      allocatable,
      used: use.used,
      gpuPods: use.pods,
    };
    const countLabel = labels[LABEL_COUNT];
    const gpuCount = countLabel !== undefined && /^\d+$/.test(countLabel) ? Number(countLabel) : 0;
    const fixed = (reason: string, model: GpuModel | null = null): K8sNodeView => ({ ...base, model, gpuCount, layouts: null, changeable: false, reason });
    if (options.ignore?.has(name)) {
      views.push(fixed('ignored (--ignore-node)'));
      continue;
    }
    if (!migCapable || productLabel === null) {
      views.push(fixed(`not MIG-capable (${LABEL_MIG_CAPABLE}=${labels[LABEL_MIG_CAPABLE] ?? 'unset'})`));
      continue;
    }
    let model: GpuModel;
    try {
      model = resolveGpuModel(productOf(productLabel));
    } catch (e) {
      if (!(e instanceof MigpoolError)) throw e;
      throw badInput(
        `node ${name}: ${LABEL_PRODUCT}=${productLabel} is not a MIG-capable GPU migpool knows (${e.message.replace(/;.*$/, '')}); see 'migpool gpus', or leave the node out with --ignore-node ${name}`,
        { node: name },
      );
    }
    if (gpuCount === 0) {
      views.push(fixed(`no ${LABEL_COUNT} label (is GPU feature discovery running?)`, model));
      continue;
    }
    if (base.migStrategy !== 'mixed') {
      views.push(fixed(`${LABEL_MIG_STRATEGY}=${base.migStrategy ?? 'unset'}: migpool re-partitions only under the mixed strategy`, model));
      continue;
    }
    if (base.config === null) {
      views.push(fixed(`no ${LABEL_MIG_CONFIG} label, so its layout is unknown`, model));
      continue;
    }
    const layouts = layoutsUnderConfig(config, base.config, model, gpuCount);
    if (typeof layouts === 'string') {
      views.push(fixed(layouts, model));
      continue;
    }
    if (base.configState === 'failed') {
      views.push(fixed(`${LABEL_MIG_STATE}=failed: the MIG manager could not apply '${base.config}'; see its logs, then relabel the node`, model));
      continue;
    }
    if (base.configState !== 'success') {
      views.push({ ...fixed(`${LABEL_MIG_STATE}=${base.configState ?? 'unset'}: the MIG manager has not finished applying '${base.config}'`, model), layouts });
      continue;
    }
    const expected = slicesOfLayouts(layouts);
    if (!sameCounts(expected, allocatable)) {
      warnings.push(
        `node ${name}: config '${base.config}' gives ${describeSlices(expected)} but the node advertises ${describeSlices(allocatable)}; is the device plugin running with migStrategy=mixed?`,
      );
    }
    let reason: string | null = null;
    if (options.only && !options.only.has(name)) reason = 'not selected (--node)';
    else if (base.unschedulable) reason = 'cordoned (unschedulable) by someone else';
    else if (use.pods.length > 0 && !options.force) reason = `GPU pods running: ${use.pods.join(', ')} (--force to change it anyway)`;
    views.push({ ...base, model, gpuCount, layouts, changeable: reason === null, reason });
  }
  placements.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const pending: PendingPod[] = waiting.map(({ spec, ...p }) => {
    const eligible: string[] = [];
    const why: string[] = [];
    for (const n of placements) {
      const reason = whyNotOnNode(spec, n);
      if (reason === null) eligible.push(n.name);
      else why.push(`${n.name}: ${reason}`);
    }
    return { ...p, eligible, whyNot: eligible.length === 0 ? (why.length > 0 ? why.join('; ') : 'no GPU node') : null };
  });
  const demand: Record<SliceName, number> = {};
  for (const p of pending) addSlices(demand, p.slices);
  return { nodes: views.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)), pending, gated, demand, warnings };
}

/** `7 x 1g.5gb, 1 x gpu`, or `nothing`. */
export function describeSlices(slices: Readonly<Record<string, number>>): string {
  const parts = Object.entries(slices)
    .filter(([, n]) => n > 0)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, n]) => `${n} x ${k}`);
  return parts.length > 0 ? parts.join(', ') : 'nothing';
}
