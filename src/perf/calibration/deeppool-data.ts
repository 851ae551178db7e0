// Generated from data/calibration/vggLayerGpuProfileA100.txt, wrnLayerGpuProfileA100V2.txt, inceptionLayerGpuProfileA100.txt, resnetLayerGpuProfileA100.txt, vitLayerGpuProfileA100.txt by src/perf/calibration/data.test.ts.
// Do not edit: change the data and run `npx vitest run src/perf/calibration -u`.
import type { DeepPoolModel } from './deeppool-files.js';
import type { DeepPoolBatch } from './parse.js';

export const DEEPPOOL_SUMS: Readonly<Record<DeepPoolModel, readonly DeepPoolBatch[]>> = {
  'vgg16': [
    { batch: 1, layers: 22, sumAvgMs: 7.522 },
    { batch: 2, layers: 22, sumAvgMs: 9.198 },
    { batch: 4, layers: 22, sumAvgMs: 11.707 },
    { batch: 8, layers: 22, sumAvgMs: 17.35 },
    { batch: 16, layers: 22, sumAvgMs: 29.94 },
    { batch: 32, layers: 22, sumAvgMs: 54.962 },
    { batch: 64, layers: 22, sumAvgMs: 104.285 },
    { batch: 128, layers: 22, sumAvgMs: 203.846 },
  ],
  'wrn101-2': [
    { batch: 1, layers: 39, sumAvgMs: 19.314 },
    { batch: 2, layers: 39, sumAvgMs: 22.502 },
    { batch: 3, layers: 39, sumAvgMs: 25.181 },
    { batch: 4, layers: 39, sumAvgMs: 26.769 },
    { batch: 5, layers: 39, sumAvgMs: 30.58 },
    { batch: 6, layers: 39, sumAvgMs: 33.458 },
    { batch: 8, layers: 39, sumAvgMs: 37.154 },
    { batch: 12, layers: 39, sumAvgMs: 49.666 },
    { batch: 16, layers: 39, sumAvgMs: 58.77 },
    { batch: 32, layers: 39, sumAvgMs: 104.009 },
  ],
  'inception-v3': [
    { batch: 1, layers: 125, sumAvgMs: 37.269 },
    { batch: 2, layers: 125, sumAvgMs: 41.176 },
    { batch: 4, layers: 125, sumAvgMs: 42.085 },
    { batch: 8, layers: 125, sumAvgMs: 46.789 },
    { batch: 16, layers: 125, sumAvgMs: 51.65 },
    { batch: 32, layers: 125, sumAvgMs: 62.069 },
    { batch: 64, layers: 125, sumAvgMs: 91.529 },
    { batch: 128, layers: 125, sumAvgMs: 168.957 },
  ],
  'resnet34': [
    { batch: 1, layers: 37, sumAvgMs: 13.07 },
    { batch: 2, layers: 37, sumAvgMs: 14.513 },
    { batch: 4, layers: 37, sumAvgMs: 16.896 },
    { batch: 8, layers: 37, sumAvgMs: 17.79 },
    { batch: 16, layers: 37, sumAvgMs: 20.308 },
    { batch: 32, layers: 37, sumAvgMs: 23.879 },
    { batch: 64, layers: 37, sumAvgMs: 29.944 },
    { batch: 128, layers: 37, sumAvgMs: 51.176 },
  ],
  'vit': [
    { batch: 1, layers: 15, sumAvgMs: 17.281 },
    { batch: 2, layers: 15, sumAvgMs: 16.268 },
    { batch: 4, layers: 15, sumAvgMs: 14.962 },
    { batch: 8, layers: 15, sumAvgMs: 14.925 },
    { batch: 16, layers: 15, sumAvgMs: 18.919 },
    { batch: 32, layers: 15, sumAvgMs: 34.257 },
    { batch: 64, layers: 15, sumAvgMs: 62.366 },
    { batch: 128, layers: 15, sumAvgMs: 119.21 },
  ],
};
