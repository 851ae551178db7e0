import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { BIN, cli } from './run-cli.js';
import { loadMachine, saveMachine } from '../src/gpu/simulated/state-file.js';

const run = promisify(execFile);


function freshDir(): string {
  return mkdtempSync(join(tmpdir(), 'migpool-status-'));
}

describe('migpool status --simulate', () => {
  it('works from the installed command on a fresh state directory', async () => {
    const dir = freshDir();
    const { stdout } = await run('node', [BIN, 'status', '--simulate', '2xA100-SXM4-40GB', '--state-dir', dir]);
    expect(stdout).toMatch(/^GPU 0: NVIDIA A100-SXM4-40GB \(GPU-[0-9a-f-]{36}\) {2}40960 MiB {2}MIG: disabled\nGPU 1: NVIDIA A100-SXM4-40GB/);
  });

  it('shows instances, their slices, MIG device UUIDs and processes, and keeps the box between commands', async () => {
    const dir = freshDir();
    const reset = await cli('sim', 'reset', '--simulate', '1xA100-SXM4-40GB', '--state-dir', dir);
    expect(reset.code).toBe(0);
    const path = join(dir, 'simulated-machine.json');
    expect(reset.out).toBe(`simulated machine 1xA100-SXM4-40GB: 1 GPU, MIG disabled (${path})\n`);
    const machine = loadMachine(path);
    if (!machine) throw new Error('no machine');
    machine.setMigMode(0, true);
    saveMachine(path, machine);
    expect((await cli('status', '--simulate', '1xA100-SXM4-40GB', '--state-dir', dir)).out).toContain('MIG: disabled (pending enabled: reset the GPU to apply)');
    machine.resetGpu(0);
    const big = machine.createGpuInstance(0, '3g.20gb', 4);
    const small = machine.createGpuInstance(0, '1g.5gb', 0);
    const ci = machine.createComputeInstance(0, big.id);
    machine.createComputeInstance(0, small.id);
    const pid = machine.attachProcess(0, { gpuInstanceId: big.id, computeInstanceId: ci.id, usedMemoryMiB: 2048, name: 'train.py' });
    saveMachine(path, machine);

    const text = (await cli('status', '--simulate', '1xA100-SXM4-40GB', '--state-dir', dir)).out;
    expect(text).toContain('MIG: enabled');
    expect(text).toMatch(/GI {2}2 3g\.20gb\s+\. \. \. \. # # #\s+\. \. \. \. # # # #\s+placement 4:4/);
    expect(text).toMatch(/GI {2}7 1g\.5gb\s+# \. \. \. \. \. \.\s+# \. \. \. \. \. \. \.\s+placement 0:1/);
    expect(text).toContain(`CI 0 3g.20gb  ${ci.uuid}  pid ${pid} train.py 2048 MiB`);

    const json = JSON.parse((await cli('status', '--state-dir', dir, '--simulate', '1xA100-SXM4-40GB', '--json')).out) as { gpus: unknown[] };
    expect(json.gpus[0]).toMatchObject({
      index: 0,
      name: 'NVIDIA A100-SXM4-40GB',
      migMode: { current: 'enabled', pending: 'enabled' },
      gpuInstances: [
        { id: 7, profile: '1g.5gb', profileId: 19, start: 0, size: 1, computeInstances: [{ id: 0, profile: '1g.5gb', profileId: 0 }] },
        { id: 2, profile: '3g.20gb', profileId: 9, start: 4, size: 4, computeInstances: [{ id: 0, profile: '3g.20gb', profileId: 2, uuid: ci.uuid }] },
      ],
      processes: [{ pid, gpuInstanceId: 2, computeInstanceId: 0, usedMemoryMiB: 2048 }],
    });
  });

  it('reads the same box through the fake nvidia-smi on PATH as through --simulate', async () => {
    const dir = freshDir();
    await cli('sim', 'reset', '--simulate', '1xA100-SXM4-40GB,1xA30', '--state-dir', dir);
    const machine = loadMachine(join(dir, 'simulated-machine.json'));
    if (!machine) throw new Error('no machine');
    machine.setMigMode(0, true);
    machine.resetGpu(0);
    const gi = machine.createGpuInstance(0, '4g.20gb', 0);
    const ci = machine.createComputeInstance(0, gi.id, '2c.4g.20gb');
    machine.attachProcess(0, { gpuInstanceId: gi.id, computeInstanceId: ci.id, usedMemoryMiB: 700 });
    saveMachine(join(dir, 'simulated-machine.json'), machine);
    const installed = await cli('sim', 'install-nvidia-smi', join(dir, 'bin'), '--state-dir', dir);
    expect(installed.out).toContain('MIGPOOL_FAKE_NVIDIA_SMI_STATE=');
    const simulated = await run(process.execPath, [BIN, 'status', '--json', '--simulate', '1xA100-SXM4-40GB,1xA30', '--state-dir', dir]);
    const real = await run(process.execPath, [BIN, 'status', '--json'], {
      env: { ...process.env, MIGPOOL_SIMULATE: '', PATH: `${join(dir, 'bin')}:${process.env['PATH'] ?? ''}`, MIGPOOL_FAKE_NVIDIA_SMI_STATE: join(dir, 'simulated-machine.json') },
    });
    expect(JSON.parse(real.stdout)).toEqual(JSON.parse(simulated.stdout));
    expect(real.stdout).toContain('"profile": "2c.4g.20gb"');
  });

  it('takes the spec from MIGPOOL_SIMULATE and the directory from MIGPOOL_STATE_DIR', async () => {
    const dir = freshDir();
    const { stdout } = await run('node', [BIN, 'status', '--json'], { env: { ...process.env, MIGPOOL_SIMULATE: '2xA30,1xH100-80GB', MIGPOOL_STATE_DIR: dir } });
    const json = JSON.parse(stdout) as { gpus: { name: string }[] };
    expect(json.gpus.map((g) => g.name)).toEqual(['NVIDIA A30', 'NVIDIA A30', 'NVIDIA H100 80GB HBM3']);
  });

  it.each([
    [['status', '--simulate', '2xV100'], /--simulate '2xV100': unknown GPU 'V100'/],
    [['status', '--simulate', '0xA30'], /count must be 1 or more/],
    [['sim', 'attach', '--gpu', 'x'], /--gpu must be a whole number/],
  ])('bad input %j is one line, exit 2', async (argv, message) => {
    const { code, err } = await cli(...argv, '--state-dir', freshDir());
    expect(code).toBe(2);
    expect(err).toMatch(message);
    expect(err.trim().split('\n')).toHaveLength(1);
  });

  it('refuses to mix up two machines, and a corrupt state file, with the fix', async () => {
    const dir = freshDir();
    await cli('status', '--simulate', '1xA30', '--state-dir', dir);
    const other = await cli('status', '--simulate', '1xH100-80GB', '--state-dir', dir);
    expect(other.code).toBe(2);
    expect(other.err).toMatch(/is 1xA30, not 1xH100-80GB: run 'migpool sim reset --simulate 1xH100-80GB'/);
    writeFileSync(join(dir, 'simulated-machine.json'), '{not json');
    const corrupt = await cli('status', '--simulate', '1xA30', '--state-dir', dir);
    expect(corrupt.code).toBe(2);
    expect(corrupt.err).toMatch(/is not JSON; delete it or run 'migpool sim reset'/);
  });

  it('without a GPU or --simulate, says nvidia-smi is missing and points to --simulate (exit 3)', async () => {
    const failure = (await run(process.execPath, [BIN, 'status'], { env: { ...process.env, PATH: '/nonexistent', MIGPOOL_SIMULATE: '' } }).catch((e: unknown) => e)) as {
      code: number;
      stderr: string;
    };
    expect(failure.code).toBe(3);
    expect(failure.stderr.trim()).toBe(
      'migpool: list GPUs: nvidia-smi not found: install the NVIDIA driver, or run migpool with --simulate SPEC (e.g. --simulate 2xA100-SXM4-40GB)',
    );
  });
});
