import { execFile } from 'node:child_process';
import { copyFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { BIN, cli } from './run-cli.js';

const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'migpool-burst-'));

interface PlanLayerJson {
  index: number;
  name: string;
  kind: string | null;
  inputs: number[];
  gpus: number;
  ranks: number[];
  samples: [number, number][];
  ms: number;
  computeMs: number;
  syncMs: number;
  transferMs: number;
  gradientBytes: number;
}

interface PlanJson {
  format: number;
  model: string;
  gpus: number;
  globalBatch: number;
  costModel: string;
  splits: string;
  dataParallel: { iterationMs: number; gpuMs: number };
  burst: { iterationMs: number; gpuMs: number; layers: PlanLayerJson[] };
}

async function planJson(...argv: string[]): Promise<PlanJson> {
  const { code, out, err } = await cli('burst-plan', ...argv, '--json');
  expect(err).toBe('');
  expect(code).toBe(0);
  return JSON.parse(out) as PlanJson;
}

async function fails(...argv: string[]): Promise<string> {
  const { code, out, err } = await cli(...argv);
  expect(code).toBe(2);
  expect(out).toBe('');
  expect(err.trim().split('\n')).toHaveLength(1);
  return err;
}

describe('migpool burst-plan', () => {
  it('plans a built-in model: the JSON of the issue, layers adding up to the iteration, data-parallel on every GPU', async () => {
    const json = await planJson('--model', 'vgg16', '--gpus', '64', '--global-batch', '1024');
    expect(Object.keys(json)).toEqual(['format', 'model', 'gpus', 'globalBatch', 'amplification', 'network', 'costModel', 'splits', 'dataParallel', 'burst']);
    expect(Object.keys(json.dataParallel)).toEqual(['iterationMs', 'gpuMs']);
    expect(Object.keys(json.burst)).toEqual(['iterationMs', 'gpuMs', 'layers']);
    expect(Object.keys(json.burst.layers[0]!)).toEqual(['index', 'name', 'kind', 'inputs', 'gpus', 'ranks', 'samples', 'ms', 'computeMs', 'syncMs', 'transferMs', 'gradientBytes']);
    expect(json).toMatchObject({ format: 1, model: 'vgg16', gpus: 64, globalBatch: 1024, amplification: 2, network: { bandwidthGBps: 266, latencyUs: 40 }, costModel: 'migpool', splits: 'migpool' });
    expect(json.burst.layers).toHaveLength(22);
    expect(json.burst.layers.reduce((s, l) => s + l.ms, 0)).toBeCloseTo(json.burst.iterationMs, 6);
    expect(json.dataParallel.gpuMs).toBeCloseTo(64 * json.dataParallel.iterationMs, 6);
    expect(json.burst.gpuMs).toBeLessThan(json.dataParallel.gpuMs);
    expect(json.burst.layers.every((l) => [1, 2, 4, 8, 16, 32, 64].includes(l.gpus))).toBe(true);
  });

  it('hands a runtime each layer: its ranks, the samples each rank takes (all of the batch, once), its inputs and its costs', async () => {
    const json = await planJson('--model', 'vgg16', '--gpus', '8', '--global-batch', '32', '--amplification', '1e9');
    const layers = json.burst.layers;
    expect(layers.map((l) => l.gpus)).toEqual([...new Array<number>(18).fill(8), 1, 1, 1, 1]);
    expect(layers[0]).toMatchObject({ index: 0, name: 'conv2d#1', kind: 'conv2d', inputs: [], ranks: [0, 1, 2, 3, 4, 5, 6, 7] });
    expect(layers[0]!.samples).toEqual([0, 4, 8, 12, 16, 20, 24, 28].map((s) => [s, s + 4]));
    // conv2d#1: 3 x 64 x 3 x 3 weights + 64 biases, fp32, all-reduced over its 8 ranks.
    expect(layers[0]!.gradientBytes).toBe((3 * 64 * 9 + 64) * 4);
    expect(layers[19]).toMatchObject({ index: 19, kind: 'linear', inputs: [18], ranks: [0], samples: [[0, 32]], gradientBytes: 0 });
    for (const l of layers) expect(l.ms).toBeCloseTo(l.computeMs + l.syncMs + l.transferMs, 9);
    expect(layers.reduce((s, l) => s + l.ms, 0)).toBeCloseTo(json.burst.iterationMs, 6);
    expect(json.burst.iterationMs).toBeCloseTo(12.219, 3);
  });

  it('plans under DeepPool\'s accounting and search space on request: the plan DeepPool\'s planner finds', async () => {
    const json = await planJson('--model', 'vgg16', '--gpus', '8', '--global-batch', '32', '--amplification', '1e9', '--cost-model', 'deeppool', '--splits', 'deeppool');
    expect(json).toMatchObject({ costModel: 'deeppool', splits: 'deeppool' });
    expect(json.burst.layers.map((l) => l.gpus)).toEqual([...new Array<number>(19).fill(8), 1, 1, 1]);
    expect(json.burst.iterationMs).toBeCloseTo(11.851, 3);
    const six = await planJson('--model', 'vgg16', '--gpus', '6', '--global-batch', '24', '--amplification', '1e9', '--splits', 'deeppool');
    expect(Math.max(...six.burst.layers.map((l) => l.gpus))).toBe(4);
  });

  it('reads a JSON profile with branches (hand-checked: every layer on 2 GPUs at limit 2)', async () => {
    const layer = (name: string, inputs: string[], ms: (b: number) => number, out = 1e6) => ({ name, inputs, paramBytes: 0, outputBytesPerSample: out, times: [1, 2, 4].map((b) => ({ batch: b, ms: ms(b) })) });
    const file = join(dir, 'diamond.json');
    writeFileSync(file, JSON.stringify({ name: 'diamond', layers: [layer('a', [], (b) => b), layer('b', ['a'], (b) => b), layer('c', ['a'], () => 10), layer('d', ['b', 'c'], (b) => b, 0)] }));
    const json = await planJson('--profile', file, '--gpus', '4', '--global-batch', '4', '--bandwidth', '1', '--latency', '0');
    expect(json.model).toBe('diamond');
    expect(json.burst.layers.map((l) => l.gpus)).toEqual([2, 2, 2, 2]);
    expect(json.burst.iterationMs).toBeCloseTo(16);
    const fastest = await planJson('--profile', file, '--gpus', '4', '--global-batch', '4', '--bandwidth', '1', '--latency', '0', '--amplification', '1e9');
    expect(fastest.burst.iterationMs).toBeCloseTo(13);
    const one = await planJson('--profile', file, '--gpus', '4', '--global-batch', '4', '--bandwidth', '1', '--latency', '0', '--amplification', '1');
    expect(one.burst.gpuMs).toBeCloseTo(22);
  });

  it('reads a DeepPool profile file as the built-in model reads it', async () => {
    const file = join(dir, 'vgg.txt');
    copyFileSync(fileURLToPath(new URL('../data/deeppool/vggLayerGpuProfileA100.txt', import.meta.url)), file);
    const a = await planJson('--profile', file, '--gpus', '8', '--global-batch', '256');
    const b = await planJson('--model', 'vgg', '--gpus', '8', '--global-batch', '256');
    expect(a.burst).toEqual(b.burst);
  });

  it('prints the plans, the layers and the multiplexing summary as text', async () => {
    const { code, out, err } = await cli('burst-plan', '--model', 'inception', '--gpus', '1024', '--global-batch', '1024');
    expect(code).toBe(0);
    expect(out).toContain('inception-v3 on 1024 GPUs');
    expect(out).toContain('edges from the Inception-v3 module layout');
    expect(out).toMatch(/data-parallel\s+\d/);
    expect(out).toContain('multiplexing: the burst plan leaves');
    expect(err).toContain('note: parameters fp32');
  });

  it('refuses bad input with one line and exit 2', async () => {
    expect(await fails('burst-plan', '--gpus', '8', '--global-batch', '64')).toContain('exactly one of --model');
    expect(await fails('burst-plan', '--model', 'gpt', '--gpus', '8', '--global-batch', '64')).toContain("unknown model 'gpt'");
    expect(await fails('burst-plan', '--model', 'vgg16', '--gpus', '64', '--global-batch', '8')).toContain('smaller than the 64 GPUs');
    expect(await fails('burst-plan', '--model', 'vgg16', '--gpus', '8', '--global-batch', '64', '--amplification', '0.5')).toContain('--amplification must be a number of at least 1');
    expect(await fails('burst-plan', '--profile', join(dir, 'none.json'), '--gpus', '8', '--global-batch', '64')).toContain("cannot read --profile");
    expect(await fails('burst-plan', '--model', 'vgg16', '--gpus', '8', '--global-batch', '64', '--cost-model', 'alpa')).toContain("--cost-model must be one of migpool, deeppool");
    expect(await fails('burst-plan', '--model', 'vgg16', '--gpus', '8', '--global-batch', '64', '--splits', 'odd')).toContain('--splits must be migpool');
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, '{"layers": [{"name": "a", "inputs": ["z"]}]}');
    expect(await fails('burst-plan', '--profile', bad, '--gpus', '8', '--global-batch', '64')).toContain('not a layer listed before it');
  });

  it('the installed command finds the built-in profiles from any directory', async () => {
    const { stdout } = await run('node', [BIN, 'burst-plan', '--model', 'wrn', '--gpus', '1024', '--global-batch', '1024', '--json'], { cwd: dir });
    expect((JSON.parse(stdout) as PlanJson).model).toBe('wrn101-2');
  });
});

