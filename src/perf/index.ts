/** The performance model: how fast a training workload runs on a MIG instance, a whole GPU, or a shared GPU. */
export type { Prediction, Resource, SpeedCurve, Workload } from './types.js';
export { predict, predictPacked, TIMESLICE_OVERHEAD, TIMESLICE_HOST_SHARE, MPS_CONTENTION, type PackedPrediction } from './model.js';
export { builtInWorkloads, resolveWorkload, DATASET_SIZES } from './workloads.js';
export { fitReport, type FitReportEntry, type ErrorSummary } from './report.js';
export { workloadFromPoints, parseWorkloadYaml, workloadToYaml, type MeasuredPoint, type YamlPoint, type UserWorkloadOptions } from './user-workload.js';
export { effectiveCapacity, resourceShape, type ResourceShape } from './resources.js';
export { iterationTime, referenceTime, scaleTime, scaleWork } from './curve.js';
export { fitCurve, relativeErrors, type CurvePoint } from './fit.js';
export { DEFAULT_MEMORY_BOUND_SHARE, calibratedModels, type CalibratedModel } from './calibrated.js';
export { MEMORY_BANDWIDTH, type BandwidthEntry } from './bandwidth.js';
export { fitsOn, type MemoryFit } from './fits.js';
export { refitWorkload, raiseMemoryAfterOom, POINTS_FOR_SHAPE, type ObservedPoint } from './refit.js';
export { resolveWorkloadRef, isWorkloadFile } from './workload-ref.js';
export { estimateTrainingMemory, MEMORY_MODELS, type MemoryEstimate, type MemoryQuery, type Optimizer, type Precision } from './memory/estimate.js';
export { smSpeed, SM_SPEED_BY_GPU, SM_SPEED_BY_ARCHITECTURE, type SmSpeed } from './sm-speed.js';
export type { SharingPoint } from './types.js';
