import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { cli } from './run-cli.js';

const DEFAULTS = fileURLToPath(new URL('./fixtures/mig-parted/config-default.yaml', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'migpool-sim-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const box = ['--simulate', '2xA100-SXM4-40GB', '--state-dir', dir];
const processes = (): unknown[] => (JSON.parse(readFileSync(join(dir, 'simulated-machine.json'), 'utf8')) as { gpus: { processes: unknown[] }[] }).gpus.flatMap((g) => g.processes);

describe('migpool sim attach', () => {
  it.each([
    // Found against a live service's machine: each was accepted (or exited 3 as a device failure).
    [['--gpu', '99'], /^migpool: --gpu 99: the simulated machine has no GPU 99; give one of 0 to 1$/],
    [['--gpu', '0', '--gi', '5'], /^migpool: --gi\/--ci: GPU 0 is not in MIG mode, so it has no MIG devices: leave them out to attach to the whole GPU$/],
    [['--gpu', '0', '--memory', '999999999'], /^migpool: --memory 999999999: GPU 0 holds 40960 MiB; give at most that$/],
  ])('refuses %j as bad input (exit 2, one line) and attaches nothing', async (args, message) => {
    expect((await cli('sim', 'reset', ...box)).code).toBe(0);
    const r = await cli('sim', 'attach', ...args, ...box);
    expect(r.code).toBe(2);
    expect(r.err.trim()).toMatch(message);
    expect(processes()).toEqual([]);
  });

  it('asks for the MIG device on a GPU in MIG mode, and attaches to a whole GPU or a device that exists', async () => {
    expect((await cli('sim', 'reset', ...box)).code).toBe(0);
    expect((await cli('sim', 'attach', '--gpu', '1', ...box)).out.trim()).toMatch(/^\d+$/);
    expect(processes()).toHaveLength(1);
    expect((await cli('sim', 'reset', ...box)).code).toBe(0);
    expect((await cli('apply', '-f', DEFAULTS, '-c', 'all-3g.20gb', ...box)).code).toBe(0);
    const r = await cli('sim', 'attach', '--gpu', '0', ...box);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/--gi and --ci: GPU 0 is in MIG mode/);
    const gi = (JSON.parse(readFileSync(join(dir, 'simulated-machine.json'), 'utf8')) as { gpus: { gpuInstances: { id: number; computeInstances: { id: number }[] }[] }[] }).gpus[0]!.gpuInstances[0]!;
    // A MIG device that does not exist was a device failure (exit 3: 'no MIG device GI 5 CI 0 to run on').
    const missing = await cli('sim', 'attach', '--gpu', '0', '--gi', '5', '--ci', '0', ...box);
    expect(missing.code).toBe(2);
    expect(missing.err).toBe('migpool: --gi 5 --ci 0: GPU 0 has no such MIG device; give one of --gi 1 --ci 0, --gi 2 --ci 0\n');
    expect(processes()).toEqual([]);
    expect((await cli('sim', 'attach', '--gpu', '0', '--gi', String(gi.id), '--ci', String(gi.computeInstances[0]!.id), ...box)).code).toBe(0);
    expect(processes()).toHaveLength(1);
  });
});
