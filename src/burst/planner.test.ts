import { describe, expect, it } from 'vitest';
import { linearLayer, loadBuiltIn } from '../../test/burst-fixtures.js';
import { MigpoolError } from '../errors.js';
import { createRandom } from '../random.js';
import { computeMs, DEFAULT_NETWORK, layerCost, transferMs } from './cost.js';
import { resolveCostModel } from './cost-models.js';
import { DEEPPOOL_COST, deeppoolGradient } from './deeppool-cost.js';
import { evaluatePlan, planBurst, planDataParallel, singleGpuMs, splitOptions } from './planner.js';
import type { CostModelName, Layer, ModelGraph, Network, PlanRequest, SplitSet } from './types.js';

/** 1 GB/s and no latency: a byte costs 1e-6 ms, a 1e6-byte sample 1 ms each way. */
const NET: Network = { bandwidthGBps: 1, latencyUs: 0 };

function req(gpus: number, globalBatch: number, amplification: number, network = NET, costModel: CostModelName = 'migpool', splits: SplitSet = 'migpool'): PlanRequest {
  return { gpus, globalBatch, amplification, network, costModel, splits };
}

/** `ms(b)` at batches 1, 2, 4 (and nothing else): enough for plans of 4 samples on up to 4 GPUs. */
function layer(name: string, inputs: number[], ms: (b: number) => number, outputBytesPerSample = 1e6, paramBytes = 0): Layer {
  return { name, inputs, times: [1, 2, 4].map((b) => ({ batch: b, ms: ms(b) })), paramBytes, outputBytesPerSample };
}

/** Every assignment of split options to layers, with whether it fits the amplification limit. */
function bruteForce(model: ModelGraph, r: PlanRequest): { iterationMs: number; gpus: number[] } {
  const opts = splitOptions(r.gpus, r.globalBatch, r.splits);
  const cost = resolveCostModel(r.costModel);
  const n = model.layers.length;
  let best = { iterationMs: Number.POSITIVE_INFINITY, gpus: [] as number[] };
  const pick = new Array<number>(n).fill(0);
  for (;;) {
    const gpus = pick.map((k) => opts[k] as number);
    const plan = evaluatePlan(model, r, gpus);
    const fits = model.layers.every((l, v) => {
      const c = plan.layers[v]!;
      const ins = [...new Set(l.inputs)];
      const budget = r.amplification * computeMs(l.times, r.globalBatch);
      const own = c.ms * c.gpus;
      if (c.gpus > 1 && own > budget * (1 + 1e-9)) return false;
      const slack = Math.max(0, budget - own) / Math.max(1, ins.length);
      return ins.every((u) => {
        const t = cost.transferMs(model.layers[u]!, l, r.globalBatch, gpus[u]!, c.gpus, r.network);
        return t * Math.max(gpus[u]!, c.gpus) <= slack * (1 + 1e-9) + 1e-12;
      });
    });
    if (fits && plan.iterationMs < best.iterationMs - 1e-9) best = { iterationMs: plan.iterationMs, gpus };
    let d = 0;
    while (d < n && pick[d] === opts.length - 1) pick[d++] = 0;
    if (d === n) break;
    pick[d] = pick[d]! + 1;
  }
  return best;
}

