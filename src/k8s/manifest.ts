/**
 * A migpool job spec (what `migpool submit` takes) as a Kubernetes Pod or batch/v1 Job that asks the
 * NVIDIA device plugin for the job's slice. Pure.
 */
import { badInput } from '../errors.js';
import { findGiProfile, resolveGpuModel } from '../mig/catalog/index.js';
import type { GiProfile } from '../mig/types.js';
import { parseJobSpec, type JobSpecInput } from '../control/job-spec.js';
import { k8sMigResourceName } from '../partition/export.js';
import { WHOLE_GPU_RESOURCE } from './resources.js';

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

/**
 * The manifest for one job spec: its command (first word as `command`, the rest as `args`), env,
 * working directory, its slice as a limit (`nvidia.com/mig-1g.5gb: 1`, `nvidia.com/gpu: N`;
 * `memory` becomes the smallest profile of `--gpu` that holds it), `maxRuntime` as the pod's
 * activeDeadlineSeconds (per attempt, as migpool's own limit), `retries` as the Job's backoffLimit,
 * the priority as priorityClassName. A Pod cannot retry: `retries` > 0 is refused for it.
 */
export function jobManifest(raw: unknown, where: string, options: ManifestOptions): Manifest {
  const spec = parseJobSpec(raw, where);
  if (options.kind === 'Pod' && spec.retries > 0) {
    throw badInput(`${where}: retries ${spec.retries} cannot be expressed by a bare Pod; use --kind Job (backoffLimit) or set retries: 0`);
  }
  const name = dnsName(spec.name, where);
  const [resource, count] = sliceRequest(spec, where, options.gpu);
  const [program, ...args] = spec.command;
  const container: Record<string, unknown> = {
    name: name.replace(/\./g, '-'),
    image: options.image,
    command: [program],
    ...(args.length > 0 ? { args } : {}),
    ...(spec.workdir !== undefined ? { workingDir: spec.workdir } : {}),
    ...(Object.keys(spec.env).length > 0 ? { env: Object.entries(spec.env).map(([k, value]) => ({ name: k, value })) } : {}),
    resources: { limits: { [resource]: count } },
  };
  const priorityClassName = options.priorityClasses[spec.priority];
  const podSpec: Record<string, unknown> = {
    restartPolicy: 'Never',
    ...(priorityClassName !== '' ? { priorityClassName } : {}),
    ...(spec.maxRuntime !== undefined ? { activeDeadlineSeconds: Math.ceil(spec.maxRuntime) } : {}),
    containers: [container],
  };
  const labels = { 'app.kubernetes.io/managed-by': 'migpool', 'migpool.io/priority': spec.priority };
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
