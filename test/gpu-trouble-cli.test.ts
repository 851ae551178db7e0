import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { loadMachine, saveMachine } from '../src/gpu/simulated/state-file.js';
import { cli } from './run-cli.js';
import { runMigpool } from './serve-harness.js';

/**
 * The device commands on "real" GPUs (no --simulate: the fake nvidia-smi first on PATH, over a
 * simulated 2xA100) when one GPU fell off the bus or warns of a corrupted infoROM, as nvidia-smi
 * prints it (see src/gpu/nvidia-smi/notices.ts for the captures). Needs the build.
 */
const DEFAULTS = fileURLToPath(new URL('./fixtures/mig-parted/config-default.yaml', import.meta.url));
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function machineWithFakeSmi(change: (m: NonNullable<ReturnType<typeof loadMachine>>) => void) {
  const dir = mkdtempSync(join(tmpdir(), 'migpool-gpu-trouble-cli-'));
  dirs.push(dir);
  expect((await cli('sim', 'reset', '--simulate', '2xA100-SXM4-40GB', '--state-dir', dir)).code).toBe(0);
  expect((await cli('sim', 'install-nvidia-smi', join(dir, 'bin'), '--state-dir', dir)).code).toBe(0);
  const state = join(dir, 'simulated-machine.json');
  const machine = loadMachine(state)!;
  change(machine);
  saveMachine(state, machine);
  const env = { ...process.env, MIGPOOL_SIMULATE: '', PATH: `${join(dir, 'bin')}:${process.env['PATH'] ?? ''}`, MIGPOOL_FAKE_NVIDIA_SMI_STATE: state, MIGPOOL_STATE_DIR: join(dir, 'state') };
  return { dir, env, bus: machine.listGpus()[1]!.busId.replace(/^0000/, '') };
}

describe('device commands when a GPU fell off the bus', () => {
  it('status shows the GPU that answers, then names the lost one and what to do (exit 3)', { timeout: 60_000 }, async () => {
    const { env, bus } = await machineWithFakeSmi((m) => m.setLost(1, true));
    const r = await runMigpool(['status'], env);
    expect(r.code).toBe(3);
    expect(r.out).toMatch(/^GPU 0: NVIDIA A100-SXM4-40GB/m);
    expect(r.out).not.toMatch(/^GPU 1:/m);
    expect(r.err).toBe(`migpool: list GPUs: nvidia-smi cannot reach GPU 1 (${bus}): Unknown Error (fallen off the bus? look for Xid 79 in dmesg; reset it with nvidia-smi -r -i ${bus} or reboot the node, and reseat it if it comes back lost)\n`);
    const json = await runMigpool(['status', '--json'], env);
    expect(json.code).toBe(3);
    expect((JSON.parse(json.out) as { gpus: { index: number }[] }).gpus.map((g) => g.index)).toEqual([0]);
  });

  it('apply refuses in one line naming the GPU and the fix, and changes nothing (exit 3)', { timeout: 60_000 }, async () => {
    const { dir, env, bus } = await machineWithFakeSmi((m) => m.setLost(1, true));
    const r = await runMigpool(['apply', '-f', DEFAULTS, '-c', 'all-1g.5gb'], env);
    expect(r.code).toBe(3);
    expect(r.err.trim().split('\n')).toHaveLength(1);
    expect(r.err).toContain(`nvidia-smi cannot reach GPU 1 (${bus}): Unknown Error`);
    expect(r.err).toContain(`nvidia-smi -r -i ${bus}`);
    const after = await runMigpool(['status', '--json'], env);
    expect((JSON.parse(after.out) as { gpus: { migMode: { current: string } }[] }).gpus[0]?.migMode.current).toBe('disabled');
    // A checkpoint without the lost GPU would restore a machine without it: refused the same way.
    const file = join(dir, 'checkpoint.json');
    const c = await runMigpool(['checkpoint', '-f', file], env);
    expect(c.code).toBe(3);
    expect(c.err).toContain(`nvidia-smi cannot reach GPU 1 (${bus}): Unknown Error`);
    expect(existsSync(file)).toBe(false);
  });

  it('a corrupted infoROM (exit 14) does not stop status or apply', { timeout: 60_000 }, async () => {
    const { env } = await machineWithFakeSmi((m) => m.setInfoRomCorrupted(0, true));
    const s = await runMigpool(['status', '--json'], env);
    expect(s.code, s.err).toBe(0);
    expect((JSON.parse(s.out) as { gpus: unknown[] }).gpus).toHaveLength(2);
    const a = await runMigpool(['apply', '-f', DEFAULTS, '-c', 'all-1g.5gb'], env);
    expect(a.code, a.err).toBe(0);
    expect((await runMigpool(['assert', '-f', DEFAULTS, '-c', 'all-1g.5gb'], env)).code).toBe(0);
  });
});
