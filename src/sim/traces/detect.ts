import { JOBS_CSV_FORMAT, TRACE_FORMATS, type TraceFormatEntry } from './formats.js';
import { splitCsvLine } from './records.js';

/** The name of a trace format (`philly`, `alibaba`, `jobs-csv`, ...: see TRACE_FORMATS). */
export type TraceFormat = string;

/** The first line of a CSV text that is not blank or a `#` comment, as trimmed, lower-cased column names. */
export function csvHeader(text: string): string[] {
  const first = text.split(/\r?\n/).find((l) => l.trim() !== '' && !l.trim().startsWith('#')) ?? '';
  return splitCsvLine(first).map((h) => h.trim().toLowerCase());
}

/** The format a CSV text is in, from its header: the first in TRACE_FORMATS that claims it, else migpool's job CSV. */
export function traceFormatOf(text: string): TraceFormatEntry {
  const header = csvHeader(text);
  return TRACE_FORMATS.find((f) => f.detect(header)) ?? JOBS_CSV_FORMAT;
}

/**
 * Which format a CSV text is in, from its header: Philly's (`timestamp,duration,num_gpus,...`),
 * Alibaba's pod list (`name,...,num_gpu,gpu_milli,...`), or else migpool's job CSV.
 */
export function detectTraceFormat(text: string): TraceFormat {
  return traceFormatOf(text).name;
}
