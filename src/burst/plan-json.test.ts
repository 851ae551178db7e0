import { describe, expect, it } from 'vitest';
import { runtimeLayers, sampleBlocks } from './plan-json.js';
import { evaluatePlan } from './planner.js';
import type { ModelGraph } from './types.js';

describe('the plan a runtime receives', () => {
  it('splits the batch into contiguous blocks, each rank at most the per-GPU batch the costs assume, every sample once', () => {
    expect(sampleBlocks(32, 8)).toEqual([0, 4, 8, 12, 16, 20, 24, 28].map((s) => [s, s + 4]));
    expect(sampleBlocks(10, 4)).toEqual([
      [0, 2],
      [2, 5],
      [5, 7],
      [7, 10],
    ]);
    expect(sampleBlocks(7, 1)).toEqual([[0, 7]]);
  });

  it('gives each layer its ranks, inputs, kind and the gradient bytes it all-reduces (none on one GPU)', () => {
    const model: ModelGraph = {
      name: 'm',
      source: 'test',
      layers: [
        { name: 'a', inputs: [], times: [{ batch: 1, ms: 1 }], paramBytes: 100, outputBytesPerSample: 10, op: { kind: 'conv2d', config: {} } },
        { name: 'b', inputs: [0, 0], times: [{ batch: 1, ms: 1 }], paramBytes: 50, outputBytesPerSample: 10 },
      ],
    };
    const req = { gpus: 2, globalBatch: 4, amplification: 1e9, network: { bandwidthGBps: 1, latencyUs: 0 } };
    const plan = evaluatePlan(model, req, [2, 1]);
    const layers = runtimeLayers(model, plan, req);
    expect(layers[0]).toMatchObject({ index: 0, name: 'a', kind: 'conv2d', inputs: [], gpus: 2, ranks: [0, 1], samples: [[0, 2], [2, 4]], gradientBytes: 100 });
    expect(layers[1]).toMatchObject({ index: 1, name: 'b', kind: null, inputs: [0], gpus: 1, ranks: [0], samples: [[0, 4]], gradientBytes: 0 });
    // b receives 2 of its 4 samples (10 B each) both ways: 4e-5 ms.
    expect(layers[1]!.transferMs).toBeCloseTo(4e-5, 12);
    expect(layers[1]!.ms).toBeCloseTo(plan.layers[1]!.ms + plan.layers[1]!.transferMs, 12);
  });
});
