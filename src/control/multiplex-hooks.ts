import type { GpuModel } from '../mig/types.js';
import type { Workload } from '../perf/types.js';
import type { JobPlacement, JobProgressView, JobRecord } from '../store/types.js';
import type { MpsClient } from './multiplex.js';

/**
 * What the service's MPS hooks read from its open jobs: kept here so that service.ts only calls
 * them (src/control/multiplex.ts holds the logic).
 */

type MpsPlacement = Extract<JobPlacement, { kind: 'gpus' }>;

function mpsPlacementOf(r: JobRecord): MpsPlacement | null {
  const p = r.placement;
  if ((r.state !== 'running' && r.state !== 'starting') || !p || p.kind !== 'gpus' || p.sharing !== 'mps') return null;
  return p;
}

/** The device lists of the jobs that are MPS clients now (starting or running): their daemons are needed. */
export function mpsDevicesInUse(open: Iterable<JobRecord>): (readonly string[])[] {
  const out: (readonly string[])[] = [];
  for (const r of open) {
    const p = mpsPlacementOf(r);
    if (p) out.push(p.devices);
  }
  return out;
}

/** The running MPS clients with their progress, for the multiplexer's measure. */
export function mpsClients(
  open: Iterable<JobRecord>,
  progressOf: (id: string) => JobProgressView | null | undefined,
  workloadOf: (id: string) => Workload | null,
  modelOf: (gpu: number) => GpuModel | null,
): MpsClient[] {
  const out: MpsClient[] = [];
  for (const r of open) {
    const p = mpsPlacementOf(r);
    if (!p || r.state !== 'running') continue;
    const progress = progressOf(r.id);
    const gpu = p.gpus[0] ?? -1;
    out.push({ id: r.id, attempt: r.attempt, startedAt: r.startedAt ?? 0, priority: r.spec.priority, gpu, devices: p.devices, progress: progress ? { samples: progress.samples, updatedAt: progress.updatedAt } : null, workload: workloadOf(r.id), model: modelOf(gpu) });
  }
  return out;
}

/** A running MPS client's placement with its neighbours as they are now (the other jobs on its GPUs). */
export function withLiveNeighbours(rec: JobRecord, open: Iterable<JobRecord>): JobPlacement | null {
  const p = mpsPlacementOf(rec);
  if (!p || !p.mps) return rec.placement;
  const neighbours: string[] = [];
  for (const r of open) {
    const q = r.id === rec.id ? null : mpsPlacementOf(r);
    if (q && q.gpus.some((g) => p.gpus.includes(g))) neighbours.push(r.id);
  }
  return { ...p, mps: { ...p.mps, neighbours } };
}