describe('cost model', () => {
  it('interpolates between profiled batches, holds below the smallest, extends the last slope above the largest', () => {
    const times = [
      { batch: 2, ms: 4 },
      { batch: 4, ms: 6 },
      { batch: 8, ms: 14 },
    ];
    expect(computeMs(times, 1)).toBe(4);
    expect(computeMs(times, 3)).toBe(5);
    expect(computeMs(times, 6)).toBe(10);
    expect(computeMs(times, 16)).toBe(30);
    expect(computeMs([{ batch: 4, ms: 2 }], 8)).toBe(4);
  });

  it('all-reduces 2(p-1)/p of the bytes, moves the smaller side\'s share of its samples both ways plus latency', () => {
    expect(layerCost({ name: 'x', inputs: [], times: [{ batch: 1, ms: 1 }], paramBytes: 1e6, outputBytesPerSample: 0 }, 4, 4, NET).syncMs).toBeCloseTo(1.5);
    expect(layerCost({ name: 'x', inputs: [], times: [{ batch: 1, ms: 1 }], paramBytes: 1e6, outputBytesPerSample: 0 }, 4, 1, NET).syncMs).toBe(0);
    // 4 -> 1: the one GPU receives 3 of its 4 samples, 3 ms each way.
    expect(transferMs(1e6, 4, 4, 1, NET)).toBeCloseTo(6);
    // 2 -> 4: each of the two sends one of its two samples.
    expect(transferMs(1e6, 4, 2, 4, NET)).toBeCloseTo(2);
    expect(transferMs(1e6, 4, 2, 2, NET)).toBe(0);
    expect(transferMs(0, 4, 1, 2, { bandwidthGBps: 1, latencyUs: 40 })).toBeCloseTo(0.08);
  });

  it('offers powers of two up to the GPUs, the GPU count itself, never more than the batch; DeepPool\'s splits are the powers of two only', () => {
    expect(splitOptions(8, 1024)).toEqual([1, 2, 4, 8]);
    expect(splitOptions(6, 1024)).toEqual([1, 2, 4, 6]);
    expect(splitOptions(1024, 1024)).toHaveLength(11);
    expect(splitOptions(6, 1024, 'deeppool')).toEqual([1, 2, 4]);
    expect(splitOptions(8, 1024, 'deeppool')).toEqual([1, 2, 4, 8]);
  });
});

describe("DeepPool's accounting", () => {
  const op = (kind: string, config: Record<string, unknown>): Layer => ({ name: kind, inputs: [], times: [{ batch: 1, ms: 1 }], paramBytes: 1e6, outputBytesPerSample: 2e6, outputElementsPerSample: 1e6, op: { kind, config } });

  it('counts kernel_size x out_channels (+ kernel_size) values for a convolution, on any GPU count; in x out + out for a linear layer, only when split; nothing for other kinds', () => {
    // An integer kernel_size counts as k x 1 and in_channels is left out, as DeepPool's calcConv2dSyncTime does.
    expect(deeppoolGradient(op('conv2d', { in_channels: 512, out_channels: 512, kernel_size: 3 }))).toEqual({ bytes: 4 * (3 * 512 + 3), evenOnOneGpu: true });
    expect(deeppoolGradient(op('conv2d', { in_channels: 768, out_channels: 192, kernel_size: [1, 7] }))).toEqual({ bytes: 4 * (7 * 192 + 7), evenOnOneGpu: true });
    expect(deeppoolGradient(op('linear', { in_features: 4096, out_features: 1000 }))).toEqual({ bytes: 4 * (4096 * 1000 + 1000), evenOnOneGpu: false });
    expect(deeppoolGradient(op('ResnetBottleneck', { inplanes: 256, planes: 64 })).bytes).toBe(0);
    const plain: Layer = { name: 'x', inputs: [], times: [{ batch: 1, ms: 1 }], paramBytes: 1e6, outputBytesPerSample: 0 };
    expect(deeppoolGradient(plain)).toEqual({ bytes: 1e6, evenOnOneGpu: false });
    // bytes / bandwidth with no ring factor: 1e6 B at 1 GB/s is 1 ms on 2 GPUs and on 8.
    expect(DEEPPOOL_COST.layerCost(plain, 8, 8, NET).syncMs).toBeCloseTo(1);
    expect(DEEPPOOL_COST.layerCost(plain, 8, 1, NET).syncMs).toBe(0);
    expect(DEEPPOOL_COST.layerCost(op('conv2d', { out_channels: 10, kernel_size: 3 }), 8, 1, NET).syncMs).toBeCloseTo(4 * 33 * 1e-6);
  });

  it('moves 4-byte activations, the busiest GPU\'s share both ways plus latency, and pins a flatten to its producer (x1000)', () => {
    const conv = op('conv2d', { out_channels: 1, kernel_size: 3 });
    // 4 -> 1: 3 of 4 samples of 1e6 elements at 4 B: 12 ms each way.
    expect(DEEPPOOL_COST.transferMs(conv, conv, 4, 4, 1, NET)).toBeCloseTo(24);
    expect(DEEPPOOL_COST.transferMs(conv, op('flatten', {}), 4, 4, 1, NET)).toBeCloseTo(24000);
    expect(DEEPPOOL_COST.transferMs(conv, conv, 4, 2, 2, NET)).toBe(0);
  });
});

