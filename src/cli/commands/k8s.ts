import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Command } from 'commander';
import YAML from 'yaml';
import { badInput, MigpoolError } from '../../errors.js';
import { decimalValue } from '../../decimal-number.js';
import type { K8sApi } from '../../k8s/api.js';
import { applyPlan, type ApplyResult } from '../../k8s/apply.js';
import { runController } from '../../k8s/controller.js';
import { installManifest } from '../../k8s/install.js';
import { MIGPOOL_CONFIGMAP } from '../../k8s/cluster-policy.js';
import { describeSlices, type ClusterView } from '../../k8s/inventory.js';
import { readCluster, type ClusterRead } from '../../k8s/read-cluster.js';
import { jobManifest, type ManifestKind } from '../../k8s/manifest.js';
import { describeLayout, planCluster, type K8sPlan } from '../../k8s/plan.js';
import { writeJson, type Io } from '../io.js';
import { renderTable } from '../table.js';
import { readSpecFile } from './client.js';

interface ClusterOptions {
  kubeconfig?: string;
  context?: string;
  namespace: string;
  configmap: string;
  configKey: string;
  node: string[];
  ignoreNode: string[];
  force?: boolean;
  kueue?: boolean;
  json?: boolean;
}

const collect = (value: string, previous: string[]): string[] => [...previous, ...value.split(',').filter((v) => v !== '')];

function withClusterOptions(cmd: Command): Command {
  return cmd
    .option('--kubeconfig <file>', 'kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)')
    .option('--context <name>', 'kubeconfig context (default: its current-context)')
    .option('--namespace <ns>', "namespace of the MIG manager's mig-parted ConfigMap", 'gpu-operator')
    .option('--configmap <name>', "migpool's mig-parted ConfigMap, which the ClusterPolicy's migManager.config.name must name (checked)", MIGPOOL_CONFIGMAP)
    .option('--config-key <key>', 'key of the ConfigMap that holds the mig-parted config', 'config.yaml')
    .option('--node <names>', 'change only these nodes (repeat or comma-separate; the others still count as they are)', collect, [])
    .option('--ignore-node <names>', 'leave these nodes out of planning (repeat or comma-separate)', collect, [])
    .option('--force', 'also change nodes whose GPU slices pods hold (their pods lose their GPUs)')
    .option('--no-kueue', 'do not read Kueue Workloads as demand')
    .option('--json', 'print JSON');
}

/** Reads what planning needs: nodes, live pods, Workloads, the ClusterPolicy and the MIG manager's config. */
async function readFor(api: K8sApi, opts: ClusterOptions): Promise<ClusterRead> {
  return readCluster(api, {
    namespace: opts.namespace,
    configMap: opts.configmap,
    configKey: opts.configKey,
    only: opts.node,
    ignore: opts.ignoreNode,
    force: opts.force === true,
    kueue: opts.kueue !== false,
  });
}

/** The cluster's API; @kubernetes/client-node is loaded here, not at start-up (it takes about half a second to import). */
async function openApi(opts: ClusterOptions): Promise<K8sApi> {
  const { ClientNodeApi, loadKubeConfig } = await import('../../k8s/client-node-api.js');
  return new ClientNodeApi(loadKubeConfig(opts.kubeconfig, opts.context));
}

function planJson(plan: K8sPlan, view: ClusterView): unknown {
  return {
    nodes: plan.nodes.map((n) => ({
      name: n.name,
      model: n.model,
      config: n.config,
      configState: n.configState,
      changeable: n.changeable,
      reason: n.reason,
      changed: n.changed,
      newConfig: n.newConfig,
      gpus: n.gpus.map((g) => ({ index: g.index, current: g.current, planned: g.planned, changed: g.changed })),
      slicesBefore: n.slicesBefore,
      slicesAfter: n.slicesAfter,
      resourcesAfter: n.resourcesAfter,
    })),
    pending: view.pending,
    gated: view.gated,
    demand: plan.demand,
    served: plan.served,
    unserved: plan.unserved,
    configs: plan.configs,
    warnings: view.warnings,
  };
}

