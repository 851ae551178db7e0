import type { GpuModel } from '../mig/types.js';
import type { Workload } from '../perf/types.js';
import type { JobPlacement, JobProgressView, JobRecord, NewEvent } from '../store/types.js';
import type { MpsClient, Multiplexer } from './multiplex.js';
import type { Slowdown } from './multiplex-monitor.js';

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

/** What {@link backOffNeighbours} needs of the service (called under its lock). */
export interface BackOffDeps {
  readonly mux: Multiplexer;
  readonly running: (id: string) => JobRecord | undefined;
  readonly preemptible: (id: string) => boolean;
  /** Writes the job as being preempted (its end then requeues it). */
  readonly markPreempting: (rec: JobRecord) => Promise<void>;
  readonly event: (e: Omit<NewEvent, 'time'>) => Promise<void>;
  /** Stops the attempt: SIGTERM, SIGKILL after its grace period. */
  readonly cancel: (id: string) => Promise<void>;
  readonly log?: (line: string) => void;
}

/**
 * A foreground job slowed beyond the bound: each background neighbour that may be moved backs off
 * (preempted, to restart with fewer threads, or stopped from sharing; see Multiplexer); one that
 * may not is left running and the slowdown is reported (`mps-slowdown`).
 */
export async function backOffNeighbours(s: Slowdown, d: BackOffDeps): Promise<void> {
  for (const id of s.background) {
    const rec = d.running(id);
    if (!rec || rec.state !== 'running' || rec.cancelRequested || rec.reason === 'preempting') continue;
    const data = { gpu: s.gpu, foreground: s.foreground, slowdown: s.slowdown, bound: d.mux.bound, aloneSamplesPerSecond: s.alone, aloneFrom: s.aloneFrom, sharedSamplesPerSecond: s.shared };
    if (!d.preemptible(id)) {
      await d.event({ type: 'mps-slowdown', jobId: id, data: { ...data, action: 'none: its spec does not say preemptible: true' } });
      continue;
    }
    const next = d.mux.backOff(id);
    const what = next === null ? 'stopped: it waits for a GPU without a foreground job' : `restarted with CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=${next}`;
    d.log?.(`job ${id}: foreground job ${s.foreground} on GPU ${s.gpu} runs ${s.slowdown.toFixed(2)}x slower beside it (bound ${d.mux.bound}x); ${what}`);
    await d.markPreempting(rec);
    await d.event({ type: 'mps-backoff', jobId: id, data: { ...data, activeThreadPercentage: next, stopped: next === null } });
    await d.cancel(id);
  }
}
