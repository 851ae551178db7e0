/**
 * `migpool k8s plan`: new MIG layouts for the idle GPU nodes of a cluster, chosen for the slices
 * pending pods wait for, written as mig-parted configs for the GPU Operator's MIG manager. Pure.
 */
import { createHash } from 'node:crypto';
import { planLayoutsForDemand, type DemandGpu, type DemandInstance } from '../optimize/demand-layouts.js';
import { exportK8s, exportMigPartedConfig, type ExportGpu, type MigPartedEntry } from '../partition/export.js';
import type { ClusterView, K8sNodeView } from './inventory.js';
import { slicesOfLayouts } from './inventory.js';
import type { SliceName } from './resources.js';

/** Prefix of the configs migpool writes into the MIG manager's ConfigMap. */
export const CONFIG_PREFIX = 'migpool-';

export interface PlannedGpu {
  readonly index: number;
  /** null: MIG off. */
  readonly current: readonly DemandInstance[] | null;
  readonly planned: readonly DemandInstance[] | null;
  readonly changed: boolean;
}

export interface NodePlan {
  readonly name: string;
  readonly model: string | null;
  readonly config: string | null;
  readonly configState: string | null;
  readonly changeable: boolean;
  readonly reason: string | null;
  /** Per GPU; empty when the node's layout is unknown. */
  readonly gpus: readonly PlannedGpu[];
  readonly changed: boolean;
  /** The config to label the node with, when it changes. */
  readonly newConfig: string | null;
  /** What the device plugin advertises now, and will advertise after the change (slice -> count). */
  readonly slicesBefore: Readonly<Record<SliceName, number>>;
  readonly slicesAfter: Readonly<Record<SliceName, number>>;
  /** The extended resources after the change, as `nvidia.com/mig-1g.5gb: 7`. */
  readonly resourcesAfter: Readonly<Record<string, number>> | null;
}

export interface K8sPlan {
  readonly nodes: readonly NodePlan[];
  readonly demand: Readonly<Record<SliceName, number>>;
  readonly served: Readonly<Record<SliceName, number>>;
  readonly unserved: Readonly<Record<SliceName, number>>;
  /** The new configs, by name, as mig-parted entries. */
  readonly configs: Readonly<Record<string, MigPartedEntry[]>>;
}

function gpuKey(node: string, index: number): string {
  return `${node}/${index}`;
}

function minus(a: Readonly<Record<string, number>>, b: Readonly<Record<string, number>>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, n] of Object.entries(a)) if (n - (b[k] ?? 0) > 0) out[k] = n - (b[k] ?? 0);
  return out;
}

/**
 * Free slices of a node that stays as it is, split over its GPUs (Kubernetes does not say which
 * GPU a pod's slice is on; only the counts matter to the planner).
 */
function splitFree(layouts: readonly (readonly DemandInstance[] | null)[], free: Record<string, number>): Record<string, number>[] {
  const left = { ...free };
  return layouts.map((l) => {
    const mine: Record<string, number> = {};
    for (const [profile, n] of Object.entries(slicesOfLayouts([l]))) {
      const take = Math.min(n, left[profile] ?? 0);
      if (take > 0) {
        mine[profile] = take;
        left[profile] = (left[profile] ?? 0) - take;
      }
    }
    return mine;
  });
}

function countsOf(layout: readonly DemandInstance[] | null): Record<string, number> {
  const out: Record<string, number> = {};
  for (const i of layout ?? []) out[i.profile] = (out[i.profile] ?? 0) + 1;
  return out;
}

/**
 * The mig-parted entries for a node's GPUs (one entry per distinct layout, as
 * `mig-parted export` merges them) and the config's name: `migpool-` and a hash of the entries.
 * A name that changes with the content matters: the MIG manager acts on a change of the node's
 * label, and does not re-read a config whose name stays the same.
 */
export function nodeConfig(view: K8sNodeView, layouts: readonly (readonly DemandInstance[] | null)[]): { name: string; entries: MigPartedEntry[]; resources: Record<string, number> } {
  const model = view.model;
  if (!model) throw new Error(`node ${view.name}: no GPU model`);
  const gpus: ExportGpu[] = layouts.map((l, index) => ({
    index,
    uuid: `${view.name}/${index}`,
    pciDeviceId: model.pciDeviceIds[0] ?? '0x000010DE',
    productName: view.product ?? model.name,
    migEnabled: l !== null,
    migDevices: countsOf(l),
  }));
  const entries = exportMigPartedConfig(gpus, 'x')['mig-configs']['x'] ?? [];
  const hash = createHash('sha256').update(JSON.stringify(entries)).digest('hex').slice(0, 10);
  return { name: `${CONFIG_PREFIX}${hash}`, entries, resources: exportK8s(gpus, 'x').resources };
}

function sameLayout(a: readonly DemandInstance[] | null, b: readonly DemandInstance[] | null): boolean {
  if (a === null || b === null) return a === b;
  const key = (l: readonly DemandInstance[]): string =>
    l
      .map((i) => `${i.profile}@${i.start}`)
      .sort()
      .join(',');
  return key(a) === key(b);
}

/** Takes what `have` offers of `waiting` (both slice -> count, both changed); returns how much was taken. */
function takeFrom(have: Record<string, number>, waiting: Record<string, number>): number {
  let taken = 0;
  for (const [slice, w] of Object.entries(waiting)) {
    const n = Math.min(w, have[slice] ?? 0);
    if (n > 0) {
      have[slice] = (have[slice] ?? 0) - n;
      waiting[slice] = w - n;
      taken += n;
    }
  }
  return taken;
}