function printPlan(io: Io, plan: K8sPlan, view: ClusterView): void {
  for (const w of view.warnings) io.err(`warning: ${w}`);
  const rows = plan.nodes.map((n) => [
    n.name,
    n.model ?? '-',
    n.config ?? '-',
    n.configState ?? '-',
    n.gpus.length > 0 ? n.gpus.map((g) => describeLayout(g.current)).join(' | ') : describeSlices(n.slicesBefore),
    n.changed ? n.gpus.map((g) => describeLayout(g.planned)).join(' | ') : '(unchanged)',
    n.newConfig ?? (n.changeable ? 'idle' : (n.reason ?? '')),
  ]);
  io.out(renderTable(['NODE', 'GPU', 'CONFIG', 'STATE', 'NOW (per GPU)', 'PLANNED (per GPU)', 'NEW CONFIG / WHY NOT'], rows));
  const pods = view.pending.filter((p) => p.source === 'pod').length;
  const workloads = view.pending.length - pods;
  io.out(`pending pods: ${pods}${workloads > 0 ? ` and ${workloads} Kueue pod set(s) not admitted` : ''}, waiting for ${describeSlices(plan.demand)}`);
  for (const p of view.pending) if (p.whyNot !== null) io.out(`  ${p.namespace}/${p.name} fits no GPU node (${p.whyNot})`);
  if (view.gated.length > 0) io.out(`not counted (scheduling gates): ${view.gated.map((g) => `${g.namespace}/${g.name} [${g.gates.join(', ')}]`).join(', ')}`);
  io.out(`served by the plan: ${describeSlices(plan.served)}; still waiting: ${describeSlices(plan.unserved)}`);
}

function positiveSeconds(text: string, flag: string, allowZero = false): number {
  const n = decimalValue(text);
  if (!Number.isFinite(n) || n < 0 || (n === 0 && !allowZero)) throw badInput(`${flag} '${text}': give a number of seconds${allowZero ? ' (0 or more)' : ' above 0'}`);
  return n;
}

/**
 * `k8s manifest`'s requests when not given: migpool's choice for one training process with a few
 * data loader workers (four cores, 16 GiB, half of it as /dev/shm, which counts as the pod's
 * memory). Sites size these to their nodes with the flags.
 */
const MANIFEST_DEFAULTS = { cpu: '4', memory: '16Gi', shm: '8Gi' } as const;

