import { calibratedModels, DEFAULT_MEMORY_BOUND_SHARE, type CalibratedModel, type LabeledPoint } from './calibrated.js';
import { iterationTime } from './curve.js';
import { fitCurve, relativeErrors } from './fit.js';
import type { SpeedCurve } from './types.js';

/** Mean and maximum relative error of the predicted iteration time. */
export interface ErrorSummary {
  readonly points: number;
  readonly mean: number;
  readonly max: number;
}

/** How well one calibrated model's curve fits its data. */
export interface FitReportEntry {
  readonly id: string;
  readonly description: string;
  readonly curve: SpeedCurve;
  /** Error on the points the curve was fitted to. */
  readonly calibration: ErrorSummary;
  /**
   * Error on held-out points: for MISO models each profile in turn is left out and predicted from a
   * fit to the others (leave-one-profile-out, the question migpool asks: how fast on a slice not
   * measured); for DeepPool models (one resource only) each batch size in turn (leave-one-batch-out).
   */
  readonly leaveOut: ErrorSummary & { readonly kind: 'profile' | 'batch' };
  /** Data problems worth knowing when reading the numbers. */
  readonly notes: readonly string[];
}

function summary(errors: readonly number[]): ErrorSummary {
  return { points: errors.length, mean: errors.reduce((s, e) => s + e, 0) / Math.max(1, errors.length), max: Math.max(0, ...errors) };
}

function leaveOut(model: CalibratedModel, key: (p: LabeledPoint) => string | number): ErrorSummary {
  const groups = [...new Set(model.points.map(key))];
  const errors: number[] = [];
  for (const g of groups) {
    const train = model.points.filter((p) => key(p) !== g);
    if (train.length < 2) continue;
    const curve = fitCurve(train, model.curve.memoryBoundShare);
    for (const p of model.points.filter((q) => key(q) === g)) {
      errors.push(Math.abs(iterationTime(curve, p.batch, p.capacity) / p.iterationMs - 1));
    }
  }
  return summary(errors);
}

function notesFor(model: CalibratedModel): string[] {
  const notes: string[] = [];
  if (model.id === 'miso/deepspeech2') {
    notes.push('MISO deepspeech2 times are not monotone in batch (batch 4 is slower than batch 8 on 2g..4g): noisy data, do not rely on this curve');
  }
  if (model.dataset === 'deeppool') notes.push('DeepPool sums per-layer times measured one layer at a time on a whole A100: they include per-layer synchronisation');
  return notes;
}

const reports = new Map<number, FitReportEntry[]>();

/**
 * For each calibrated model, the error of its fitted curve on its calibration points and on points
 * left out of the fit. Deterministic (memoised).
 */
export function fitReport(memoryBoundShare = DEFAULT_MEMORY_BOUND_SHARE): readonly FitReportEntry[] {
  let out = reports.get(memoryBoundShare);
  if (!out) {
    out = calibratedModels(memoryBoundShare).map((model) => {
      const fit = relativeErrors(model.curve, model.points);
      const byProfile = model.dataset === 'miso';
      return {
        id: model.id,
        description: model.description,
        curve: model.curve,
        calibration: { points: model.points.length, mean: fit.mean, max: fit.max },
        leaveOut: { kind: byProfile ? ('profile' as const) : ('batch' as const), ...leaveOut(model, byProfile ? (p) => p.profile : (p) => p.batch) },
        notes: notesFor(model),
      };
    });
    reports.set(memoryBoundShare, out);
  }
  return out;
}
