/** The performance model: how fast a training workload runs on a MIG instance, a whole GPU, or a shared GPU. */
export type { Prediction, Resource, SpeedCurve, Workload } from './types.js';
export { predict, predictPacked, TIMESLICE_OVERHEAD, MPS_CONTENTION, type PackedPrediction } from './model.js';
export { builtInWorkloads, resolveWorkload, DATASET_SIZES } from './workloads.js';
export { fitReport, type FitReportEntry, type ErrorSummary } from './report.js';
export { workloadFromPoints, parseWorkloadYaml, workloadToYaml, type MeasuredPoint, type YamlPoint, type UserWorkloadOptions } from './user-workload.js';
export { effectiveCapacity, resourceShape, type ResourceShape } from './resources.js';
export { iterationTime, referenceTime, scaleTime, scaleWork } from './curve.js';
export { fitCurve, relativeErrors, type CurvePoint } from './fit.js';
export { DEFAULT_MEMORY_BOUND_SHARE, calibratedModels, type CalibratedModel } from './calibrated.js';
export { MEMORY_BANDWIDTH, type BandwidthEntry } from './bandwidth.js';
