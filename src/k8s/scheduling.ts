/**
 * Whether the Kubernetes scheduler could ever place a pod on a node, judged only by what does not
 * change with the node's load: its nodeSelector, required node affinity, the node's taints against
 * the pod's tolerations, and a cordon. Resources are left out on purpose (they are what migpool
 * changes). Pure.
 *
 * The rules follow the scheduler's filter plugins as Kubernetes documents and implements them:
 * - nodeSelector: every key must be a node label with that value (NodeAffinity plugin).
 * - `affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms`: the
 *   terms are ORed, a term's `matchExpressions` and `matchFields` are ANDed, and a term with no
 *   requirement matches nothing (k8s.io/component-helpers/scheduling/corev1/nodeaffinity).
 *   Operators In, NotIn, Exists, DoesNotExist, Gt, Lt (Gt/Lt: the label read as an integer);
 *   `matchFields` supports only `metadata.name`.
 * - taints: a taint with effect NoSchedule or NoExecute keeps the pod off unless a toleration
 *   matches it (TaintToleration plugin; PreferNoSchedule is only a preference). A toleration
 *   matches when its effect is empty or equal, and its key is empty with operator Exists (every
 *   taint), or equal with operator Exists (any value), or equal with operator Equal (the default)
 *   and the same value (k8s.io/api/core/v1 Toleration.ToleratesTaint).
 * - a cordoned node (`spec.unschedulable`) takes no pod that does not tolerate the
 *   `node.kubernetes.io/unschedulable:NoSchedule` taint (NodeUnschedulable plugin).
 * - a pod with `spec.schedulingGates` is not considered by the scheduler at all until its gates
 *   are removed (KEP-3521, Pod scheduling readiness, GA in Kubernetes 1.30).
 */

export interface NodeSelectorRequirement {
  readonly key?: string;
  readonly operator?: string;
  readonly values?: readonly string[];
}

export interface NodeSelectorTerm {
  readonly matchExpressions?: readonly NodeSelectorRequirement[];
  readonly matchFields?: readonly NodeSelectorRequirement[];
}

export interface Toleration {
  readonly key?: string;
  readonly operator?: string;
  readonly value?: string;
  readonly effect?: string;
}

export interface Taint {
  readonly key?: string;
  readonly value?: string;
  readonly effect?: string;
}

/** The parts of a pod spec that say where it may run (client-node's V1PodSpec fits). */
export interface PodPlacementSpec {
  readonly nodeSelector?: Readonly<Record<string, string>>;
  readonly affinity?: {
    readonly nodeAffinity?: {
      readonly requiredDuringSchedulingIgnoredDuringExecution?: { readonly nodeSelectorTerms?: readonly NodeSelectorTerm[] };
    };
  };
  readonly tolerations?: readonly Toleration[];
  readonly schedulingGates?: readonly { readonly name?: string }[];
}

/** The parts of a node that decide which pods it takes. */
export interface NodePlacement {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly taints: readonly Taint[];
  readonly unschedulable: boolean;
}

/** The taint the node lifecycle controller puts on a cordoned node. */
export const UNSCHEDULABLE_TAINT: Taint = { key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' };

function integer(text: string | undefined): number | null {
  return text !== undefined && /^-?\d+$/.test(text) ? Number(text) : null;
}

function requirementMatches(r: NodeSelectorRequirement, value: string | undefined): boolean {
  const values = r.values ?? [];
  switch (r.operator) {
    case 'In':
      return value !== undefined && values.includes(value);
    case 'NotIn':
      return value === undefined || !values.includes(value);
    case 'Exists':
      return value !== undefined;
    case 'DoesNotExist':
      return value === undefined;
    case 'Gt':
    case 'Lt': {
      const have = integer(value);
      const want = integer(values[0]);
      if (have === null || want === null || values.length !== 1) return false;
      return r.operator === 'Gt' ? have > want : have < want;
    }
    default:
      return false;
  }
}

function termMatches(term: NodeSelectorTerm, node: NodePlacement): boolean {
  const exprs = term.matchExpressions ?? [];
  const fields = term.matchFields ?? [];
  if (exprs.length === 0 && fields.length === 0) return false;
  for (const e of exprs) if (!requirementMatches(e, e.key === undefined ? undefined : node.labels[e.key])) return false;
  for (const f of fields) if (f.key !== 'metadata.name' || !requirementMatches(f, node.name)) return false;
  return true;
}

/** Whether `t` tolerates `taint` (Toleration.ToleratesTaint). */
export function tolerates(t: Toleration, taint: Taint): boolean {
  if (t.effect !== undefined && t.effect !== '' && t.effect !== taint.effect) return false;
  const operator = t.operator ?? 'Equal';
  if (t.key === undefined || t.key === '') return operator === 'Exists';
  if (t.key !== taint.key) return false;
  if (operator === 'Exists') return true;
  return operator === 'Equal' && (t.value ?? '') === (taint.value ?? '');
}

/**
 * Why `pod` can never be placed on `node`, in a few words (`nodeSelector gpu=h100`, `taint
 * dedicated=infer:NoSchedule`), or null when it could be.
 */
export function whyNotOnNode(pod: PodPlacementSpec | undefined, node: NodePlacement): string | null {
  for (const [k, v] of Object.entries(pod?.nodeSelector ?? {})) {
    if (node.labels[k] !== v) return `nodeSelector ${k}=${v}`;
  }
  const terms = pod?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  if (terms !== undefined && !terms.some((t) => termMatches(t, node))) return 'required node affinity';
  const tolerations = pod?.tolerations ?? [];
  for (const taint of node.taints) {
    if (taint.effect !== 'NoSchedule' && taint.effect !== 'NoExecute') continue;
    if (!tolerations.some((t) => tolerates(t, taint))) return `taint ${taint.key ?? ''}${taint.value ? `=${taint.value}` : ''}:${taint.effect}`;
  }
  if (node.unschedulable && !tolerations.some((t) => tolerates(t, UNSCHEDULABLE_TAINT))) return 'cordoned';
  return null;
}

/** The names of the pod's scheduling gates; empty when the scheduler may place it. */
export function schedulingGates(pod: PodPlacementSpec | undefined): string[] {
  return (pod?.schedulingGates ?? []).map((g) => g.name ?? '?');
}
