import { describe, expect, it } from 'vitest';
import { loadBuiltIn } from '../../test/burst-fixtures.js';
import { DEFAULT_NETWORK } from './cost.js';
import { backgroundShareOf, multiplex, timeline } from './multiplex.js';
import { planBurst, planDataParallel } from './planner.js';
import type { LayerChoice, Plan } from './types.js';

function choice(name: string, gpus: number, ms: number, transferMs = 0, transferGpus = 0): LayerChoice {
  return { name, gpus, ms, computeMs: ms, syncMs: 0, transferMs, transferGpus };
}

function plan(layers: LayerChoice[]): Plan {
  return { layers, iterationMs: layers.reduce((s, l) => s + l.ms + l.transferMs, 0), gpuMs: 0 };
}

describe('timeline', () => {
  it('lays out each layer\'s input transfer, then its compute, one after another', () => {
    const t = timeline(plan([choice('a', 4, 10), choice('b', 1, 5, 2, 4)]));
    expect(t.map((s) => [s.layer, s.what, s.startMs, s.ms, s.gpus])).toEqual([
      ['a', 'compute', 0, 10, 4],
      ['b', 'transfer', 10, 2, 4],
      ['b', 'compute', 12, 5, 1],
    ]);
  });
});

describe('multiplex', () => {
  // 4 GPUs: a on all four for 10 ms, then b on one for 10 ms. GPUs 1-3 idle 10 ms per iteration.
  const p = plan([choice('a', 4, 10), choice('b', 1, 10)]);

  it('background work fills the gaps less the switching cost; the foreground waits one piece where it takes its GPUs back', () => {
    const m = multiplex(p, 4, { slowdownBound: 1.1, pieceMs: 0.5, switchMs: 0.1 });
    expect(m.soloMs).toBe(20);
    expect(m.sharedMs).toBeCloseTo(20.5);
    expect(m.slowdown).toBeCloseTo(1.025);
    expect(m.classes.map((c) => [c.from, c.to])).toEqual([
      [0, 1],
      [1, 4],
    ]);
    expect(backgroundShareOf(m, 0)).toBe(0);
    expect(backgroundShareOf(m, 3)).toBeCloseTo(9.9 / 20.5);
    expect(m.backgroundGpus).toBeCloseTo((3 * 9.9) / 20.5);
    expect(m.idleShare).toBeCloseTo(3 / 8);
  });

  it('the gate admits background work in a gap only part of the time when a whole piece would break the bound', () => {
    const m = multiplex(p, 4, { slowdownBound: 1.01, pieceMs: 0.5, switchMs: 0.1 });
    expect(m.sharedMs).toBeCloseTo(20.2);
    expect(m.slowdown).toBeCloseTo(1.01);
    expect(backgroundShareOf(m, 1)).toBeCloseTo((0.4 * 9.9) / 20.2);
  });

  it('a bound of 1 admits nothing; GPUs the plan never uses run background work all the time', () => {
    expect(multiplex(p, 4, { slowdownBound: 1, pieceMs: 0.5, switchMs: 0.1 }).backgroundGpus).toBe(0);
    const m = multiplex(p, 8, { slowdownBound: 1, pieceMs: 0.5, switchMs: 0.1 });
    expect(backgroundShareOf(m, 4)).toBe(1);
    expect(backgroundShareOf(m, 7)).toBe(1);
    expect(m.backgroundGpus).toBe(4);
  });

  it('keeps the gaps worth the most background work first', () => {
    // Rank 1 idles 10 ms (b) and 1 ms (d); ranks 2-3 idle 13 ms (b, c, d) between two runs of a.
    const q = plan([choice('a', 4, 10), choice('b', 1, 10), choice('c', 2, 2), choice('d', 1, 1)]);
    const m = multiplex(q, 4, { slowdownBound: 1 + 0.5 / 23, pieceMs: 0.5, switchMs: 0 });
    // One piece of budget: the boundary before `a` (1 x 1 + 2 x 13 GPU-ms) beats the one before `c` (1 x 10).
    expect(m.sharedMs).toBeCloseTo(23.5);
    expect(backgroundShareOf(m, 2)).toBeCloseTo(13 / 23.5);
    expect(backgroundShareOf(m, 1)).toBeCloseTo(1 / 23.5);
  });

  it('a data-parallel plan leaves no idle time; a burst plan of VGG-16 on 64 GPUs leaves a third of it, used within the bound', () => {
    const model = loadBuiltIn('vgg16');
    const req = { gpus: 64, globalBatch: 1024, amplification: 2, network: DEFAULT_NETWORK };
    expect(multiplex(planDataParallel(model, req), 64).backgroundGpus).toBe(0);
    const m = multiplex(planBurst(model, req), 64);
    expect(m.idleShare).toBeGreaterThan(0.3);
    expect(m.slowdown).toBeLessThanOrEqual(1.1 + 1e-12);
    expect(m.backgroundGpus).toBeGreaterThan(0);
  });
});
