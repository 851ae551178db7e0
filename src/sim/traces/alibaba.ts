import { predict } from '../../perf/model.js';
import { badInput } from '../../errors.js';
import type { GiProfile, GpuModel } from '../../mig/types.js';
import { resolveWorkload } from '../../perf/workloads.js';
import type { Priority } from '../../sched/types.js';
import type { TraceJob } from '../types.js';
import { DEFAULT_MIX_SPEC, drawWorkload, parseMix } from './mix.js';
import { cell, columnIndex, readCsv } from './records.js';
import { checkedLimit, SkipCounter, type ParsedTrace, type TraceOptions } from './types.js';

/** The columns of Alibaba's GPU-sharing pod list (cluster-trace-gpu-v2023, openb_pod_list_*.csv) that are read. */
export const ALIBABA_COLUMNS = ['name', 'num_gpu', 'gpu_milli', 'qos', 'creation_time', 'deletion_time', 'scheduled_time'] as const;

/**
 * Priority of each QoS class of the trace: `BE` (best effort) runs in the background; `LS`
 * (latency-sensitive), and the Kubernetes classes `Guaranteed` and `Burstable`, in the foreground.
 */
export const ALIBABA_QOS_PRIORITY: Readonly<Record<string, Priority>> = {
  BE: 'background',
  LS: 'foreground',
  Guaranteed: 'foreground',
  Burstable: 'foreground',
};

/** Options of readAlibabaTrace. */
export interface AlibabaTraceOptions extends TraceOptions {
  /** The fleet's GPU model: fractional requests become its MIG profiles. */
  readonly gpuModel: GpuModel;
}

/** Plain GI profiles (no media-extension or graphics variants), smallest first. */
function plainProfiles(model: GpuModel): GiProfile[] {
  return model.giProfiles
    .filter((p) => /^\d+g\.\d+gb$/.test(p.name))
    .sort((a, b) => a.computeSlices - b.computeSlices || a.memorySlices - b.memorySlices);
}

/**
 * The smallest MIG profile of `model` whose compute share (compute slices over the GPU's) is at
 * least `fraction` (0 < fraction <= 1): on an A100-40GB, 0.1 -> 1g.5gb, 0.25 -> 2g.10gb,
 * 0.46 -> 4g.20gb, 0.81 -> 7g.40gb. Among profiles with equal compute, the one with the least
 * memory; media-extension variants (`+me`, `-me`, `+gfx`) are never chosen.
 */
export function profileCovering(model: GpuModel, fraction: number): GiProfile {
  const candidates = plainProfiles(model);
  const found = candidates.find((p) => p.computeSlices / model.computeSlices >= fraction - 1e-9) ?? candidates[candidates.length - 1];
  if (!found) throw badInput(`${model.name} has no MIG profiles to map a GPU fraction to`);
  return found;
}

function integerField(text: string, file: string, line: number, field: string): number {
  const n = Number(text);
  if (text === '' || !Number.isInteger(n) || n < 0) throw badInput(`${file}:${line}: field '${field}': expected a non-negative whole number, got '${text}'`);
  return n;
}

/**
 * Reads Alibaba's GPU-sharing trace (ATC'23, `openb_pod_list_*.csv`). Each pod asking for GPUs
 * becomes a job:
 *
 * - arrival: `creation_time` (seconds) from the earliest kept pod's;
 * - work: the pod's lifetime `deletion_time - creation_time`, in whole-GPU seconds: as it is for
 *   whole-GPU pods; a fractional pod spent its lifetime on its share of a GPU, so its work is its
 *   lifetime times its workload's speed on the covering MIG profile relative to a whole GPU
 *   (performance model): on that profile it takes its lifetime again, on a whole GPU less;
 * - `num_gpu` = 1 with `gpu_milli` < 1000 is a fractional request: the job asks for the MIG
 *   profile of `gpuModel` that covers the fraction (profileCovering) and gpus = 1; other pods ask
 *   for `num_gpu` whole GPUs;
 * - priority from `qos` (ALIBABA_QOS_PRIORITY: BE background, LS/Guaranteed/Burstable foreground);
 * - workload: single-GPU pods (fractional or whole) draw one from `mix`, in arrival order;
 *   multi-GPU pods run `large`, as in the Philly trace.
 *
 * Skipped, and counted by reason: pods with no GPU, with no deletion time, never scheduled (no
 * `scheduled_time`: they were pending until deleted, so their lifetime says nothing of their
 * work), and with a non-positive lifetime. Ids are the pod names.
 *
 * @throws MigpoolError `BAD_INPUT` naming `file:line` and the field for a malformed row or an unknown QoS
 */
