import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseWorkloadYaml } from '../src/perf/user-workload.js';
import { BIN, cli } from './run-cli.js';

interface BenchJson {
  gpu: string;
  workload: string;
  configs: { name: string; jobs: number; fits: boolean | 'unknown'; epochSeconds: number | null; samplesPerSecond: number | null; speedup: number | null }[];
}

const FAKE = 'node dist/src/bench/fake-workload.js';

/** Fake workload processes still running with `--time-scale marker` (not the migpool parent). */
function running(marker: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (argv.includes('dist/src/bench/fake-workload.js') && argv.includes(marker)) pids.push(Number(entry));
    } catch {
      // Gone meanwhile.
    }
  }
  return pids;
}

function speedups(json: BenchJson): Record<string, number | null> {
  return Object.fromEntries(json.configs.map((c) => [c.name, c.speedup]));
}

describe('migpool bench --simulate (the performance model)', () => {
  it.each(['A100-SXM4-40GB', 'A30', 'H100-80GB'])('prints the table for small, medium and large on %s', async (gpu) => {
    for (const workload of ['small', 'medium', 'large']) {
      const { code, out } = await cli('bench', '--simulate', '--gpu', gpu, '--workload', workload);
      expect(code).toBe(0);
      expect(out).toMatch(/CONFIG\s+JOBS\s+FITS\s+EPOCH s\/JOB\s+SAMPLES\/s\s+SPEEDUP/);
      expect(out).toMatch(gpu === 'A30' && workload === 'large' ? /^1xfull\s+1\s+no\s+-\s+-\s+-$/m : /^1xfull\s+1\s+yes\s+[\d.]+\s+\d+\s+1\.00x$/m);
    }
  });

  it('fits four BERT-base SQuAD fine-tunings on an A30 as 4x1g.6gb (NVIDIA ran four side by side)', async () => {
    const { code, out } = await cli('bench', '--simulate', '--gpu', 'A30', '--workload', 'bert-base-squad');
    expect(code).toBe(0);
    expect(out).toMatch(/^4x1g\.6gb\s+4\s+yes\s+[\d.]+\s+\d+\s+[\d.]+x$/m);
  });

  it('takes a workload YAML file wherever it takes a name, and says when its memory is unknown', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'migpool-bench-'));
    const file = join(dir, 'mine.yaml');
    writeFileSync(file, 'name: mine\nbatchSize: 64\ndatasetSize: 1000\npoints:\n  - { gpu: A100-SXM4-40GB, profile: 1g.5gb, iterationMs: 40 }\n  - { gpu: A100-SXM4-40GB, profile: 7g.40gb, iterationMs: 12 }\n');
    const r = await cli('bench', '--simulate', '--gpu', 'A100-SXM4-40GB', '--workload', file, '--configs', '1x1g.5gb', '--json');
    expect(r.code).toBe(0);
    const json = JSON.parse(r.out) as BenchJson;
    expect(json.workload).toBe('mine');
    expect(json.configs.map((c) => c.fits)).toEqual(['unknown']);
    const bad = await cli('bench', '--simulate', '--gpu', 'A100-SXM4-40GB', '--workload', join(dir, 'missing.yaml'));
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/cannot read workload file '.*missing\.yaml': ENOENT/);
  });

  it("reproduces the study's finding on the A100-40GB: packing small jobs pays about 3x, medium and large gain little", async () => {
    const get = async (w: string) => speedups(JSON.parse((await cli('bench', '--simulate', '--gpu', 'A100-SXM4-40GB', '--workload', w, '--json')).out) as BenchJson);
    const small = await get('small');
    const medium = await get('medium');
    const large = await get('large');
    expect(small['7x1g.5gb']).toBeGreaterThan(2.5);
    expect(small['7x1g.5gb']).toBeLessThan(4);
    // ResNet-50 on 64x64 images (stride-1 stem) at batch 128 needs about 15.5 GiB, ResNet-152 at 224x224 about 24.5 GiB (fp32):
    // neither fits a 1g.5gb slice; the packings that fit gain little.
    expect(medium['7x1g.5gb']).toBeNull();
    expect(medium['2x3g.20gb']).toBeLessThan(1.3);
    expect(large['7x1g.5gb']).toBeNull();
    expect(large['2x3g.20gb']).toBeNull();
  });

  it('reports configs that do not fit with fits: false and no speed', async () => {
    const json = JSON.parse((await cli('bench', '--simulate', '--gpu', 'A100-SXM4-40GB', '--workload', 'bert-base-squad', '--configs', '1xfull,7x1g.5gb', '--json')).out) as BenchJson;
    expect(json.configs[1]).toEqual({ name: '7x1g.5gb', jobs: 7, fits: false, epochSeconds: null, samplesPerSecond: null, speedup: null });
  });

  it.each([
    [['bench', '--simulate', '--workload', 'small'], /--simulate needs --gpu MODEL/],
    [['bench', '--simulate', '--gpu', 'A100-SXM4-40GB', '--workload', 'small', '--configs', '8x1g.5gb'], /8 × 1g.5gb do not fit one A100-40GB: A100-40GB allows at most 7 × 1g.5gb/],
    [['bench', '--simulate', '--gpu', 'A100-SXM4-40GB', '--workload', 'small', '--configs', '2x4g.20gb'], /2 × 4g.20gb do not fit one A100-40GB/],
    [['bench', '--simulate', '--gpu', 'A100-SXM4-40GB', '--workload', 'nope'], /nope/],
    [['bench', '--command', 'python "unbalanced'], /unbalanced " quote/],
  ])('bad input %j exits 2 with one line', async (argv, message) => {
    const { code, err } = await cli(...argv);
    expect(code).toBe(2);
    expect(err).toMatch(message);
    expect(err.trim().split('\n')).toHaveLength(1);
  });
});

