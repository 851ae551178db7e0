/**
 * The memory estimator (src/perf/memory) against PyTorch itself: tools/memory-truth.py builds each
 * network with random weights and counts its parameters and the bytes autograd saves for backward
 * at two batch sizes. Needs Debian's python3-torch and python3-torchvision (.ci/run installs them).
 *
 * Every model runs on PyTorch's meta device (the same autograd graph and saved tensors, no
 * arithmetic), which keeps the test to seconds on two cores where the CPU forward passes of all
 * thirteen take minutes; three small ones also run on the CPU and must save exactly what they
 * save on the meta device. The CPU keeps a dropout's noise in fp32 (4 bytes an element), so the
 * dry run is asked for that here; on CUDA the mask is a bool.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { MEMORY_MODELS, traceModel } from '../src/perf/memory/estimate.js';

const run = promisify(execFile);
const PYTHON = process.env.MIGPOOL_PYTHON ?? (existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3');

/** Bytes saved for backward: within 2% of PyTorch (the dry run leaves out a few scalars autograd keeps). */
const SAVED_TOLERANCE = 0.02;

interface Truth {
  model: string;
  inputSize: number;
  batch: number;
  params: number;
  savedBytes: number;
}

/** Small enough to run on the CPU in seconds: a residual net, a net with dropout and ReLU6, a transformer. */
const CPU_MODELS = ['resnet18', 'mobilenet_v2', 'vit_b_16'];

async function truth(models: readonly string[], device: string): Promise<Truth[]> {
  const { stdout } = await run(PYTHON, ['tools/memory-truth.py', '--models', models.join(','), '--batches', '2,4', '--device', device], { maxBuffer: 1 << 20, timeout: 280_000 });
  return (JSON.parse(stdout) as { models: Truth[] }).models;
}

describe('memory estimator vs PyTorch', () => {
  let rows: Truth[] = [];
  let cpu: Truth[] = [];
  beforeAll(async () => {
    try {
      await run(PYTHON, ['-c', 'import torch, torchvision']);
    } catch {
      throw new Error(`${PYTHON} cannot import torch and torchvision: apt-get install -y python3-torch python3-torchvision (as .ci/run does)`);
    }
    [cpu, rows] = await Promise.all([truth(CPU_MODELS, 'cpu'), truth(Object.keys(MEMORY_MODELS), 'meta')]);
  }, 300_000);

  it('sees on the meta device what the CPU saves', () => {
    expect(cpu).toHaveLength(2 * CPU_MODELS.length);
    for (const c of cpu) expect(rows.find((r) => r.model === c.model && r.batch === c.batch)).toEqual(c);
  });

  it('covers every model the estimator knows, at two batch sizes', () => {
    expect(new Set(rows.map((r) => r.model))).toEqual(new Set(Object.keys(MEMORY_MODELS)));
    expect(rows).toHaveLength(2 * Object.keys(MEMORY_MODELS).length);
  });

  it('counts exactly the parameters PyTorch builds', () => {
    for (const r of rows) expect({ model: r.model, params: traceModel(r.model, r.batch, r.inputSize, { computeBytes: 4, dropoutMaskBytes: 4 }).params }).toEqual({ model: r.model, params: r.params });
  });

  it(`keeps the bytes PyTorch saves for backward, within ${SAVED_TOLERANCE * 100}%`, () => {
    for (const r of rows) {
      const est = traceModel(r.model, r.batch, r.inputSize, { computeBytes: 4, dropoutMaskBytes: 4 }).savedBytes;
      expect({ model: r.model, batch: r.batch, error: Math.abs(est / r.savedBytes - 1) < SAVED_TOLERANCE }).toEqual({ model: r.model, batch: r.batch, error: true });
    }
  });

  it('grows activations with the batch as PyTorch does (twice the batch, twice the bytes less the fixed part)', () => {
    for (const m of Object.keys(MEMORY_MODELS)) {
      const [a, b] = rows.filter((r) => r.model === m).sort((x, y) => x.batch - y.batch);
      if (!a || !b) throw new Error(`no rows for ${m}`);
      const opts = { computeBytes: 4, dropoutMaskBytes: 4 } as const;
      const slope = traceModel(m, b.batch, b.inputSize, opts).savedBytes - traceModel(m, a.batch, a.inputSize, opts).savedBytes;
      expect(Math.abs(slope / (b.savedBytes - a.savedBytes) - 1)).toBeLessThan(SAVED_TOLERANCE);
    }
  });
});
