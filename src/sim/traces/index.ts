/** Job traces for the simulator: parsers of the Philly and Alibaba traces, migpool's CSV, and synthetic generators (general, and DeepPool's strong-scaled foreground with background jobs). Pure: text in, jobs out. */
export { parsePhillyTrace, readPhillyTrace, PHILLY_COLUMNS } from './philly.js';
export { parseAlibabaTrace, readAlibabaTrace, profileCovering, ALIBABA_COLUMNS, ALIBABA_QOS_PRIORITY, type AlibabaTraceOptions } from './alibaba.js';
export {
  syntheticTrace,
  meanJobGpuSeconds,
  DEFAULT_DURATIONS,
  DEFAULT_MULTI_GPU_SHARE,
  DEFAULT_MULTI_GPU_SIZES,
  type SyntheticOptions,
  type LognormalDurations,
} from './synthetic.js';
export { parseJobsCsv, JOBS_CSV_REQUIRED, JOBS_CSV_OPTIONAL } from './csv.js';
export {
  deepPoolTrace,
  meanDeepPoolJobGpuSeconds,
  DEEPPOOL_TRACE_FOREGROUND_SHARE,
  DEEPPOOL_TRACE_GLOBAL_BATCH,
  DEEPPOOL_TRACE_MODELS,
  type DeepPoolTraceOptions,
} from './deeppool.js';
export { parseMix, formatMix, drawWorkload, DEFAULT_MIX_SPEC, type WorkloadMix } from './mix.js';
export { csvHeader, detectTraceFormat, traceFormatOf, type TraceFormat } from './detect.js';
export { JOBS_CSV_FORMAT, TRACE_FORMATS, traceFormat, traceFormatHelp, type TraceFormatEntry, type TraceReadOptions } from './formats.js';
export type { TraceOptions, ParsedTrace, SkippedRows } from './types.js';