interface GpuState {
  readonly key: string;
  readonly node: K8sNodeView;
  readonly original: readonly DemandInstance[] | null;
  layout: readonly DemandInstance[] | null;
  changeable: boolean;
  free: Record<string, number>;
}

/**
 * Chooses layouts for the changeable nodes with `planLayoutsForDemand`, for each group of waiting
 * pods that fit the same GPU nodes (nodeSelector, affinity, taints: see `scheduling.ts`), the most
 * constrained group first, so that a node is only cut for pods that can land on it. A GPU cut (or
 * kept) to serve a group is then fixed for the groups after it, with what that group left free.
 * Nodes whose layout is unknown or that are not MIG-capable keep what they have, and their free
 * slices serve a group before the planner sees it; nodes with a known layout that may not change
 * enter the planner with their free slices.
 */
export function planCluster(view: ClusterView): K8sPlan {
  const fixedFree = new Map<string, Record<string, number>>();
  const states = new Map<string, GpuState[]>();
  for (const node of view.nodes) {
    if (node.layouts === null || node.model === null) {
      fixedFree.set(node.name, minus(node.allocatable, node.used));
      continue;
    }
    const frees = node.changeable ? [] : splitFree(node.layouts, minus(node.allocatable, node.used));
    states.set(
      node.name,
      node.layouts.map((current, index) => ({ key: gpuKey(node.name, index), node, original: current, layout: current, changeable: node.changeable, free: { ...(frees[index] ?? {}) } })),
    );
  }

  const groups = new Map<string, { eligible: readonly string[]; demand: Record<string, number> }>();
  for (const p of view.pending) {
    const sig = p.eligible.join('\n');
    const g = groups.get(sig) ?? { eligible: p.eligible, demand: {} };
    for (const [k, n] of Object.entries(p.slices)) g.demand[k] = (g.demand[k] ?? 0) + n;
    groups.set(sig, g);
  }
  const ordered = [...groups.entries()].sort(([sa, a], [sb, b]) => a.eligible.length - b.eligible.length || (sa < sb ? -1 : sa > sb ? 1 : 0)).map(([, g]) => g);

  const served: Record<string, number> = {};
  const unserved: Record<string, number> = {};
  for (const group of ordered) {
    const waiting = { ...group.demand };
    for (const name of group.eligible) {
      const free = fixedFree.get(name);
      if (free) takeFrom(free, waiting);
    }
    const gpus = group.eligible.flatMap((name) => states.get(name) ?? []);
    const result = planLayoutsForDemand(
      gpus.map((s): DemandGpu => ({ key: s.key, model: s.node.model as NonNullable<K8sNodeView['model']>, current: s.layout, changeable: s.changeable, free: s.free })),
      Object.entries(waiting).map(([profile, count]) => ({ profile, count })),
    );
    const planned = new Map(result.gpus.map((g) => [g.key, g.layout]));
    // Hand the waiting slices out as the planner counts them: fixed GPUs' free slices first.
    for (const s of gpus) if (!s.changeable) takeFrom(s.free, waiting);
    for (const s of gpus) {
      if (!s.changeable) continue;
      const layout = planned.has(s.key) ? (planned.get(s.key) ?? null) : s.layout;
      const offer = layout === null ? { gpu: 1 } : countsOf(layout);
      if (takeFrom(offer, waiting) === 0) continue;
      s.layout = layout;
      s.changeable = false;
      s.free = offer;
    }
    for (const [k, n] of Object.entries(group.demand)) {
      const left = waiting[k] ?? 0;
      if (n - left > 0) served[k] = (served[k] ?? 0) + n - left;
      if (left > 0) unserved[k] = (unserved[k] ?? 0) + left;
    }
  }

  const configs: Record<string, MigPartedEntry[]> = {};
  const nodes: NodePlan[] = view.nodes.map((node) => {
    const common = {
      name: node.name,
      model: node.model?.name ?? null,
      config: node.config,
      configState: node.configState,
      changeable: node.changeable,
      reason: node.reason,
      slicesBefore: node.allocatable,
    };
    const gpuStates = states.get(node.name);
    if (node.layouts === null || gpuStates === undefined) return { ...common, gpus: [], changed: false, newConfig: null, slicesAfter: node.allocatable, resourcesAfter: null };
    const plannedGpus: PlannedGpu[] = gpuStates.map((s, index) => ({ index, current: s.original, planned: s.layout, changed: !sameLayout(s.original, s.layout) }));
    const changed = plannedGpus.some((g) => g.changed);
    if (!changed) return { ...common, gpus: plannedGpus, changed, newConfig: null, slicesAfter: node.allocatable, resourcesAfter: null };
    const layouts = plannedGpus.map((g) => g.planned);
    const cfg = nodeConfig(node, layouts);
    configs[cfg.name] = cfg.entries;
    return { ...common, gpus: plannedGpus, changed, newConfig: cfg.name, slicesAfter: slicesOfLayouts(layouts), resourcesAfter: cfg.resources };
  });

  return { nodes, demand: view.demand, served, unserved, configs };
}

/** `3g.20gb+2x1g.5gb`, or `MIG off`. */
export function describeLayout(layout: readonly DemandInstance[] | null): string {
  if (layout === null) return 'MIG off';
  if (layout.length === 0) return 'MIG on, empty';
  const counts = countsOf(layout);
  return Object.entries(counts)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([p, n]) => (n > 1 ? `${n}x${p}` : p))
    .join('+');
}