describe("against DeepPool's planner on its own settings (VGG16, 8 A100, global batch 32, no limit, 266 GB/s, 40 us)", () => {
  const vgg = loadBuiltIn('vgg16');
  const r8 = (costModel: CostModelName, splits: SplitSet = 'migpool'): PlanRequest => req(8, 32, 1e9, DEFAULT_NETWORK, costModel, splits);

  it("in DeepPool's space and accounting it finds DeepPool's plan, priced as the profile adds up by hand", () => {
    const theirs = planBurst(vgg, r8('deeppool', 'deeppool'));
    expect(theirs.layers.map((l) => l.gpus)).toEqual([...new Array<number>(19).fill(8), 1, 1, 1]);
    // By hand: every layer up to the flatten at 4 samples per GPU, the linear layers at 32 on one
    // GPU, the flatten's 25,088 fp32 values of 28 samples to that GPU and back, and DeepPool's
    // tiny convolution sync (3 x filters + 3 values each).
    const at = (v: number, b: number): number => vgg.layers[v]!.times.find((t) => t.batch === b)!.ms;
    let hand = 0;
    for (let v = 0; v < 19; v++) hand += at(v, 4);
    for (let v = 19; v < 22; v++) hand += at(v, 32);
    hand += 2 * ((28 * 25088 * 4) / 266e6 + 0.04);
    for (const l of vgg.layers) if (l.op?.kind === 'conv2d') hand += (4 * (3 * (l.op.config['out_channels'] as number) + 3)) / 266e6;
    expect(theirs.iterationMs).toBeCloseTo(hand, 9);
    expect(theirs.iterationMs).toBeCloseTo(11.851, 3);
  });

  it("migpool's planner is at least as good as DeepPool's plan under either accounting", () => {
    const theirs = planBurst(vgg, r8('deeppool', 'deeppool')).layers.map((l) => l.gpus);
    for (const costModel of ['migpool', 'deeppool'] as const) {
      const ours = planBurst(vgg, r8(costModel));
      expect(ours.iterationMs).toBeLessThanOrEqual(evaluatePlan(vgg, r8(costModel), theirs).iterationMs + 1e-12);
    }
    // migpool's accounting: the flatten moves with the linear layers (DeepPool pins it), 12.219 against 12.228.
    expect(planBurst(vgg, r8('migpool')).iterationMs).toBeCloseTo(12.219, 3);
    expect(evaluatePlan(vgg, r8('migpool'), theirs).iterationMs).toBeCloseTo(12.228, 3);
  });

  it('beats it where the search spaces differ: on 6 GPUs DeepPool uses at most 4, migpool all 6 (about 20% faster under either accounting)', () => {
    for (const costModel of ['migpool', 'deeppool'] as const) {
      const r6 = (splits: SplitSet): PlanRequest => req(6, 24, 1e9, DEFAULT_NETWORK, costModel, splits);
      const theirs = planBurst(vgg, r6('deeppool'));
      const ours = planBurst(vgg, r6('migpool'));
      expect(Math.max(...theirs.layers.map((l) => l.gpus))).toBe(4);
      expect(ours.layers[0]!.gpus).toBe(6);
      expect(ours.iterationMs).toBeLessThan(0.85 * theirs.iterationMs);
    }
  });
});

