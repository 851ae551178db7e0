/**
 * A migpool job spec (what `migpool submit` takes) as a Kubernetes Pod or batch/v1 Job that asks the
 * NVIDIA device plugin for the job's slice. Pure.
 */
import { badInput } from '../errors.js';
import { findGiProfile, resolveGpuModel } from '../mig/catalog/index.js';
import type { GiProfile } from '../mig/types.js';
import { parseJobSpec, type JobSpecInput } from '../jobs/job-spec.js';
import { k8sMigResourceName } from '../partition/export.js';
import { LABEL_PRODUCT, WHOLE_GPU_RESOURCE } from './resources.js';

/** Kueue's label naming a Job's (or Pod's) LocalQueue (kubernetes-sigs/kueue, `kueue.x-k8s.io/queue-name`). */
export const LABEL_QUEUE_NAME = 'kueue.x-k8s.io/queue-name';

// k8s.io/apimachinery/pkg/api/resource: a quantity is a decimal number with an optional binary
// (Ki..Ei) or decimal (m, k, M..E) suffix. Exponent forms (1e3) are left out on purpose.
const QUANTITY = /^\d+(\.\d+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$/;
// k8s.io/apimachinery/pkg/util/validation IsValidLabelValue: at most 63 characters.
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

function quantity(value: string, flag: string, example: string): string {
  if (!QUANTITY.test(value)) throw badInput(`${flag} '${value}': not a Kubernetes quantity; give e.g. ${example}`);
  return value;
}

function labelValue(value: string, flag: string): string {
  if (value === '' || value.length > 63 || !LABEL_VALUE.test(value)) {
    throw badInput(`${flag} '${value}': not a valid label value (at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit)`);
  }
  return value;
}

export type ManifestKind = 'Pod' | 'Job';

export interface ManifestOptions {
  readonly kind: ManifestKind;
  /** The container image (job specs name none). */
  readonly image: string;
  /** The cluster's GPU model, to turn `resources.memory` into a profile and to check `resources.profile`. */
  readonly gpu?: string;
  readonly namespace?: string;
  /** priorityClassName per job priority; '' for none. */
  readonly priorityClasses: { readonly foreground: string; readonly background: string };
  /** CPU and memory requests of the container (Kubernetes quantities: `4`, `500m`, `16Gi`). */
  readonly cpu?: string;
  readonly memory?: string;
  /** Size of the memory-backed /dev/shm (PyTorch data loader workers pass batches through it). */
  readonly shm?: string;
  /**
   * `nvidia.com/gpu.product` value to select nodes by (a nodeSelector). Without it, `gpu` adds a
   * required node affinity on every product name of that model.
   */
  readonly gpuProduct?: string;
  /** Kueue LocalQueue to submit to (the `kueue.x-k8s.io/queue-name` label). */
  readonly queue?: string;
}

export interface Manifest {
  readonly apiVersion: string;
  readonly kind: ManifestKind;
  readonly metadata: Record<string, unknown>;
  readonly spec: Record<string, unknown>;
}

/** A DNS-1123 name from a job name: lower case, `_` and other characters as `-`, at most 63 long. */
function dnsName(name: string, where: string): string {
  const out = name
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^[^a-z0-9]+|[^a-z0-9]+$/g, '')
    .slice(0, 63)
    .replace(/[^a-z0-9]+$/, '');
  if (out === '') throw badInput(`${where}: name '${name}' has no letter or digit to make a Kubernetes name from; rename the job`);
  return out;
}

/** The smallest MIG profile (memory, then compute) of the model whose memory holds `gib`. */
export function profileForMemory(gpu: string, gib: number, where: string): GiProfile {
  const model = resolveGpuModel(gpu);
  const fits = model.giProfiles
    .filter((p) => !/[+-]/.test(p.name) && p.memoryGiB !== null && p.memoryGiB >= gib)
    .sort((a, b) => (a.memoryGiB ?? 0) - (b.memoryGiB ?? 0) || a.computeSlices - b.computeSlices);
  const best = fits[0];
  if (!best) {
    const largest = Math.max(...model.giProfiles.map((p) => p.memoryGiB ?? 0));
    throw badInput(`${where}: resources.memory ${gib} GiB is more than any MIG profile of ${model.name} holds (largest ${largest} GiB); ask for whole GPUs with resources.gpus`);
  }
  return best;
}

/** The extended resource and count the job asks the device plugin for. */
function sliceRequest(spec: JobSpecInput, where: string, gpu: string | undefined): [string, number] {
  const r = spec.resources;
  if (r.gpus !== undefined) return [WHOLE_GPU_RESOURCE, r.gpus];
  if (r.profile !== undefined) {
    // The device plugin hands out named slices only: `{atLeast: P}` asks for P itself.
    const profile = typeof r.profile === 'object' ? r.profile.atLeast : r.profile;
    if (gpu !== undefined) findGiProfile(resolveGpuModel(gpu), profile);
    return [k8sMigResourceName(profile), 1];
  }
  if (r.memory !== undefined) {
    if (gpu === undefined) throw badInput(`${where}: resources.memory needs --gpu MODEL to choose the MIG profile that holds ${r.memory} GiB (e.g. --gpu A100-SXM4-40GB)`);
    return [k8sMigResourceName(profileForMemory(gpu, r.memory, where).name), 1];
  }
  return [WHOLE_GPU_RESOURCE, 1];
}

