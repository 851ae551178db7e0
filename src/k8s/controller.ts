/**
 * `migpool k8s controller`: the plan/apply loop as a long-running controller. Each candidate
 * (replica) tries for the Lease every retry period; the one holding it reads the cluster every
 * interval (nodes with their `nvidia.com/mig.config.state`, pods, Kueue Workloads, the
 * ClusterPolicy), plans, and applies a plan that changes something, renewing the Lease while it
 * waits on the MIG manager. Writes go through a fence: once the Lease is lost (or the controller is
 * stopping) no further write is made, so two replicas never act at once. On stop the Lease is
 * released, so another replica takes over at once.
 *
 * Every replica watches nodes and pods; an event (a new pod, a pod bound or gone, a node's labels
 * or resources changed, the MIG manager's state label among them) makes the leader read and plan
 * again at its next tick instead of waiting for the interval. Each round lists everything again
 * (level-triggered), so a missed event costs at most one interval.
 */
import { MigpoolError } from '../errors.js';
import type { K8sApi } from './api.js';
import { applyPlan, type ApplyOptions } from './apply.js';
import { describeSlices } from './inventory.js';
import { LeaderElector } from './lease.js';
import { planCluster } from './plan.js';
import { readCluster, type ReadClusterOptions } from './read-cluster.js';

export interface ControllerOptions {
  readonly read: ReadClusterOptions;
  /** How nodes are changed (drain, timeouts); the ConfigMap and force come from `read`. */
  readonly apply: Pick<ApplyOptions, 'drain' | 'timeoutSeconds' | 'drainTimeoutSeconds' | 'pollSeconds' | 'configSyncSeconds'>;
  readonly lease: { readonly namespace: string; readonly name: string; readonly identity: string; readonly leaseDurationSeconds: number };
  /** How often to renew the Lease (leader) or try for it (others). */
  readonly retrySeconds: number;
  /** How often the leader reads the cluster and plans when no watch event came. */
  readonly intervalSeconds: number;
  readonly now: () => number;
  /** Waits `ms`, or less when `signal` aborts. */
  readonly sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  /** Aborting it stops the controller (the Lease is released). */
  readonly signal: AbortSignal;
  readonly log: (line: string) => void;
}

export interface ControllerReport {
  /** Times this replica became leader. */
  readonly leaderships: number;
  /** Reads and plans made as leader. */
  readonly reconciles: number;
  /** Nodes it reconfigured successfully. */
  readonly reconfigured: number;
}

const stopped = (why: string): MigpoolError => new MigpoolError('RUNTIME', why, { fenced: true });

/** The API with every write refused unless `allowed()` says this replica may still act. */
function fence(api: K8sApi, allowed: () => string | null): K8sApi {
  const check = (): void => {
    const why = allowed();
    if (why !== null) throw stopped(why);
  };
  return {
    server: api.server,
    listNodes: () => api.listNodes(),
    readNode: (n) => api.readNode(n),
    listPods: (s) => api.listPods(s),
    readConfigMap: (ns, n) => api.readConfigMap(ns, n),
    listClusterPolicies: () => api.listClusterPolicies(),
    listWorkloads: () => api.listWorkloads(),
    watch: (k, c, e) => api.watch(k, c, e),
    readLease: (ns, n) => api.readLease(ns, n),
    createLease: (ns, l) => api.createLease(ns, l),
    replaceLease: (ns, n, l) => api.replaceLease(ns, n, l),
    patchConfigMapData: async (ns, n, d, v) => (check(), api.patchConfigMapData(ns, n, d, v)),
    patchNodeLabels: async (n, l) => (check(), api.patchNodeLabels(n, l)),
    setUnschedulable: async (n, u) => (check(), api.setUnschedulable(n, u)),
    evictPod: async (ns, n) => (check(), api.evictPod(ns, n)),
  };
}

