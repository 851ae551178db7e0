import { badInput } from '../errors.js';
import { checkTime, parseJobId } from './records.js';
import type { WorkloadObservation } from './types.js';

/** One row of `workload_observations`, as both adapters read it back. */
export interface ObservationRow {
  readonly job_id: number | string;
  readonly attempt: number;
  readonly workload: string;
  readonly gpu_model: string;
  readonly resource: string;
  readonly samples_per_second: number | null;
  readonly peak_memory_mib: number | null;
  readonly out_of_memory: number | boolean;
  readonly time: number | string;
}

function positiveOrNull(where: string, v: unknown): number | null {
  if (v === null) return null;
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) throw badInput(`workload observation: ${where} must be a positive number or null, got ${JSON.stringify(v)}`, { path: where });
  return v;
}

function text(where: string, v: unknown): string {
  if (typeof v !== 'string' || v === '' || v.length > 200) throw badInput(`workload observation: ${where} must be a non-empty string of at most 200 characters, got ${JSON.stringify(v)}`, { path: where });
  return v;
}

/** The observation checked (BAD_INPUT, one line, naming the field) and its job id as a number. */
export function checkObservation(o: WorkloadObservation): WorkloadObservation & { readonly jobNumber: number } {
  const jobNumber = parseJobId(o.jobId);
  if (jobNumber === null) throw badInput(`workload observation: jobId must be a job id such as "12", got ${JSON.stringify(o.jobId)}`, { path: 'jobId' });
  if (!Number.isInteger(o.attempt) || o.attempt < 1) throw badInput(`workload observation: attempt must be a whole number from 1, got ${JSON.stringify(o.attempt)}`, { path: 'attempt' });
  return {
    workload: text('workload', o.workload),
    jobId: o.jobId,
    attempt: o.attempt,
    gpuModel: text('gpuModel', o.gpuModel),
    resource: text('resource', o.resource),
    samplesPerSecond: positiveOrNull('samplesPerSecond', o.samplesPerSecond),
    peakMemoryMiB: positiveOrNull('peakMemoryMiB', o.peakMemoryMiB),
    outOfMemory: o.outOfMemory === true,
    time: checkTime('time', o.time),
    jobNumber,
  };
}

/** A row read back as an observation. */
export function observationFromRow(r: ObservationRow): WorkloadObservation {
  return {
    workload: r.workload,
    jobId: String(r.job_id),
    attempt: Number(r.attempt),
    gpuModel: r.gpu_model,
    resource: r.resource,
    samplesPerSecond: r.samples_per_second === null ? null : Number(r.samples_per_second),
    peakMemoryMiB: r.peak_memory_mib === null ? null : Number(r.peak_memory_mib),
    outOfMemory: r.out_of_memory === true || r.out_of_memory === 1,
    time: Number(r.time),
  };
}
