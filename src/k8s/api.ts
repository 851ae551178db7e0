/**
 * The few Kubernetes API calls `migpool k8s` makes: the port. `client-node-api.ts` implements it
 * over @kubernetes/client-node; tests run it against a local stand-in API server.
 *
 * Deliberately left out: watches (the node is polled: one GET every few seconds is enough for a
 * reconfiguration that takes minutes, and needs no long-lived connection), creating pods, and any
 * write other than the ConfigMap's data, node labels, `spec.unschedulable` and evictions.
 */
import type { NodeObject, PodObject } from './inventory.js';

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
}
