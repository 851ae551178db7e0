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
  readonly spec?: { readonly unschedulable?: boolean };
  readonly status?: { readonly allocatable?: Readonly<Record<string, string>>; readonly capacity?: Readonly<Record<string, string>> };
}

/** The fields of a v1 Pod migpool reads (client-node's V1Pod fits). */
export interface PodObject {
  readonly metadata?: { readonly name?: string; readonly namespace?: string };
  readonly spec?: PodResourceSpec & { readonly nodeName?: string };
  readonly status?: { readonly phase?: string };
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

export interface PendingPod {
  readonly namespace: string;
  readonly name: string;
  readonly slices: Readonly<Record<SliceName, number>>;
}

export interface ClusterView {
  readonly nodes: readonly K8sNodeView[];
  readonly pending: readonly PendingPod[];
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
 * the slices bound pods hold, and the demand of pending pods (not yet bound to a node). Pods in
 * `pods` that have ended (Succeeded, Failed) are skipped. A MIG-capable node whose product the
 * catalogue does not know is BAD_INPUT (use `ignore` to leave it out).
 */
export function readClusterView(nodes: readonly NodeObject[], pods: readonly PodObject[], options: InventoryOptions): ClusterView {
  const config = parseMigPartedConfig(options.configText, options.configSource);
  const warnings: string[] = [];
  const usedBy = new Map<string, { used: Record<SliceName, number>; pods: string[] }>();
  const pending: PendingPod[] = [];
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
      pending.push({ ...id, slices });
    }
  }

  const views: K8sNodeView[] = [];
  for (const node of nodes) {
    const name = node.metadata?.name ?? '';
    const labels = node.metadata?.labels ?? {};
    const allocatable = slicesIn(node.status?.allocatable);
    const productLabel = labels[LABEL_PRODUCT] ?? null;
    if (productLabel === null && Object.keys(allocatable).length === 0) continue;
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
  const demand: Record<SliceName, number> = {};
  for (const p of pending) addSlices(demand, p.slices);
  return { nodes: views.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)), pending, demand, warnings };
}

/** `7 x 1g.5gb, 1 x gpu`, or `nothing`. */
export function describeSlices(slices: Readonly<Record<string, number>>): string {
  const parts = Object.entries(slices)
    .filter(([, n]) => n > 0)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, n]) => `${n} x ${k}`);
  return parts.length > 0 ? parts.join(', ') : 'nothing';
}