describe('planBurst on hand-checked models', () => {
  // a: 1 ms per sample (scales perfectly); b: 10 ms at any batch (gains nothing from GPUs).
  const chain: ModelGraph = { name: 'chain', source: 'test', layers: [layer('a', [], (b) => b), layer('b', [0], () => 10)] };

  it('a very large limit gives the fastest plan: both layers on 4 GPUs, 1 + 10 ms', () => {
    const p = planBurst(chain, req(4, 4, 1e9));
    expect(p.layers.map((l) => l.gpus)).toEqual([4, 4]);
    expect(p.iterationMs).toBeCloseTo(11);
    expect(p.gpuMs).toBeCloseTo(44);
  });

  it('limit 2: b may use 2 GPUs (20 ms of GPU-time for 10 ms alone) and then takes no transfer, so a follows it: 2 + 10 ms', () => {
    const p = planBurst(chain, req(4, 4, 2));
    expect(p.layers.map((l) => l.gpus)).toEqual([2, 2]);
    expect(p.iterationMs).toBeCloseTo(12);
    expect(p.gpuMs).toBeCloseTo(24);
  });

  it('limit 1 gives no extra GPU-time: one GPU, 4 + 10 ms, as much GPU-time as one GPU', () => {
    const p = planBurst(chain, req(4, 4, 1));
    expect(p.layers.map((l) => l.gpus)).toEqual([1, 1]);
    expect(p.iterationMs).toBeCloseTo(14);
    expect(p.gpuMs).toBeCloseTo(singleGpuMs(chain, 4));
  });

  it('the data-parallel baseline runs every layer on all GPUs', () => {
    const p = planDataParallel(chain, req(4, 4, 2));
    expect(p.layers.map((l) => l.gpus)).toEqual([4, 4]);
    expect(p.iterationMs).toBeCloseTo(11);
    expect(p.gpuMs).toBeCloseTo(44);
  });

  // A fork and a join: a -> b, a -> c, (b, c) -> d; b and d scale, c takes 10 ms at any batch.
  const diamond: ModelGraph = {
    name: 'diamond',
    source: 'test',
    layers: [layer('a', [], (b) => b), layer('b', [0], (b) => b), layer('c', [0], () => 10), layer('d', [1, 2], (b) => b, 0)],
  };

  it('branches, very large limit: everything on 4 GPUs (1 + 1 + 10 + 1 ms), no transfer', () => {
    const p = planBurst(diamond, req(4, 4, 1e9));
    expect(p.layers.map((l) => l.gpus)).toEqual([4, 4, 4, 4]);
    expect(p.iterationMs).toBeCloseTo(13);
  });

  it('branches, limit 2: c can use 2 GPUs only, and with no slack left nothing may move data into or out of it: all on 2 GPUs', () => {
    const p = planBurst(diamond, req(4, 4, 2));
    expect(p.layers.map((l) => l.gpus)).toEqual([2, 2, 2, 2]);
    expect(p.iterationMs).toBeCloseTo(16);
    expect(p.gpuMs).toBeCloseTo(32);
  });

  it('branches, limit 1: one GPU everywhere, GPU-time of one GPU', () => {
    const p = planBurst(diamond, req(4, 4, 1));
    expect(p.layers.map((l) => l.gpus)).toEqual([1, 1, 1, 1]);
    expect(p.gpuMs).toBeCloseTo(singleGpuMs(diamond, 4));
  });

  it('counts a transfer on every differently split edge, forward and backward', () => {
    const p = evaluatePlan(diamond, req(4, 4, 2), [4, 4, 1, 4]);
    // a->c 4->1: 6 ms; c->d 1->4: 6 ms.
    expect(p.layers[2]!.transferMs).toBeCloseTo(6);
    expect(p.layers[3]!.transferMs).toBeCloseTo(6);
    expect(p.iterationMs).toBeCloseTo(1 + 1 + 10 + 1 + 12);
    expect(p.gpuMs).toBeCloseTo(4 * 3 + 10 + 6 * 4 + 6 * 4);
  });
});

