import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MigpoolError } from '../errors.js';
import type { CommandRunner } from '../slurm/client.js';
import type { LaunchSpec } from './executor.js';
import { autodetectGresType, cpuAndMemory, createSlurmExecutor, exportedNames, sbatchArguments } from './slurm-executor.js';

const spec = (over: Partial<LaunchSpec> = {}): LaunchSpec => ({
  jobId: 'j1',
  attempt: 1,
  command: ['python', 'train.py'],
  workdir: '/w',
  env: {},
  devices: [],
  maxRuntimeSeconds: null,
  dir: '/w/a1',
  gres: { type: '3g.40gb', count: 1 },
  ...over,
});

describe('slurm executor: what sbatch is asked for', () => {
  it('names MIG types as AutoDetect=nvml does on the pool GPUs, per Slurm version', () => {
    expect(autodetectGresType('3g.40gb', ['NVIDIA A100-SXM4-80GB'], 'attributes', 'Slurm 22.05.8')).toBe('nvidia_a100_3g.39gb');
    expect(autodetectGresType('3g.40gb', ['NVIDIA A100-SXM4-80GB'], 'device-name', 'Slurm 24.11.1')).toBe('nvidia_a100_3g.40gb');
    expect(autodetectGresType('1g.18gb', ['NVIDIA H200', 'NVIDIA H200'], 'attributes', 'Slurm 22.05.8')).toBe('nvidia_h200_1g.16gb');
    expect(autodetectGresType('1g.10gb+me', ['NVIDIA H100 80GB HBM3'], 'device-name', 'Slurm 24.11.1')).toBe('nvidia_h100_80gb_hbm3_1g.10gb+me');
  });

  it('refuses what Slurm cannot be asked for: +me under the old naming, a profile no GPU has, one named two ways', () => {
    expect(() => autodetectGresType('1g.10gb+me', ['NVIDIA A100-SXM4-80GB'], 'attributes', 'Slurm 22.05.8')).toThrow(/Slurm 22\.05\.8 names 1g\.10gb\+me and 1g\.10gb alike \(nvidia_a100_1g\.10gb\)/);
    expect(() => autodetectGresType('1c.3g.40gb', ['NVIDIA A100-SXM4-80GB'], 'attributes', 'Slurm 22.05.8')).toThrow(MigpoolError);
    expect(() => autodetectGresType('1g.5gb', ['NVIDIA A100-SXM4-80GB'], 'attributes', 'x')).toThrow(/no GPU of the pool \(NVIDIA A100-SXM4-80GB\) has MIG profile 1g\.5gb/);
    expect(() => autodetectGresType('3g.40gb', ['NVIDIA A100-SXM4-80GB', 'NVIDIA H100 80GB HBM3'], 'attributes', 'x')).toThrow(/nvidia_a100_3g\.39gb or nvidia_h100_80gb_hbm3_3g\.40gb/);
  });

  it('asks for CPUs and memory by compute slices, or as the job says', () => {
    expect(cpuAndMemory(spec())).toEqual({ cpus: 6, mem: '24576M' });
    expect(cpuAndMemory(spec({ gres: { type: null, count: 2 } }))).toEqual({ cpus: 28, mem: '114688M' });
    expect(cpuAndMemory(spec({ gres: { type: '1c.3g.40gb', count: 1 } }), 1, 0)).toEqual({ cpus: 3, mem: null });
    expect(cpuAndMemory(spec({ env: { MIGPOOL_SLURM_CPUS: '12', MIGPOOL_SLURM_MEM: '32g' } }))).toEqual({ cpus: 12, mem: '32G' });
    expect(cpuAndMemory(spec({ env: { MIGPOOL_SLURM_MEM: '0' } })).mem).toBeNull();
    expect(() => cpuAndMemory(spec({ env: { MIGPOOL_SLURM_CPUS: 'many' } }))).toThrow(/MIGPOOL_SLURM_CPUS 'many'/);
  });

  it("exports the job's env, its ids and the service's CUDA_* only, never the service's whole environment", () => {
    const service = { HOME: '/root', AWS_SECRET_ACCESS_KEY: 'x', CUDA_HOME: '/usr/local/cuda', CUDA_VISIBLE_DEVICES: '0', MIGPOOL_TOKEN: 't' };
    expect(exportedNames(spec({ env: { WANDB_PROJECT: 'p' } }), service)).toEqual(['CUDA_HOME', 'MIGPOOL_ATTEMPT', 'MIGPOOL_JOB_ID', 'WANDB_PROJECT']);
    const args = sbatchArguments(spec({ maxRuntimeSeconds: 90 }), 'nvidia_a100_3g.39gb', { serviceEnv: {}, sbatchArgs: ['--partition', 'gpu'] });
    expect(args).toEqual([
      '--job-name=migpool-j1',
      '--chdir=/w',
      '--output=/w/a1/stdout.log',
      '--error=/w/a1/stderr.log',
      '--export=MIGPOOL_ATTEMPT,MIGPOOL_JOB_ID',
      '--open-mode=append',
      '--cpus-per-task=6',
      '--mem=24576M',
      '--time=2',
      '--gres=gpu:nvidia_a100_3g.39gb:1',
      '--partition',
      'gpu',
      '/w/a1/job.sh',
    ]);
  });
});

