/**
 * The lock of a simulated machine's state file: every read-modify-write of the file (`migpool sim
 * attach/detach/reset`, an apply or the service changing the machine, the fake nvidia-smi) holds it,
 * so that two processes never both read the old state and the second write loses the first's
 * change (20 concurrent `sim attach` left 14 to 16 processes before it).
 *
 * A lock file `STATE.lock` created with O_EXCL (`wx`) holding the holder's pid. Synchronous, as the
 * code that changes the machine is (the fake nvidia-smi and SimulatedGpuPort's writes), which is
 * why it is not the service's data-dir lock (cli/data-dir-lock.ts: an abstract socket, taken
 * asynchronously, without waiting). A lock whose holder is dead (kill -9, a crash) is taken over;
 * one whose holder lives is waited for, at most {@link STATE_LOCK_WAIT_MS}, then a one-line error
 * names the lock file and how to clear it.
 */
import { closeSync, mkdirSync, openSync, readFileSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { MigpoolError } from '../../errors.js';

/**
 * How long to wait for the lock (ms). A holder keeps it for one read, change and write of the file:
 * lock, load, attach a process, save and unlock took 0.78 ms on an 8-GPU machine (500 runs on the
 * 2-core development machine; node's start-up is outside the lock), so waiting means queueing
 * behind other commands, and 10 s is thousands of turns. A choice; a holder stopped in the middle
 * (SIGSTOP, a debugger) is the case it bounds. The service waits with its event loop blocked.
 */
export const STATE_LOCK_WAIT_MS = 10_000;

/**
 * A lock file with no pid in it is being written by its creator (the pid follows the create at
 * once) unless it is older than this (ms): then its creator died between the two and it is stale.
 */
const EMPTY_LOCK_STALE_MS = 2000;

/** Pauses between tries grow from 1 ms to at most this (ms). */
const MAX_PAUSE_MS = 25;

/** The lock file of a state file. */
export function stateLockPath(statePath: string): string {
  return `${resolve(statePath)}.lock`;
}

/** Locks this process holds now, with how deep (withStateLock inside withStateLock takes it once). */
const held = new Map<string, number>();

/** Sleeps the thread (the lock is taken by synchronous code). */
function pause(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** Whether process `pid` is running (a zombie is not). */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  try {
    // /proc/PID/stat: "pid (comm) state ..."; comm may hold ") ", so the state follows the last one.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    return true; // no /proc: kill(0) said it is there
  }
}

interface Holder {
  /** The holder's pid, or null when the file holds none (being written, or its writer died). */
  pid: number | null;
  text: string;
  ino: number;
  ageMs: number;
}

/** What a lock file says, or null when it is gone. */
function readHolder(path: string): Holder | null {
  try {
    const st = statSync(path);
    const text = readFileSync(path, 'utf8');
    const pid = /^\d+\n$/.test(text) ? Number(text.trim()) : null;
    return { pid, text, ino: st.ino, ageMs: Date.now() - st.mtimeMs };
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
}

function stale(h: Holder): boolean {
  return h.pid === null ? h.ageMs > EMPTY_LOCK_STALE_MS : h.pid !== process.pid && !running(h.pid);
}

/** Creates `path` holding our pid; false when it exists. */
function create(path: string): boolean {
  let fd: number;
  try {
    fd = openSync(path, 'wx', 0o644);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') {
      mkdirSync(dirname(path), { recursive: true });
      return create(path);
    }
    throw e;
  }
  try {
    writeSync(fd, `${process.pid}\n`);
  } catch (e) {
    closeSync(fd);
    unlinkSync(path);
    throw e;
  }
  closeSync(fd);
  return true;
}

function remove(path: string): void {
  try {
    unlinkSync(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
}

/**
 * Removes a stale lock, `seen`. Two processes that both found it stale must not both remove "the"
 * lock: the slower one would remove the one the faster one has taken since. So the removal is done
 * holding a second lock, `LOCK.takeover` (itself taken over when its holder died, which needs a
 * process to die in the few system calls between taking and dropping it), and only when the lock
 * is still the very file found stale (same inode, same text).
 */
function takeOver(lock: string, seen: Holder): void {
  const guard = `${lock}.takeover`;
  if (!create(guard)) {
    const other = readHolder(guard);
    if (other && stale(other)) remove(guard);
    return;
  }
  try {
    const now = readHolder(lock);
    if (now && now.ino === seen.ino && now.text === seen.text) remove(lock);
  } finally {
    remove(guard);
  }
}

/** Errors of creating a file in a directory this process may not write. */
const READ_ONLY = new Set(['EACCES', 'EPERM', 'EROFS']);

/** Takes the lock: true when taken, false when the directory is read-only and `readOnlyOk`. */
function acquire(lock: string, statePath: string, waitMs: number, readOnlyOk: boolean): boolean {
  const deadline = Date.now() + waitMs;
  let wait = 1;
  for (;;) {
    try {
      if (create(lock)) return true;
    } catch (e) {
      if (readOnlyOk && READ_ONLY.has((e as NodeJS.ErrnoException).code ?? '')) return false;
      throw new MigpoolError('BAD_INPUT', `cannot create the lock ${lock} of the simulated machine: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}; pass a writable --state-dir`, { lock });
    }
    const holder = readHolder(lock);
    if (holder === null) continue;
    if (stale(holder)) {
      takeOver(lock, holder);
      continue;
    }
    if (Date.now() >= deadline) {
      const who = holder.pid === null ? 'a process that has not written its pid' : `process ${holder.pid}`;
      throw new MigpoolError(
        'RUNTIME',
        `the simulated machine ${statePath} is locked by ${who} (lock file ${lock}) for over ${waitMs / 1000} s; wait for that command to end, or if it is stuck stop it, or if it is not migpool delete ${lock}`,
        { lock, holder: holder.pid },
      );
    }
    pause(Math.min(wait, Math.max(1, deadline - Date.now())));
    wait = Math.min(wait * 2, MAX_PAUSE_MS);
  }
}

/**
 * Runs `body` holding the lock of the state file `statePath`, and returns what it returns. `body`
 * must do its reading, changing and writing synchronously (the lock is dropped when it returns).
 * Taken again inside itself, it is held once. Waits at most `waitMs` for another holder, then
 * throws RUNTIME naming the lock file. With `readOnlyOk`, a directory this process may not write
 * in (a job's user reading the machine of a service's state directory) runs `body` without the
 * lock: it can read there, and a write would fail anyway.
 */
export function withStateLock<T>(statePath: string, body: () => T, options: { waitMs?: number; readOnlyOk?: boolean } = {}): T {
  const lock = stateLockPath(statePath);
  const depth = held.get(lock);
  if (depth !== undefined) {
    held.set(lock, depth + 1);
    try {
      return body();
    } finally {
      held.set(lock, depth);
    }
  }
  if (!acquire(lock, statePath, options.waitMs ?? STATE_LOCK_WAIT_MS, options.readOnlyOk === true)) return body();
  held.set(lock, 1);
  try {
    return body();
  } finally {
    held.delete(lock);
    remove(lock);
  }
}
