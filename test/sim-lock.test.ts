/**
 * The simulated machine behind --simulate is one state file that several commands change at once
 * (`migpool sim attach` from many shells, an apply, the service). Each read-modify-write holds the
 * file's lock (src/gpu/simulated/state-lock.ts). Without it, 20 concurrent `sim attach` left 14 to
 * 16 processes, and a `sim attach` made while an apply ran was lost at the apply's next write.
 */
import { execFile, spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN, cli } from './run-cli.js';

const dir = mkdtempSync(join(tmpdir(), 'migpool-sim-lock-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Run {
  code: number;
  out: string;
  err: string;
}

/** Runs the installed CLI in a process of its own. */
function migpool(args: readonly string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 120_000 }, (error, out, err) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, out, err });
    });
  });
}

function machineIn(stateDir: string): { gpus: { processes: { pid: number }[] }[] } {
  return JSON.parse(readFileSync(join(stateDir, 'simulated-machine.json'), 'utf8')) as { gpus: { processes: { pid: number }[] }[] };
}
const pids = (stateDir: string): number[] => machineIn(stateDir).gpus.flatMap((g) => g.processes.map((p) => p.pid));

/** A pid that no process has: one of a process that has exited and been waited for. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
  await new Promise((resolve) => child.once('exit', resolve));
  return child.pid as number;
}

/** Whether this process is root and user nobody may read the checkout's bin/fake-nvidia-smi.js. */
function nobodyReadsCheckout(): boolean {
  if (process.getuid?.() !== 0) return false;
  const fake = fileURLToPath(new URL('../bin/fake-nvidia-smi.js', import.meta.url));
  return spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', 'test', '-r', fake]).status === 0;
}

describe('the simulated machine is changed by one command at a time', () => {
  it('16 concurrent `sim attach` in their own processes all land', { timeout: 180_000 }, async () => {
    const stateDir = mkdtempSync(join(dir, 'many-'));
    const box = ['--simulate', '2xA100-SXM4-40GB', '--state-dir', stateDir];
    expect((await cli('sim', 'reset', ...box)).code).toBe(0);
    const n = 16;
    const runs = await Promise.all(Array.from({ length: n }, (_, i) => migpool(['sim', 'attach', '--gpu', String(i % 2), '--memory', '10', '--state-dir', stateDir])));
    expect(runs.map((r) => r.code)).toEqual(Array(n).fill(0));
    const printed = runs.map((r) => Number(r.out.trim()));
    expect(new Set(printed).size).toBe(n);
    expect(pids(stateDir).sort((a, b) => a - b)).toEqual([...printed].sort((a, b) => a - b));
    expect(existsSync(join(stateDir, 'simulated-machine.json.lock'))).toBe(false);
  });

  it('keeps a `sim attach` made while an apply runs (the apply wrote back the machine it had read before)', { timeout: 120_000 }, async () => {
    const stateDir = mkdtempSync(join(dir, 'apply-'));
    const box = ['--simulate', '2xA100-SXM4-40GB', '--state-dir', stateDir];
    expect((await cli('sim', 'reset', ...box)).code).toBe(0);
    // A config for GPU 0 only; the apply-start hook attaches a process to GPU 1 after the apply has read the machine.
    const config = join(stateDir, 'gpu0.yaml');
    writeFileSync(config, 'version: v1\nmig-configs:\n  gpu0:\n  - devices: [0]\n    mig-enabled: true\n    mig-devices:\n      1g.5gb: 7\n');
    const hooks = join(stateDir, 'hooks.yaml');
    writeFileSync(
      hooks,
      `version: v1\nhooks:\n  apply-start:\n  - command: ${process.execPath}\n    args: [${JSON.stringify(BIN)}, "sim", "attach", "--gpu", "1", "--memory", "10", "--state-dir", ${JSON.stringify(stateDir)}]\n`,
    );
    const r = await cli('apply', '-f', config, '-c', 'gpu0', '-k', hooks, ...box);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(machineIn(stateDir).gpus[1]?.processes).toHaveLength(1);
    expect((await cli('assert', '-f', config, '-c', 'gpu0', ...box)).code).toBe(0);
  });

  it('takes over a lock left by a process that died', { timeout: 60_000 }, async () => {
    const stateDir = mkdtempSync(join(dir, 'stale-'));
    const box = ['--simulate', '1xA100-SXM4-40GB', '--state-dir', stateDir];
    expect((await cli('sim', 'reset', ...box)).code).toBe(0);
    const lock = join(stateDir, 'simulated-machine.json.lock');
    writeFileSync(lock, `${await deadPid()}\n`);
    const started = Date.now();
    const r = await migpool(['sim', 'attach', '--gpu', '0', '--state-dir', stateDir]);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(pids(stateDir)).toEqual([Number(r.out.trim())]);
    expect(existsSync(lock)).toBe(false);
  });

  // Needs root, to run the fake nvidia-smi as user nobody (setpriv, util-linux), and a checkout
  // that nobody may read (a clone in a private folder, such as mktemp -d makes, is not).
  it.skipIf(!nobodyReadsCheckout())("answers a job's fake nvidia-smi query from a state directory its user may only read", { timeout: 60_000 }, async () => {
    const stateDir = mkdtempSync(join(dir, 'read-only-'));
    expect((await cli('sim', 'reset', '--simulate', '1xA100-SXM4-40GB', '--state-dir', stateDir)).code).toBe(0);
    chmodSync(dir, 0o755);
    chmodSync(stateDir, 0o755);
    const fake = fileURLToPath(new URL('../bin/fake-nvidia-smi.js', import.meta.url));
    const asNobody = (args: string[]): Promise<Run> =>
      new Promise((resolve) => {
        execFile('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, fake, ...args], { encoding: 'utf8', env: { ...process.env, MIGPOOL_FAKE_NVIDIA_SMI_STATE: join(stateDir, 'simulated-machine.json') } }, (error, out, err) =>
          resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, out, err }),
        );
      });
    const query = await asNobody(['-L']);
    expect(query.err).toBe('');
    expect(query.out).toMatch(/^GPU 0: NVIDIA A100-SXM4-40GB \(UUID: GPU-/);
    // A change is refused as before: the user may not write the state file.
    const change = await asNobody(['-i', '0', '-mig', '1']);
    expect(change.code).toBe(255);
    expect(change.err).toMatch(/cannot write simulator state .*: EACCES/);
  });
});