export function readAlibabaTrace(text: string, options: AlibabaTraceOptions): ParsedTrace {
  const file = options.file ?? 'openb_pod_list_default.csv';
  const limit = checkedLimit(options.limit);
  const table = readCsv(text, file);
  const col = columnIndex(table, ALIBABA_COLUMNS, 'an Alibaba pod list (name,cpu_milli,memory_mib,num_gpu,gpu_milli,...)');
  const skipped = new SkipCounter();
  const pods: { order: number; name: string; gpus: number; milli: number; priority: Priority; created: number; work: number }[] = [];
  for (const [order, row] of table.rows.entries()) {
    const gpus = integerField(cell(row, col.num_gpu), file, row.line, 'num_gpu');
    if (gpus === 0) {
      skipped.add('no GPU requested');
      continue;
    }
    const milliText = cell(row, col.gpu_milli);
    const milli = milliText === '' ? 1000 : integerField(milliText, file, row.line, 'gpu_milli');
    const qos = cell(row, col.qos);
    const priority = ALIBABA_QOS_PRIORITY[qos];
    if (priority === undefined) {
      throw badInput(`${file}:${row.line}: field 'qos': unknown QoS '${qos}', expected one of ${Object.keys(ALIBABA_QOS_PRIORITY).join(', ')}`);
    }
    const created = integerField(cell(row, col.creation_time), file, row.line, 'creation_time');
    const deletedText = cell(row, col.deletion_time);
    if (deletedText === '') {
      skipped.add('no deletion time');
      continue;
    }
    const deleted = integerField(deletedText, file, row.line, 'deletion_time');
    if (cell(row, col.scheduled_time) === '') {
      skipped.add('never scheduled');
      continue;
    }
    if (deleted <= created) {
      skipped.add('non-positive lifetime');
      continue;
    }
    pods.push({ order, name: cell(row, col.name) || `alibaba-${order + 1}`, gpus, milli, priority, created, work: deleted - created });
  }
  pods.sort((a, b) => a.created - b.created || a.order - b.order);
  const start = pods[0]?.created ?? 0;
  const mix = options.mix ?? parseMix(DEFAULT_MIX_SPEC);
  const large = resolveWorkload('large');
  const jobs: TraceJob[] = pods.slice(0, Math.min(pods.length, limit)).map((p) => {
    const fractional = p.gpus === 1 && p.milli > 0 && p.milli < 1000;
    const workload = p.gpus === 1 ? drawWorkload(mix, options.random) : large;
    const profile = fractional ? profileCovering(options.gpuModel, p.milli / 1000).name : null;
    let work = p.work;
    if (profile !== null) {
      const onSlice = predict(workload, { kind: 'mig', gpu: options.gpuModel, profile }).samplesPerSecond;
      const onWhole = predict(workload, { kind: 'full', gpu: options.gpuModel }).samplesPerSecond;
      if (onSlice !== null && onWhole) work = p.work * (onSlice / onWhole);
    }
    return { id: p.name, workload, gpus: p.gpus, priority: p.priority, arrival: p.created - start, work, memoryGiB: null, profile };
  });
  return { jobs, skipped: skipped.list() };
}

/** The jobs of an Alibaba pod list (see readAlibabaTrace). */
export function parseAlibabaTrace(text: string, options: AlibabaTraceOptions): TraceJob[] {
  return readAlibabaTrace(text, options).jobs;
}