/** `nvidia.com/gpu.product` values GPU feature discovery gives a model's nodes: its product names, spaces as `-`. */
export function productLabels(gpu: string): string[] {
  return [...new Set(resolveGpuModel(gpu).productNames.map((n) => n.replace(/ /g, '-')))];
}

/** Where the pod may run: a nodeSelector for `gpuProduct`, else an affinity on the products of `gpu`. */
function placement(options: ManifestOptions): Record<string, unknown> {
  if (options.gpuProduct !== undefined) return { nodeSelector: { [LABEL_PRODUCT]: labelValue(options.gpuProduct, '--gpu-product') } };
  if (options.gpu === undefined) return {};
  const values = productLabels(options.gpu).filter((v) => LABEL_VALUE.test(v) && v.length <= 63);
  return { affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: LABEL_PRODUCT, operator: 'In', values }] }] } } } };
}

/**
 * The manifest for one job spec: its command (first word as `command`, the rest as `args`), env,
 * working directory, its slice as a limit (`nvidia.com/mig-1g.5gb: 1`, `nvidia.com/gpu: N`;
 * `memory` becomes the smallest profile of `--gpu` that holds it), `maxRuntime` as the pod's
 * activeDeadlineSeconds (per attempt, as migpool's own limit), `retries` as the Job's backoffLimit,
 * the priority as priorityClassName; CPU and memory requests, a memory-backed /dev/shm, a
 * nodeSelector (or affinity) on the GPU product and the Kueue queue label when given. A Pod cannot
 * retry: `retries` > 0 is refused for it.
 */
export function jobManifest(raw: unknown, where: string, options: ManifestOptions): Manifest {
  const spec = parseJobSpec(raw, where);
  if (options.kind === 'Pod' && spec.retries > 0) {
    throw badInput(`${where}: retries ${spec.retries} cannot be expressed by a bare Pod; use --kind Job (backoffLimit) or set retries: 0`);
  }
  const name = dnsName(spec.name, where);
  const gpu = options.gpu ?? (options.gpuProduct !== undefined ? options.gpuProduct.replace(/-SHARED$/, '').replace(/-MIG-.*$/, '') : undefined);
  const [resource, count] = sliceRequest(spec, where, gpu);
  const [program, ...args] = spec.command;
  const requests: Record<string, string> = {};
  if (options.cpu !== undefined) requests['cpu'] = quantity(options.cpu, '--cpu', '4 or 500m');
  if (options.memory !== undefined) requests['memory'] = quantity(options.memory, '--memory', '16Gi');
  const shm = options.shm !== undefined ? quantity(options.shm, '--shm', '8Gi') : undefined;
  const queue = options.queue !== undefined ? labelValue(options.queue, '--queue') : undefined;
  const container: Record<string, unknown> = {
    name: name.replace(/\./g, '-'),
    image: options.image,
    command: [program],
    ...(args.length > 0 ? { args } : {}),
    ...(spec.workdir !== undefined ? { workingDir: spec.workdir } : {}),
    ...(Object.keys(spec.env).length > 0 ? { env: Object.entries(spec.env).map(([k, value]) => ({ name: k, value })) } : {}),
    resources: { ...(Object.keys(requests).length > 0 ? { requests } : {}), limits: { [resource]: count } },
    ...(shm !== undefined ? { volumeMounts: [{ name: 'dshm', mountPath: '/dev/shm' }] } : {}),
  };
  const priorityClassName = options.priorityClasses[spec.priority];
  const podSpec: Record<string, unknown> = {
    restartPolicy: 'Never',
    ...(priorityClassName !== '' ? { priorityClassName } : {}),
    ...(spec.maxRuntime !== undefined ? { activeDeadlineSeconds: Math.ceil(spec.maxRuntime) } : {}),
    ...placement(options),
    containers: [container],
    // Containers get a 64 MiB /dev/shm by default (containerd's CRI and Docker's default shm size); a memory-backed
    // emptyDir there lets data loader workers share batches. Its pages count as the pod's memory.
    ...(shm !== undefined ? { volumes: [{ name: 'dshm', emptyDir: { medium: 'Memory', sizeLimit: shm } }] } : {}),
  };
  const labels: Record<string, string> = { 'app.kubernetes.io/managed-by': 'migpool', 'migpool.io/priority': spec.priority, ...(queue !== undefined ? { [LABEL_QUEUE_NAME]: queue } : {}) };
  const annotations: Record<string, string> = {};
  if (name !== spec.name) annotations['migpool.io/job-name'] = spec.name;
  if (spec.workload !== undefined) annotations['migpool.io/workload'] = spec.workload;
  if (spec.estimatedSeconds !== undefined) annotations['migpool.io/estimated-seconds'] = String(spec.estimatedSeconds);
  const metadata: Record<string, unknown> = {
    name,
    ...(options.namespace !== undefined ? { namespace: options.namespace } : {}),
    labels,
    ...(Object.keys(annotations).length > 0 ? { annotations } : {}),
  };
  if (options.kind === 'Pod') return { apiVersion: 'v1', kind: 'Pod', metadata, spec: podSpec };
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata,
    spec: { backoffLimit: spec.retries, template: { metadata: { labels: { ...labels } }, spec: podSpec } },
  };
}
