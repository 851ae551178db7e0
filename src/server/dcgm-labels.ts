import type { GpuSnapshot } from '../control/service-port.js';

/**
 * The identity labels of NVIDIA dcgm-exporter's GPU series, spelled as it spells them, so that
 * migpool's series join DCGM's with `on(Hostname, gpu)` or `on(Hostname, gpu, GPU_I_ID)`.
 *
 * Source: NVIDIA/dcgm-exporter internal/pkg/rendermetrics/render_metrics.go (release
 * 4.5.3-4.8.2), whose GPU series are
 * `FIELD{gpu="<index>",UUID="<GPU uuid>",pci_bus_id=...,device=...,modelName="<product>"`
 * `[,GPU_I_PROFILE="<profile>",GPU_I_ID="<NVML GI id>"][,Hostname="<host>"]}`; GPU_I_ID is
 * `mi.InstanceInfo.Info.NvmlInstanceId` (internal/pkg/collector/gpu_collector.go). Its main
 * branch renamed `Hostname` to `hostname` after that release (commit d5e5f51, #655); migpool
 * follows the released exporter.
 */
export const GPU_LABELS = ['gpu', 'UUID', 'modelName', 'Hostname'] as const;
/** {@link GPU_LABELS} and the GPU instance's (MIG) labels. */
export const INSTANCE_LABELS = [...GPU_LABELS, 'GPU_I_ID', 'GPU_I_PROFILE'] as const;

export type GpuLabels = Record<(typeof GPU_LABELS)[number], string>;
export type InstanceLabels = Record<(typeof INSTANCE_LABELS)[number], string>;

/** A GPU's identity labels. */
export function gpuLabels(g: GpuSnapshot, hostname: string): GpuLabels {
  return { gpu: String(g.index), UUID: g.uuid, modelName: g.name, Hostname: hostname };
}

/** A MIG instance's identity labels (GPU_I_ID empty when the service does not know the id). */
export function instanceLabels(g: GpuSnapshot, i: GpuSnapshot['instances'][number], hostname: string): InstanceLabels {
  return { ...gpuLabels(g, hostname), GPU_I_ID: i.gpuInstanceId == null ? '' : String(i.gpuInstanceId), GPU_I_PROFILE: i.profile };
}