/** `migpool k8s plan|apply|manifest|controller|install-manifest`. */
export function registerK8s(program: Command, io: Io): void {
  const k8s = program.command('k8s').description('Kubernetes with the NVIDIA GPU Operator: MIG layouts for pending pods and Kueue Workloads, a controller, pod manifests for job specs');

  withClusterOptions(k8s.command('plan').description('choose MIG layouts for idle GPU nodes from the slices pending pods request; changes nothing')).action(
    async (opts: ClusterOptions) => {
      const api = await openApi(opts);
      const { view } = await readFor(api, opts);
      const plan = planCluster(view);
      if (opts.json) return writeJson(io, planJson(plan, view));
      printPlan(io, plan, view);
    },
  );

  withClusterOptions(
    k8s
      .command('apply')
      .description("plan, then write the layouts into the MIG manager's ConfigMap, relabel the nodes and wait for the MIG manager")
      .option('--dry-run', 'print what would be written and labelled; change nothing')
      .option('--drain', 'cordon each node and evict its pods (not DaemonSet or static pods) first; uncordon after success')
      .option('--timeout <seconds>', 'how long to wait for nvidia.com/mig.config.state to become success or failed, per node', '600')
      .option('--drain-timeout <seconds>', 'how long evicted pods may take to go', '300')
      .option('--poll <seconds>', 'how often to read the node while waiting', '2')
      .option('--config-sync-seconds <seconds>', "wait after writing the ConfigMap before labelling, so the MIG manager's mounted copy has updated (kubelet sync)", '90'),
  ).action(
    async (
      opts: ClusterOptions & { dryRun?: boolean; drain?: boolean; timeout: string; drainTimeout: string; poll: string; configSyncSeconds: string },
    ) => {
      const timeoutSeconds = positiveSeconds(opts.timeout, '--timeout');
      const drainTimeoutSeconds = positiveSeconds(opts.drainTimeout, '--drain-timeout');
      const pollSeconds = positiveSeconds(opts.poll, '--poll');
      const configSyncSeconds = positiveSeconds(opts.configSyncSeconds, '--config-sync-seconds', true);
      const api = await openApi(opts);
      const { view, configText, resourceVersion } = await readFor(api, opts);
      const plan = planCluster(view);
      const result: ApplyResult = await applyPlan(api, plan, view, configText, resourceVersion, {
        namespace: opts.namespace,
        configMap: opts.configmap,
        key: opts.configKey,
        drain: opts.drain === true,
        force: opts.force === true,
        dryRun: opts.dryRun === true,
        timeoutSeconds,
        drainTimeoutSeconds,
        pollSeconds,
        configSyncSeconds,
        clock: { now: () => Date.now(), sleep: (ms) => sleep(ms) },
        log: (line) => {
          if (!opts.json) io.err(line);
        },
      });
      if (opts.json) {
        writeJson(io, { dryRun: opts.dryRun === true, plan: planJson(plan, view), configMap: result.configMap, nodes: result.nodes });
      } else {
        printPlan(io, plan, view);
        if (result.nodes.length === 0) io.out('nothing to change');
        if (opts.dryRun && result.nodes.length > 0) {
          io.out(`dry run: would add ${result.configMap.added.join(', ') || 'no config'} to ConfigMap ${opts.namespace}/${opts.configmap}${result.configMap.removed.length > 0 ? ` and remove ${result.configMap.removed.join(', ')}` : ''}`);
          for (const c of Object.keys(plan.configs)) io.out(YAML.stringify({ [c]: plan.configs[c] }, { lineWidth: 0 }).trimEnd());
        }
        for (const n of result.nodes) {
          const tail = n.outcome === 'dry-run' ? `would label ${n.node} nvidia.com/mig.config=${n.config}${opts.drain ? ' (after cordon and drain)' : ''}` : `${n.node}: ${n.outcome}`;
          io.out(`${tail}${n.outcome === 'success' ? `, advertises ${describeSlices(n.advertised)}` : ''}${n.message ? ` (${n.message})` : ''}`);
        }
      }
      const bad = result.nodes.filter((n) => n.outcome === 'failed' || n.outcome === 'timeout');
      if (bad.length > 0) {
        throw new MigpoolError('RUNTIME', `${bad.length} node(s) not reconfigured: ${bad.map((n) => `${n.node} ${n.outcome}${n.message ? ` (${n.message})` : ''}`).join('; ')}`, { quiet: opts.json === true });
      }
    },
  );

  withClusterOptions(
    k8s
      .command('controller')
      .description('run the plan/apply loop until stopped (SIGTERM, SIGINT); replicas elect a leader through a Lease, and only the leader acts')
      .option('--lease <name>', 'the coordination.k8s.io Lease (in --namespace) that elects the leader', 'migpool-controller')
      .option('--identity <name>', "this replica's name in the Lease (default: host name and process id)")
      .option('--lease-duration <seconds>', 'how long a Lease not renewed stays held (client-go and kube-controller-manager default)', '15')
      .option('--retry <seconds>', 'how often the leader renews the Lease and the others try for it (client-go default)', '2')
      .option('--interval <seconds>', 'how often the leader reads nodes, pods and Workloads and plans', '10')
      .option('--drain', 'cordon each node and evict its pods before relabelling it; uncordon after success')
      .option('--timeout <seconds>', 'how long to wait for nvidia.com/mig.config.state to become success or failed, per node', '600')
      .option('--drain-timeout <seconds>', 'how long evicted pods may take to go', '300')
      .option('--poll <seconds>', 'how often to read a node while waiting on the MIG manager', '2')
      .option('--config-sync-seconds <seconds>', "wait after writing the ConfigMap before labelling, so the MIG manager's mounted copy has updated (kubelet sync)", '90'),
  ).action(
    async (
      opts: ClusterOptions & {
        lease: string;
        identity?: string;
        leaseDuration: string;
        retry: string;
        interval: string;
        drain?: boolean;
        timeout: string;
        drainTimeout: string;
        poll: string;
        configSyncSeconds: string;
      },
    ) => {
      // Lease.spec.leaseDurationSeconds is an int32 (coordination.k8s.io/v1).
      if (!/^[1-9]\d*$/.test(opts.leaseDuration)) throw badInput(`--lease-duration '${opts.leaseDuration}': give a whole number of seconds, 1 or more (a Lease counts whole seconds)`);
      const leaseDurationSeconds = Number(opts.leaseDuration);
      const retrySeconds = positiveSeconds(opts.retry, '--retry');
      if (retrySeconds >= (leaseDurationSeconds * 2) / 3) {
        throw badInput(`--retry ${opts.retry}: must be under two thirds of --lease-duration (${opts.leaseDuration}), or the leader cannot renew the Lease before it lapses`);
      }
      const intervalSeconds = positiveSeconds(opts.interval, '--interval');
      const apply = {
        drain: opts.drain === true,
        timeoutSeconds: positiveSeconds(opts.timeout, '--timeout'),
        drainTimeoutSeconds: positiveSeconds(opts.drainTimeout, '--drain-timeout'),
        pollSeconds: positiveSeconds(opts.poll, '--poll'),
        configSyncSeconds: positiveSeconds(opts.configSyncSeconds, '--config-sync-seconds', true),
      };
      const api = await openApi(opts);
      const stop = new AbortController();
      const onSignal = (): void => stop.abort();
      process.once('SIGTERM', onSignal);
      process.once('SIGINT', onSignal);
      try {
        const report = await runController(api, {
          read: { namespace: opts.namespace, configMap: opts.configmap, configKey: opts.configKey, only: opts.node, ignore: opts.ignoreNode, force: opts.force === true, kueue: opts.kueue !== false },
          apply,
          lease: { namespace: opts.namespace, name: opts.lease, identity: opts.identity ?? `${hostname()}-${process.pid}`, leaseDurationSeconds },
          retrySeconds,
          intervalSeconds,
          now: () => Date.now(),
          sleep: (ms, signal) => sleep(ms, undefined, { signal }).catch(() => undefined),
          signal: stop.signal,
          log: (line) => io.err(`${new Date().toISOString()} ${line}`),
        });
        if (opts.json) writeJson(io, report);
      } finally {
        process.off('SIGTERM', onSignal);
        process.off('SIGINT', onSignal);
      }
    },
  );

  k8s
    .command('install-manifest')
    .description('print the ServiceAccount, RBAC (exactly the verbs the controller uses) and Deployment that run `migpool k8s controller` in the cluster')
    .option('--image <image>', 'an image with migpool on its PATH (required)')
    .option('--namespace <ns>', "namespace of the controller, its Lease and the MIG manager's ConfigMap", 'gpu-operator')
    .option('--configmap <name>', "migpool's mig-parted ConfigMap (the ClusterPolicy's migManager.config.name)", MIGPOOL_CONFIGMAP)
    .option('--config-key <key>', 'key of the ConfigMap that holds the mig-parted config', 'config.yaml')
    .option('--name <name>', 'name of the Deployment, ServiceAccount, roles and Lease', 'migpool-controller')
    .option('--replicas <n>', 'replicas (one leads, the others stand by)', '2')
    .option('--drain', 'run the controller with --drain (adds the pods/eviction right)')
    .option('--no-kueue', 'run the controller with --no-kueue (drops the Workloads right)')
    .option('-o, --output <format>', 'yaml or json', 'yaml')
    .action((opts: { image?: string; namespace: string; configmap: string; configKey: string; name: string; replicas: string; drain?: boolean; kueue?: boolean; output: string }) => {
      if (opts.image === undefined || opts.image.trim() === '') throw badInput('--image is required: name an image that has migpool on its PATH, e.g. --image registry.example.com/migpool:0.1.0');
      if (!/^[1-9]\d*$/.test(opts.replicas)) throw badInput(`--replicas '${opts.replicas}': give a whole number of 1 or more`);
      if (opts.output !== 'yaml' && opts.output !== 'json') throw badInput(`-o '${opts.output}': use yaml or json`);
      const objects = installManifest({
        namespace: opts.namespace,
        configMap: opts.configmap,
        configKey: opts.configKey,
        image: opts.image,
        name: opts.name,
        replicas: Number(opts.replicas),
        drain: opts.drain === true,
        kueue: opts.kueue !== false,
      });
      if (opts.output === 'json') return writeJson(io, { apiVersion: 'v1', kind: 'List', items: objects });
      io.out(objects.map((m) => YAML.stringify(m, { lineWidth: 0 }).trimEnd()).join('\n---\n'));
    });

  k8s
    .command('manifest')
    .description('turn job specs (the YAML of migpool submit) into Pod or batch/v1 Job manifests requesting their slice')
    .argument('<files...>', 'job spec files (YAML or JSON; one spec, a list, or several documents each)')
    .option('--image <image>', 'container image to run the command in (required: job specs name none)')
    .option('--kind <kind>', 'Pod or Job', 'Job')
    .option('--gpu <model>', 'GPU model the cluster has, to turn resources.memory into the smallest MIG profile that holds it (and a node affinity on its product names)')
    .option('--gpu-product <label>', 'nodeSelector nvidia.com/gpu.product=LABEL, as GPU feature discovery labels the nodes (kubectl get nodes -L nvidia.com/gpu.product)')
    .option('--cpu <cores>', "CPU request of the container ('' for none)", MANIFEST_DEFAULTS.cpu)
    .option('--memory <quantity>', "memory request of the container ('' for none)", MANIFEST_DEFAULTS.memory)
    .option('--shm <quantity>', "size of the memory-backed /dev/shm for data loader workers ('' for the runtime's 64 MiB)", MANIFEST_DEFAULTS.shm)
    .option('--queue <name>', 'Kueue LocalQueue to submit to (label kueue.x-k8s.io/queue-name)')
    .option('--namespace <ns>', 'metadata.namespace of the manifests (default: none, kubectl uses its own)')
    .option('--foreground-class <name>', "priorityClassName for foreground jobs ('' for none)", 'migpool-foreground')
    .option('--background-class <name>', "priorityClassName for background jobs ('' for none)", 'migpool-background')
    .option('-o, --output <format>', 'yaml or json', 'yaml')
    .action(
      async (
        files: string[],
        opts: { image?: string; kind: string; gpu?: string; gpuProduct?: string; cpu: string; memory: string; shm: string; queue?: string; namespace?: string; foregroundClass: string; backgroundClass: string; output: string },
      ) => {
        const kind = ({ pod: 'Pod', job: 'Job' } as Record<string, ManifestKind>)[opts.kind.toLowerCase()];
        if (!kind) throw badInput(`--kind '${opts.kind}': use Pod or Job`);
        if (opts.image === undefined || opts.image.trim() === '') {
          throw badInput('--image is required: a job spec names a command but no container image; give the image that holds the program, e.g. --image nvcr.io/nvidia/pytorch:24.08-py3');
        }
        const image = opts.image;
        if (opts.output !== 'yaml' && opts.output !== 'json') throw badInput(`-o '${opts.output}': use yaml or json`);
        const manifests: unknown[] = [];
        for (const file of files) {
          for (const { where, spec } of await readSpecFile(file)) {
            manifests.push(
              jobManifest(spec, where, {
                kind,
                image,
                ...(opts.gpu !== undefined ? { gpu: opts.gpu } : {}),
                ...(opts.namespace !== undefined ? { namespace: opts.namespace } : {}),
                ...(opts.gpuProduct !== undefined ? { gpuProduct: opts.gpuProduct } : {}),
                ...(opts.cpu !== '' ? { cpu: opts.cpu } : {}),
                ...(opts.memory !== '' ? { memory: opts.memory } : {}),
                ...(opts.shm !== '' ? { shm: opts.shm } : {}),
                ...(opts.queue !== undefined ? { queue: opts.queue } : {}),
                priorityClasses: { foreground: opts.foregroundClass, background: opts.backgroundClass },
              }),
            );
          }
        }
        if (opts.output === 'json') {
          return writeJson(io, manifests.length === 1 ? manifests[0] : { apiVersion: 'v1', kind: 'List', items: manifests });
        }
        io.out(manifests.map((m) => YAML.stringify(m, { lineWidth: 0 }).trimEnd()).join('\n---\n'));
      },
    );
}
