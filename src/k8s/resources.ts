/**
 * The names the NVIDIA GPU Operator puts on Kubernetes nodes and pods, and the arithmetic of pod
 * resource requests. Pure.
 *
 * Labels: GPU feature discovery (NVIDIA/k8s-device-plugin, gpu-feature-discovery) writes
 * `nvidia.com/gpu.product` (product name with spaces as `-`, plus `-MIG-<profile>` under the single
 * strategy or `-SHARED` with time-slicing), `nvidia.com/gpu.count`, `nvidia.com/mig.capable`,
 * `nvidia.com/mig.strategy`. The MIG manager (NVIDIA/mig-parted, deployments/gpu-operator) applies
 * the config named by `nvidia.com/mig.config` and reports in `nvidia.com/mig.config.state`
 * (`pending`, `rebooting`, `success`, `failed`).
 */
import { GPU_MODELS } from '../mig/catalog/index.js';
import { k8sMigResourceName } from '../partition/export.js';

export const LABEL_PRODUCT = 'nvidia.com/gpu.product';
export const LABEL_COUNT = 'nvidia.com/gpu.count';
export const LABEL_MIG_CAPABLE = 'nvidia.com/mig.capable';
export const LABEL_MIG_STRATEGY = 'nvidia.com/mig.strategy';
export const LABEL_MIG_CONFIG = 'nvidia.com/mig.config';
export const LABEL_MIG_STATE = 'nvidia.com/mig.config.state';

export const WHOLE_GPU_RESOURCE = 'nvidia.com/gpu';
const MIG_RESOURCE = /^nvidia\.com\/mig-(.+)$/;

/** What migpool's planner calls a slice kind: a MIG profile name, or `gpu` for a whole GPU. */
export type SliceName = string;

let byResource: Map<string, string> | null = null;

/**
 * The slice a resource name stands for: `nvidia.com/gpu` -> `gpu`, `nvidia.com/mig-1g.5gb` ->
 * `1g.5gb`, `nvidia.com/mig-1g.5gb.me` -> `1g.5gb+me` (the device plugin writes `+` as `.`; the
 * catalogue says which profile a name comes from). Null for any other resource. A MIG resource no
 * catalogued GPU offers keeps the name as written (the planner then finds no GPU for it).
 */
export function sliceOfResource(resource: string): SliceName | null {
  if (resource === WHOLE_GPU_RESOURCE) return 'gpu';
  const m = MIG_RESOURCE.exec(resource);
  if (!m) return null;
  if (!byResource) {
    byResource = new Map();
    for (const model of GPU_MODELS) for (const p of model.giProfiles) byResource.set(k8sMigResourceName(p.name), p.name);
  }
  return byResource.get(resource) ?? m[1] ?? null;
}

/** The resource name of a slice: the inverse of {@link sliceOfResource}. */
export function resourceOfSlice(slice: SliceName): string {
  return slice === 'gpu' ? WHOLE_GPU_RESOURCE : k8sMigResourceName(slice);
}

/**
 * A Kubernetes quantity of a countable extended resource (`"7"`, `7`, `"1k"` is refused): GPU
 * resources are plain integers. Null when it is not one.
 */
export function countQuantity(value: unknown): number | null {
  const text = typeof value === 'number' ? String(value) : typeof value === 'string' ? value.trim() : '';
  return /^\d+$/.test(text) ? Number(text) : null;
}

/** The GPU slices in a resource list (`status.allocatable`, a container's limits): slice -> count. */
export function slicesIn(list: Readonly<Record<string, unknown>> | undefined): Record<SliceName, number> {
  const out: Record<SliceName, number> = {};
  for (const [name, value] of Object.entries(list ?? {})) {
    const slice = sliceOfResource(name);
    const n = countQuantity(value);
    if (slice !== null && n !== null && n > 0) out[slice] = (out[slice] ?? 0) + n;
  }
  return out;
}

/** The parts of a pod's spec that decide what GPU slices it asks for. */
export interface PodResourceSpec {
  readonly containers?: readonly { readonly resources?: { readonly limits?: Record<string, unknown>; readonly requests?: Record<string, unknown> } }[];
  readonly initContainers?: readonly { readonly resources?: { readonly limits?: Record<string, unknown>; readonly requests?: Record<string, unknown> } }[];
}

function containerSlices(c: { readonly resources?: { readonly limits?: Record<string, unknown>; readonly requests?: Record<string, unknown> } }): Record<SliceName, number> {
  // Extended resources cannot be overcommitted: requests equal limits, and either may be written.
  return slicesIn({ ...(c.resources?.requests ?? {}), ...(c.resources?.limits ?? {}) });
}

/**
 * The GPU slices a pod holds while it runs, as the scheduler counts them: per resource, the larger
 * of the sum over its containers and the largest single init container.
 */
export function podSlices(spec: PodResourceSpec | undefined): Record<SliceName, number> {
  const sum: Record<SliceName, number> = {};
  for (const c of spec?.containers ?? []) for (const [k, n] of Object.entries(containerSlices(c))) sum[k] = (sum[k] ?? 0) + n;
  for (const c of spec?.initContainers ?? []) for (const [k, n] of Object.entries(containerSlices(c))) sum[k] = Math.max(sum[k] ?? 0, n);
  return sum;
}

/** Adds `b` into `a` (slice -> count). */
export function addSlices(a: Record<SliceName, number>, b: Readonly<Record<SliceName, number>>): Record<SliceName, number> {
  for (const [k, n] of Object.entries(b)) a[k] = (a[k] ?? 0) + n;
  return a;
}