describe('planBurst is exact', () => {
  it('matches brute force on random chains, forks and joins at limits 1, 1.5, 2 and 1e9, under both cost models and split sets', () => {
    const random = createRandom(7);
    for (let trial = 0; trial < 25; trial++) {
      const n = 3 + Math.floor(random() * 4);
      const layers: Layer[] = [];
      for (let v = 0; v < n; v++) {
        const inputs: number[] = [];
        if (v > 0) {
          inputs.push(v - 1 - Math.floor(random() * Math.min(v, 2)));
          if (v > 1 && random() < 0.4) inputs.push(Math.floor(random() * (v - 1)));
        }
        const perSample = random() * 2;
        const fixed = random() * 3;
        layers.push({
          name: `l${v}`,
          inputs: [...new Set(inputs)],
          times: [1, 2, 4, 8].map((b) => ({ batch: b, ms: fixed + perSample * b })),
          paramBytes: random() < 0.5 ? Math.floor(random() * 4e6) : 0,
          outputBytesPerSample: Math.floor(random() * 4e5),
        });
      }
      const model: ModelGraph = { name: `random-${trial}`, source: 'test', layers };
      for (const a of [1, 1.5, 2, 1e9]) {
        const r = req(trial % 3 === 0 ? 6 : 8, 8, a, { bandwidthGBps: 4, latencyUs: 20 }, trial % 2 === 0 ? 'deeppool' : 'migpool', trial % 4 === 1 ? 'deeppool' : 'migpool');
        const best = bruteForce(model, r);
        const p = planBurst(model, r);
        expect(p.iterationMs).toBeCloseTo(best.iterationMs, 9);
        if (a === 1) expect(p.gpuMs).toBeLessThanOrEqual(singleGpuMs(model, 8) * (1 + 1e-9));
      }
    }
  });
});

describe('planBurst on the built-in models (global batch 1024)', () => {
  for (const name of ['vgg16', 'wrn', 'inception', 'resnet', 'vit']) {
    it(`${name}: limit 1 costs no extra GPU-time, a very large limit is no slower than data parallelism, limit 2 in between`, () => {
      const model = loadBuiltIn(name);
      for (const gpus of [8, 64, 1024]) {
        const one = planBurst(model, req(gpus, 1024, 1, DEFAULT_NETWORK));
        expect(one.gpuMs).toBeLessThanOrEqual(singleGpuMs(model, 1024) * (1 + 1e-9));
        const dp = planDataParallel(model, req(gpus, 1024, 2, DEFAULT_NETWORK));
        const fastest = planBurst(model, req(gpus, 1024, 1e9, DEFAULT_NETWORK));
        const two = planBurst(model, req(gpus, 1024, 2, DEFAULT_NETWORK));
        expect(fastest.iterationMs).toBeLessThanOrEqual(dp.iterationMs * (1 + 1e-9));
        expect(fastest.iterationMs).toBeLessThanOrEqual(two.iterationMs * (1 + 1e-9));
        expect(two.iterationMs).toBeLessThanOrEqual(one.iterationMs * (1 + 1e-9));
        for (const l of two.layers) expect(Number.isInteger(Math.log2(l.gpus)) || l.gpus === gpus).toBe(true);
      }
    });
  }
});

describe('planBurst input checks', () => {
  const model: ModelGraph = { name: 'm', source: 'test', layers: [linearLayer('a', [], 1, 0, 0)] };
  function message(f: () => unknown): string {
    try {
      f();
    } catch (e) {
      expect(e).toBeInstanceOf(MigpoolError);
      expect((e as MigpoolError).code).toBe('BAD_INPUT');
      return (e as Error).message;
    }
    throw new Error('did not throw');
  }
  it('refuses a batch smaller than the GPUs, a limit below 1, a bad network', () => {
    expect(message(() => planBurst(model, req(8, 4, 2)))).toContain('global batch 4 is smaller than the 8 GPUs');
    expect(message(() => planBurst(model, req(8, 8, 0.5)))).toContain('at least 1');
    expect(message(() => planBurst(model, req(8, 8, 2, { bandwidthGBps: 0, latencyUs: 1 })))).toContain('bandwidth');
    expect(message(() => planDataParallel(model, req(0, 8, 2)))).toContain('gpus');
  });
});
