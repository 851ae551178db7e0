import type { GpuModel } from '../../mig/types.js';
import { ALIBABA_COLUMNS, readAlibabaTrace } from './alibaba.js';
import { JOBS_CSV_OPTIONAL, JOBS_CSV_REQUIRED, parseJobsCsv } from './csv.js';
import { PHILLY_COLUMNS, readPhillyTrace } from './philly.js';
import { checkedLimit, type ParsedTrace, type TraceOptions } from './types.js';

/** What every format's reader takes: the parsers' options plus the fleet's first GPU model. */
export interface TraceReadOptions extends TraceOptions {
  /** The GPU model whose MIG profiles fractional GPU requests map to (Alibaba's `gpu_milli`). */
  readonly gpuModel: GpuModel;
}

/**
 * One format a trace file can be in. `migpool simulate --help`, the detection of a `--trace FILE`
 * and the registry test iterate TRACE_FORMATS, so a new format is its reader file and one entry.
 */
export interface TraceFormatEntry {
  /** Its name (`philly`). */
  readonly name: string;
  /** One line for help texts: whose format it is and its header. */
  readonly help: string;
  /** Whether a CSV header (its column names, trimmed and lower-cased) is this format's. */
  detect(header: readonly string[]): boolean;
  /** The jobs of a file's text (pure: text in, jobs out). @throws MigpoolError BAD_INPUT naming file:line and the field */
  read(text: string, options: TraceReadOptions): ParsedTrace;
}

const has = (header: readonly string[], columns: readonly string[]): boolean => columns.every((c) => header.includes(c));

/** migpool's own job CSV: what a file no other format claims is read as (its reader names the columns it lacks). */
export const JOBS_CSV_FORMAT: TraceFormatEntry = {
  name: 'jobs-csv',
  help: `migpool's job CSV: ${JOBS_CSV_REQUIRED.join(',')}[,${JOBS_CSV_OPTIONAL.join(',')}] (any order)`,
  detect: (header) => has(header, JOBS_CSV_REQUIRED),
  read(text, options) {
    const jobs = parseJobsCsv(text, options.file ?? 'jobs.csv', options.workloads ?? []);
    const limit = checkedLimit(options.limit);
    return { jobs: jobs.length > limit ? jobs.slice(0, limit) : jobs, skipped: [] };
  },
};

/** Every trace format, in the order detection tries them. */
export const TRACE_FORMATS: readonly TraceFormatEntry[] = [
  {
    name: 'philly',
    help: `Microsoft's Philly trace as processed by AdaptDL: ${PHILLY_COLUMNS.join(',')},...`,
    detect: (header) => has(header, PHILLY_COLUMNS),
    read: (text, options) => readPhillyTrace(text, options),
  },
  {
    name: 'alibaba',
    help: `Alibaba's GPU pod list (clusterdata, openb_pod_list_*.csv): ${ALIBABA_COLUMNS.join(',')},...`,
    // The columns that tell a pod list apart; the reader checks the rest.
    detect: (header) => has(header, ['num_gpu', 'gpu_milli', 'creation_time']),
    read: (text, options) => readAlibabaTrace(text, options),
  },
  JOBS_CSV_FORMAT,
];

/** The format of that name, or undefined. */
export function traceFormat(name: string): TraceFormatEntry | undefined {
  return TRACE_FORMATS.find((f) => f.name === name);
}

/** The registered formats, one per line, for `--help`. */
export function traceFormatHelp(): string {
  const width = Math.max(...TRACE_FORMATS.map((f) => f.name.length));
  return `Trace file formats (told apart by the header):\n${TRACE_FORMATS.map((f) => `  ${f.name.padEnd(width)}  ${f.help}`).join('\n')}`;
}
