import { splitCsvLine } from './records.js';

/** The formats a trace file can be in. */
export type TraceFormat = 'philly' | 'alibaba' | 'jobs-csv';

/**
 * Which format a CSV text is in, from its header: Philly's (`timestamp,duration,num_gpus,...`),
 * Alibaba's pod list (`name,...,num_gpu,gpu_milli,...`), or else migpool's job CSV.
 */
export function detectTraceFormat(text: string): TraceFormat {
  const first = text.split(/\r?\n/).find((l) => l.trim() !== '' && !l.trim().startsWith('#')) ?? '';
  const header = splitCsvLine(first).map((h) => h.toLowerCase());
  if (['timestamp', 'duration', 'num_gpus'].every((h) => header.includes(h))) return 'philly';
  if (['num_gpu', 'gpu_milli', 'creation_time'].every((h) => header.includes(h))) return 'alibaba';
  return 'jobs-csv';
}