describe('migpool burst-sim and simulate --trace deeppool', () => {
  it('compares dp and deeppool throughput for a model at two cluster sizes', async () => {
    const { code, out } = await cli('burst-sim', '--models', 'vgg16', '--gpus', '8,64', '--hours', '0.5', '--json');
    expect(code).toBe(0);
    const json = JSON.parse(out) as { rows: { model: string; gpus: number; throughput: { dp: { total: number; background: number }; deeppool: { total: number; background: number }; ratio: number } }[] };
    expect(json.rows.map((r) => [r.model, r.gpus])).toEqual([
      ['vgg16', 8],
      ['vgg16', 64],
    ]);
    for (const r of json.rows) {
      expect(r.throughput.dp.background).toBe(0);
      expect(r.throughput.ratio).toBeCloseTo(r.throughput.deeppool.total / r.throughput.dp.total, 9);
    }
    expect(json.rows[1]!.throughput.deeppool.background).toBeGreaterThan(0);
    expect(json.rows[1]!.throughput.ratio).toBeGreaterThan(1);
  });

  it('simulates the deeppool trace under dp and deeppool', async () => {
    const { code, out, err } = await cli('simulate', '--trace', 'deeppool', '--fleet', '16xA100-SXM4-40GB', '--policies', 'dp,deeppool', '--limit', '200');
    expect(code).toBe(0);
    expect(out).toMatch(/^dp\s+200\/200/m);
    expect(out).toMatch(/^deeppool\s+200\/200/m);
    expect(err).toContain("deeppool: ");
    expect(err).toContain("GPUs' worth of work per second");
  });
});