describe('migpool bench for real, on simulated GPUs', () => {
  it('lays out each config, runs one process per instance, measures what the model predicts, and cleans up', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'migpool-bench-'));
    const marker = `0.0201${process.pid}`;
    const configs = '1xfull,7x1g.5gb,3x2g.10gb,2xtimeslice';
    const real = await cli(
      'bench', '--simulate-gpus', '1xA100-SXM4-40GB', '--state-dir', dir, '--command', `${FAKE} --workload small --time-scale ${marker}`,
      '--configs', configs, '--warmup', '0.4', '--duration', '1.2', '--json', '--plot', join(dir, 'b.svg'), '--out', join(dir, 'w.yaml'), '--batch-size', '128',
    );
    expect(real.err).toBe('');
    expect(real.code).toBe(0);
    const measured = speedups(JSON.parse(real.out) as BenchJson);
    const predicted = speedups(JSON.parse((await cli('bench', '--simulate', '--gpu', 'A100-SXM4-40GB', '--workload', 'small', '--configs', configs, '--json')).out) as BenchJson);
    for (const name of configs.split(',')) expect(measured[name], name).toBeCloseTo(predicted[name] ?? 0, 0);
    // Seven processes share two cores here: allow for scheduling noise, not for a wrong speed-up.
    expect(Math.abs((measured['7x1g.5gb'] ?? 0) / (predicted['7x1g.5gb'] ?? 1) - 1)).toBeLessThan(0.25);
    expect(running(marker)).toEqual([]);
    const status = JSON.parse((await cli('status', '--simulate', '1xA100-SXM4-40GB', '--state-dir', dir, '--json')).out) as { gpus: { processes: unknown[] }[] };
    expect(status.gpus[0]?.processes).toEqual([]);
    expect(readFileSync(join(dir, 'b.svg'), 'utf8')).toContain('7x1g.5gb');
    const workload = parseWorkloadYaml(readFileSync(join(dir, 'w.yaml'), 'utf8'), 'w.yaml');
    expect(workload.batchSize).toBe(128);
    // The simulated driver reports 500 MiB for each job's process: the peak is recorded, rounded up.
    expect(workload.memoryGiB).toBe(0.49);
    expect(workload.sharing).toEqual([{ gpu: 'A100-40GB', kind: 'timeslice', jobs: 2, iterationMs: expect.any(Number) as number }]);
  }, 60_000);

  it('a job that dies (out of memory) fails the bench with its reason, and no child is left', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'migpool-bench-'));
    const marker = `0.0202${process.pid}`;
    const r = await cli('bench', '--simulate-gpus', '1xA100-SXM4-40GB', '--state-dir', dir, '--command', `${FAKE} --workload bert-base-squad --time-scale ${marker}`, '--configs', '7x1g.5gb', '--warmup', '0.3', '--duration', '1');
    expect(r.code).toBe(3);
    expect(r.err).toMatch(/7x1g\.5gb: a job ended early \(exit status 1\): RuntimeError: CUDA out of memory/);
    expect(running(marker)).toEqual([]);
  }, 30_000);

  it('Ctrl-C stops every child', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'migpool-bench-'));
    const marker = `0.0203${process.pid}`;
    const child = spawn(process.execPath, [BIN, 'bench', '--simulate-gpus', '1xA100-SXM4-40GB', '--state-dir', dir, '--command', `${FAKE} --workload small --time-scale ${marker}`, '--configs', '7x1g.5gb', '--warmup', '1', '--duration', '30'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    // 1xfull runs first (the baseline every bench measures): one job.
    for (let i = 0; i < 100 && running(marker).length < 1; i++) await new Promise((r) => setTimeout(r, 100));
    try {
      expect(running(marker)).toHaveLength(1);
    } finally {
      child.kill('SIGINT');
    }
    const code = await exited;
    expect(code).toBe(3);
    expect(err).toMatch(/bench interrupted during 1xfull; every job was stopped/);
    expect(running(marker)).toEqual([]);
  }, 30_000);
});

describe('migpool workloads', () => {
  it('lists the built-in workloads and, with --fit, each curve\'s error on its points and on points left out', async () => {
    const list = await cli('workloads');
    expect(list.out).toMatch(/^resnet26-cifar10\s+small\s+128/m);
    expect(list.out).toMatch(/^resnet152-imagenet\s+large/m);
    const fit = JSON.parse((await cli('workloads', '--fit', '--json')).out) as { models: { id: string; calibration: { mean: number }; leaveOut: { mean: number } }[] };
    const resnet = fit.models.find((m) => m.id === 'miso/resnet');
    expect(resnet?.calibration.mean).toBeLessThan(0.05);
    expect(resnet?.leaveOut.mean).toBeLessThan(0.08);
  });
});