/** Runs until `options.signal` aborts; resolves with what this replica did. */
export async function runController(api: K8sApi, options: ControllerOptions): Promise<ControllerReport> {
  const { signal, log, now } = options;
  const who = options.lease.identity;
  const where = `Lease ${options.lease.namespace}/${options.lease.name}`;
  const elector = new LeaderElector(api, { ...options.lease, now });
  let leaderships = 0;
  let reconciles = 0;
  let reconfigured = 0;
  let leading: boolean | null = null;
  let nextRead = 0;
  /** True or false as the Lease says; null when the API could not be asked (nothing changes then). */
  const tryLease = async (): Promise<boolean | null> => {
    try {
      return await elector.tryAcquireOrRenew();
    } catch (e) {
      if (!(e instanceof MigpoolError)) throw e;
      log(`${who}: ${e.message}`);
      return null;
    }
  };
  const fenced = fence(api, () => (signal.aborted ? 'the controller is stopping' : elector.isLeader() ? null : `${who} no longer holds the ${where}`));
  /** The apply's waits, cut short when the Lease is lost (the lease loop renews it meanwhile). */
  const fencedSleep = async (ms: number): Promise<void> => {
    const until = now() + ms;
    while (now() < until) {
      await options.sleep(Math.min(until - now(), options.retrySeconds * 1000), signal);
      if (signal.aborted) throw stopped('the controller is stopping');
      if (!elector.isLeader()) throw stopped(`${who} lost the ${where}; the new leader takes over`);
    }
  };

  const seenStates = new Map<string, string>();
  const seenWarnings = new Set<string>();
  let lastFailure = '';
  let dirty = false;

  const reconcile = async (): Promise<void> => {
    reconciles += 1;
    const { view, configText, resourceVersion } = await readCluster(api, options.read);
    for (const n of view.nodes) {
      const state = `${n.config ?? '(none)'} ${n.configState ?? '(unset)'}`;
      if (seenStates.get(n.name) !== state) log(`node ${n.name}: nvidia.com/mig.config=${n.config ?? '(none)'}, nvidia.com/mig.config.state=${n.configState ?? '(unset)'}`);
      seenStates.set(n.name, state);
    }
    for (const w of view.warnings) {
      if (!seenWarnings.has(w)) log(`warning: ${w}`);
      seenWarnings.add(w);
    }
    const plan = planCluster(view);
    const changes = plan.nodes.filter((n) => n.changed);
    if (changes.length === 0) return;
    log(`waiting: ${describeSlices(plan.demand)}; re-partitioning ${changes.map((n) => `${n.name} (${n.newConfig ?? ''})`).join(', ')} to serve ${describeSlices(plan.served)}`);
    const result = await applyPlan(fenced, plan, view, configText, resourceVersion, {
      ...options.apply,
      namespace: options.read.namespace,
      configMap: options.read.configMap,
      key: options.read.configKey,
      force: options.read.force === true,
      dryRun: false,
      clock: { now, sleep: fencedSleep },
      log,
    });
    for (const r of result.nodes) {
      if (r.outcome === 'success') reconfigured += 1;
      log(`node ${r.node}: ${r.outcome}${r.outcome === 'success' ? `, advertises ${describeSlices(r.advertised)}` : ''}${r.message ? ` (${r.message})` : ''}`);
    }
  };

  // Two loops: the Lease is renewed every retry period whatever the work loop is doing (a plan
  // and its apply can take longer than the renew deadline), and the work loop acts only while
  // this replica leads.
  const leaseLoop = async (): Promise<void> => {
    while (!signal.aborted) {
      const answer = await tryLease();
      // Unanswered: a leader stays leader until its renew deadline passes (isLeader).
      const leader = answer ?? elector.isLeader();
      if (leader !== leading) {
        if (leader) {
          leaderships += 1;
          nextRead = 0;
          log(`${who}: leading (${where})`);
        } else {
          log(`${who}: standing by (${where} held by ${elector.holder || 'nobody'})`);
        }
        leading = leader;
      }
      await options.sleep(options.retrySeconds * 1000, signal);
    }
  };
  const watchLoop = async (kind: 'nodes' | 'pods'): Promise<void> => {
    while (!signal.aborted) {
      let ended: (e: MigpoolError | null) => void = () => undefined;
      const done = new Promise<MigpoolError | null>((resolve) => (ended = resolve));
      let stop: (() => void) | null = null;
      const onAbort = (): void => {
        stop?.();
        ended(null);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      // Opening the watch may wait for the server's first bytes: an abort meanwhile ends it too.
      api.watch(kind, () => (dirty = true), (e) => ended(e)).then(
        (f) => {
          stop = f;
          if (signal.aborted) f();
        },
        (e: unknown) => ended(e instanceof MigpoolError ? e : new MigpoolError('RUNTIME', `watching ${kind}: ${String(e)}`)),
      );
      const error = await done;
      signal.removeEventListener('abort', onAbort);
      if (error !== null && !signal.aborted) log(`${error.message}; watching again in ${options.retrySeconds}s`);
      await options.sleep(options.retrySeconds * 1000, signal);
    }
  };
  const workLoop = async (): Promise<void> => {
    while (!signal.aborted) {
      if (elector.isLeader() && (dirty || now() >= nextRead)) {
        dirty = false;
        try {
          await reconcile();
          lastFailure = '';
        } catch (e) {
          if (!(e instanceof MigpoolError)) throw e;
          // A misconfiguration fails the same way every interval: say it once until it changes.
          const line = `${e.details['fenced'] === true ? 'stopped' : 'reconcile failed'}: ${e.message}`;
          if (line !== lastFailure) log(line);
          lastFailure = line;
        }
        nextRead = now() + options.intervalSeconds * 1000;
      }
      await options.sleep(options.retrySeconds * 1000, signal);
    }
  };
  await Promise.all([leaseLoop(), workLoop(), watchLoop('nodes'), watchLoop('pods')]);
  try {
    await elector.release();
    if (leading) log(`${who}: released the ${where}`);
  } catch (e) {
    if (!(e instanceof MigpoolError)) throw e;
    log(`${who}: could not release the ${where}: ${e.message}`);
  }
  return { leaderships, reconciles, reconfigured };
}
