/**
 * The few Kubernetes API calls `migpool k8s` makes: the port. `client-node-api.ts` implements it
 * over @kubernetes/client-node; tests run it against a local stand-in API server.
 *
 * Watches only say that something changed (the controller then lists again); `plan` and `apply`
 * poll. Deliberately left out: creating pods, and any write other than the ConfigMap's data, node
 * labels, `spec.unschedulable`, evictions and the controller's Lease.
 */
import type { MigpoolError } from '../errors.js';
import type { NodeObject, PodObject, WorkloadObject } from './inventory.js';

export interface ConfigMapObject {
  readonly metadata?: { readonly name?: string; readonly namespace?: string; readonly resourceVersion?: string };
  readonly data?: Readonly<Record<string, string>>;
}

/** A pod as drain needs it: who owns it, and whether it is a static (mirror) pod. */
export interface DrainPodObject extends PodObject {
  readonly metadata?: PodObject['metadata'] & {
    readonly ownerReferences?: readonly { readonly kind?: string }[];
    readonly annotations?: Readonly<Record<string, string>>;
  };
}

/**
 * A coordination.k8s.io/v1 Lease. Times are MicroTime strings (RFC 3339 with microseconds,
 * k8s.io/apimachinery/pkg/apis/meta/v1 micro_time.go).
 */
export interface LeaseObject {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata?: { readonly name?: string; readonly namespace?: string; readonly resourceVersion?: string };
  readonly spec?: {
    readonly holderIdentity?: string | null;
    readonly leaseDurationSeconds?: number | null;
    readonly acquireTime?: string | null;
    readonly renewTime?: string | null;
    readonly leaseTransitions?: number | null;
  };
}

/**
 * The fields of the GPU Operator's ClusterPolicy (nvidia.com/v1, cluster-scoped;
 * NVIDIA/gpu-operator api/nvidia/v1/clusterpolicy_types.go) migpool reads: `spec.migManager`.
 */
export interface ClusterPolicyObject {
  readonly metadata?: { readonly name?: string };
  readonly spec?: {
    readonly migManager?: { readonly enabled?: boolean; readonly config?: { readonly name?: string; readonly default?: string } };
  };
}

export interface K8sApi {
  /** Where the API is, for messages (`https://10.0.0.1:6443`). */
  readonly server: string;
  listNodes(): Promise<NodeObject[]>;
  readNode(name: string): Promise<NodeObject>;
  /** Pods of every namespace that match a field selector (`spec.nodeName=n1`, `status.phase!=Failed`). */
  listPods(fieldSelector: string): Promise<DrainPodObject[]>;
  readConfigMap(namespace: string, name: string): Promise<ConfigMapObject>;
  /**
   * Sets keys of the ConfigMap's data (a JSON merge patch carrying `resourceVersion`, so that a
   * concurrent change makes it fail with a conflict rather than be overwritten).
   */
  patchConfigMapData(namespace: string, name: string, data: Readonly<Record<string, string>>, resourceVersion: string): Promise<ConfigMapObject>;
  /** Sets node labels; a null value removes the label. */
  patchNodeLabels(name: string, labels: Readonly<Record<string, string | null>>): Promise<NodeObject>;
  /** Cordons (true) or uncordons (false) a node. */
  setUnschedulable(name: string, unschedulable: boolean): Promise<NodeObject>;
  /** Asks for a pod's eviction; false when a PodDisruptionBudget refuses it for now (HTTP 429). */
  evictPod(namespace: string, name: string): Promise<boolean>;
  /**
   * Watches every node or pod of the cluster: `onChange` for each event (ADDED, MODIFIED, DELETED),
   * `onEnd` once when the stream ends (null: closed by the server, as watches are after a while).
   * Resolves with a function that stops it.
   */
  watch(kind: 'nodes' | 'pods', onChange: (type: string) => void, onEnd: (error: MigpoolError | null) => void): Promise<() => void>;
  /** The GPU Operator's ClusterPolicies; null when the ClusterPolicy CRD is not installed. */
  listClusterPolicies(): Promise<ClusterPolicyObject[] | null>;
  /** Kueue Workloads of every namespace; null when Kueue is not installed. */
  listWorkloads(): Promise<WorkloadObject[] | null>;
  /** The Lease, or null when there is none. */
  readLease(namespace: string, name: string): Promise<LeaseObject | null>;
  /** Creates the Lease; a Lease of that name created meanwhile is a 409 conflict (MigpoolError, status 409). */
  createLease(namespace: string, lease: LeaseObject): Promise<LeaseObject>;
  /** Replaces the Lease; its metadata.resourceVersion must be current, else a 409 conflict. */
  replaceLease(namespace: string, name: string, lease: LeaseObject): Promise<LeaseObject>;
}
