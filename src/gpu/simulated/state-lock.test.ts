import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MigpoolError } from '../../errors.js';
import { FileSimulatedGpuPort } from './file-port.js';
import { SimulatedMachine } from './machine.js';
import { parseSimulateSpec } from './spec.js';
import { loadMachine, saveMachine } from './state-file.js';
import { stateLockPath, withStateLock } from './state-lock.js';

const dirs: string[] = [];
const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function statePath(): string {
  const dir = mkdtempSync(join(tmpdir(), 'migpool-state-lock-'));
  dirs.push(dir);
  return join(dir, 'simulated-machine.json');
}

/** The pid of a process that has ended (spawned, run to its end and waited for). */
function deadPid(): number {
  return spawnSync(process.execPath, ['-e', '']).pid as number;
}

function failure(f: () => unknown): MigpoolError {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(MigpoolError);
    return e as MigpoolError;
  }
  throw new Error('expected a failure');
}

describe('withStateLock', () => {
  it('holds STATE.lock with this pid while the body runs, once when nested, and drops it after, also when the body throws', () => {
    const path = statePath();
    const lock = stateLockPath(path);
    expect(lock).toBe(`${path}.lock`);
    const seen = withStateLock(path, () => {
      const outer = readFileSync(lock, 'utf8');
      const inner = withStateLock(path, () => readFileSync(lock, 'utf8'));
      expect(existsSync(lock)).toBe(true);
      return [outer, inner];
    });
    expect(seen).toEqual([`${process.pid}\n`, `${process.pid}\n`]);
    expect(existsSync(lock)).toBe(false);
    expect(() => withStateLock(path, () => { throw new Error('boom'); })).toThrow('boom');
    expect(existsSync(lock)).toBe(false);
  });

  it('takes over a lock whose process is dead, and an empty one older than 2 s', () => {
    const path = statePath();
    const lock = stateLockPath(path);
    writeFileSync(lock, `${deadPid()}\n`);
    expect(withStateLock(path, () => readFileSync(lock, 'utf8'), { waitMs: 1000 })).toBe(`${process.pid}\n`);
    writeFileSync(lock, '');
    const old = new Date(Date.now() - 10_000);
    utimesSync(lock, old, old);
    expect(withStateLock(path, () => 'taken', { waitMs: 1000 })).toBe('taken');
    expect(existsSync(lock)).toBe(false);
  });

  it('waits for a live holder, then fails with one line naming the lock file and how to clear it', () => {
    const path = statePath();
    const lock = stateLockPath(path);
    const holder = spawn('sleep', ['30'], { stdio: 'ignore' });
    children.push(holder);
    writeFileSync(lock, `${holder.pid}\n`);
    const started = Date.now();
    let ran = false;
    const err = failure(() => withStateLock(path, () => (ran = true), { waitMs: 300 }));
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
    expect(ran).toBe(false);
    expect(err.code).toBe('RUNTIME');
    expect(err.message).toBe(
      `the simulated machine ${path} is locked by process ${holder.pid} (lock file ${lock}) for over 0.3 s; wait for that command to end, or if it is stuck stop it, or if it is not migpool delete ${lock}`,
    );
    expect(readFileSync(lock, 'utf8')).toBe(`${holder.pid}\n`);
  });

  it('gets the lock as soon as a live holder lets go', async () => {
    const path = statePath();
    const lock = stateLockPath(path);
    // Another process holds the lock for 300 ms, then removes it.
    const holder = spawn(process.execPath, ['-e', `const fs = require('fs'); fs.writeFileSync(${JSON.stringify(lock)}, process.pid + '\\n', { flag: 'wx' }); setTimeout(() => fs.unlinkSync(${JSON.stringify(lock)}), 300)`], { stdio: 'ignore' });
    children.push(holder);
    for (let i = 0; i < 100 && !existsSync(lock); i++) await new Promise((r) => setTimeout(r, 20));
    expect(existsSync(lock)).toBe(true);
    const started = Date.now();
    expect(withStateLock(path, () => readFileSync(lock, 'utf8'), { waitMs: 5000 })).toBe(`${process.pid}\n`);
    expect(Date.now() - started).toBeLessThan(4000);
  });

  it('names a state directory it cannot create the lock in as bad input', () => {
    const file = statePath();
    writeFileSync(file, '');
    const err = failure(() => withStateLock(join(file, 'state.json'), () => 1, { waitMs: 100 }));
    expect(err.code).toBe('BAD_INPUT');
    expect(err.message).toBe(`cannot create the lock ${file}/state.json.lock of the simulated machine: ENOTDIR; pass a writable --state-dir`);
  });
});

describe('FileSimulatedGpuPort changes under the lock', () => {
  it('changes the state file as it is now, not the copy it read earlier', async () => {
    const path = statePath();
    saveMachine(path, SimulatedMachine.create(parseSimulateSpec('2xA100-SXM4-40GB'), 1, '2xA100-SXM4-40GB'));
    const port = new FileSimulatedGpuPort(path, loadMachine(path)!);
    // Another process attaches within the same instant (the file's stamp may not change).
    const other = loadMachine(path)!;
    const pid = other.attachProcess(1, { usedMemoryMiB: 10, name: 'python' });
    saveMachine(path, other);
    await port.setMigMode(0, true);
    const pidOfUpdate = port.update((m) => m.attachProcess(1, { usedMemoryMiB: 10, name: 'python' }));
    const after = loadMachine(path)!;
    expect(after.listProcesses().map((p) => p.pid).sort()).toEqual([pid, pidOfUpdate].sort());
    expect(after.listGpus()[0]?.migMode?.pending).toBe('enabled');
    expect(existsSync(stateLockPath(path))).toBe(false);
  });
});