describe('slurm executor: launch', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'migpool-sbatch-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  function fake(version: string) {
    const calls: { line: string; env?: NodeJS.ProcessEnv }[] = [];
    const run: CommandRunner = async (file, args, opts = {}) => {
      calls.push({ line: [file, ...args].join(' '), env: opts.env });
      if (file === 'sbatch' && args[0] === '--version') return { code: 0, stdout: `${version}\n`, stderr: '' };
      if (file === 'sbatch') return { code: 0, stdout: '42\n', stderr: '' };
      return { code: 0, stdout: '{"jobs": []}', stderr: '' };
    };
    return { run, calls };
  }

  it('asks sbatch for its version once, and submits the type that version names', async () => {
    const f = fake('slurm 22.05.8');
    const ex = createSlurmExecutor({ run: f.run, gpuProducts: async () => ['NVIDIA A100-SXM4-80GB'] });
    const base = spec({ workdir: dir, env: { GREETING: 'hi, there' } });
    await ex.launch({ ...base, dir: join(dir, 'a') });
    await ex.launch({ ...base, jobId: 'j2', dir: join(dir, 'b'), gres: { type: '1g.10gb', count: 1 } });
    await ex.close();
    expect(f.calls.filter((c) => c.line === 'sbatch --version')).toHaveLength(1);
    const subs = f.calls.filter((c) => c.line.startsWith('sbatch --parsable'));
    expect(subs[0]!.line).toContain('--gres=gpu:nvidia_a100_3g.39gb:1');
    expect(subs[1]!.line).toContain('--gres=gpu:nvidia_a100_1g.10gb:1');
    expect(subs[0]!.line).toContain('--export=GREETING,MIGPOOL_ATTEMPT,MIGPOOL_JOB_ID');
    // Values travel in sbatch's environment (a comma in a value cannot break --export).
    expect(subs[0]!.env).toMatchObject({ GREETING: 'hi, there', MIGPOOL_JOB_ID: 'j1', MIGPOOL_ATTEMPT: '1' });
  });

  it('refuses +me under a template and env names sbatch cannot export', async () => {
    const f = fake('slurm 24.11.1');
    const ex = createSlurmExecutor({ run: f.run, gresType: (p) => `a100_${p}` });
    await expect(ex.launch(spec({ workdir: dir, dir: join(dir, 'a'), gres: { type: '1g.10gb+me', count: 1 } }))).rejects.toThrow(/template cannot tell from 1g\.10gb/);
    await expect(ex.launch(spec({ workdir: dir, dir: join(dir, 'b'), env: { 'A-B': '1' } }))).rejects.toThrow(/env name "A-B"/);
    await ex.launch(spec({ workdir: dir, dir: join(dir, 'c') }));
    expect(f.calls.at(-1)!.line).toContain('--gres=gpu:a100_3g.40gb:1');
    await ex.close();
  });
});
