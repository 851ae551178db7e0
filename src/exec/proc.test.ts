import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { environHasAll, findProcessesByEnviron, isSameLiveProcess, parseProcStat, readCmdline, readProcStat, splitNulList } from './proc.js';

const tail = '0 -1 4194304 100 0 0 0 0 0 0 0 20 0 1 0 807547 3133440 379 18446744073709551615';

describe('parseProcStat', () => {
  it('reads state, process group, session and start ticks', () => {
    expect(parseProcStat(`11650 (cat) R 11643 11643 10897 ${tail}\n`)).toEqual({ pid: 11650, state: 'R', pgrp: 11643, session: 10897, startTicks: '807547' });
  });

  it('counts fields from the last parenthesis: command names may hold blanks and parentheses', () => {
    expect(parseProcStat(`42 (a) b (c) ) S 1 77 77 ${tail}`)).toEqual({ pid: 42, state: 'S', pgrp: 77, session: 77, startTicks: '807547' });
  });

  it('returns null for text that is not a stat line', () => {
    expect(parseProcStat('')).toBeNull();
    expect(parseProcStat('12 (x) S 1 2')).toBeNull();
  });
});

describe('readProcStat and isSameLiveProcess', () => {
  it('knows this process, and not a different start time or a pid that does not exist', () => {
    const own = readProcStat(process.pid);
    expect(own?.pid).toBe(process.pid);
    expect(isSameLiveProcess(process.pid, own?.startTicks ?? '')).toBe(true);
    expect(isSameLiveProcess(process.pid, '1')).toBe(false);
    expect(readProcStat(2 ** 22 + 17)).toBeNull();
    expect(readProcStat(-1)).toBeNull();
  });
});

describe('splitNulList and environHasAll', () => {
  it('splits NUL-terminated entries, with or without the last NUL', () => {
    expect(splitNulList('A=1\0B=2\0')).toEqual(['A=1', 'B=2']);
    expect(splitNulList('node\0-e\0')).toEqual(['node', '-e']);
    expect(splitNulList('A=1\0B=')).toEqual(['A=1', 'B=']);
    expect(splitNulList('')).toEqual([]);
  });

  it('matches whole entries only, all of them', () => {
    const env = ['MIGPOOL_JOB_ID=12', 'MIGPOOL_ATTEMPT=10', 'X_MIGPOOL_ATTEMPT=1', 'PATH=/bin'];
    expect(environHasAll(env, ['MIGPOOL_JOB_ID=12', 'MIGPOOL_ATTEMPT=10'])).toBe(true);
    expect(environHasAll(env, ['MIGPOOL_JOB_ID=12', 'MIGPOOL_ATTEMPT=1'])).toBe(false);
    expect(environHasAll(env, ['MIGPOOL_JOB_ID=1'])).toBe(false);
    expect(environHasAll(['MIGPOOL_JOB_ID=12 '], ['MIGPOOL_JOB_ID=12'])).toBe(false);
  });
});

describe('findProcessesByEnviron', () => {
  const stat = (pid: number, state: string) => `${pid} (x) ${state} 1 ${pid} ${pid} ${tail}\n`;
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'migpool-proc-'));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  function fakeProcess(pid: number, environ: string | null, state = 'S'): void {
    mkdirSync(join(root, String(pid)));
    writeFileSync(join(root, String(pid), 'stat'), stat(pid, state));
    if (environ !== null) writeFileSync(join(root, String(pid), 'environ'), environ);
  }

  it('finds the live processes that carry every entry, skipping unreadable ones, zombies and the excluded', () => {
    const marks = ['MIGPOOL_JOB_ID=7', 'MIGPOOL_ATTEMPT=2'];
    fakeProcess(10, 'PATH=/bin\0MIGPOOL_ATTEMPT=2\0MIGPOOL_JOB_ID=7\0');
    fakeProcess(11, 'MIGPOOL_JOB_ID=7\0MIGPOOL_ATTEMPT=20\0');
    fakeProcess(12, 'MIGPOOL_JOB_ID=7\0');
    fakeProcess(13, null);
    fakeProcess(14, 'MIGPOOL_JOB_ID=7\0MIGPOOL_ATTEMPT=2\0', 'Z');
    fakeProcess(15, 'MIGPOOL_JOB_ID=7\0MIGPOOL_ATTEMPT=2\0');
    mkdirSync(join(root, 'self'));
    expect(findProcessesByEnviron(marks, new Set([15]), root).sort((a, b) => a - b)).toEqual([10]);
    expect(findProcessesByEnviron([], new Set(), root)).toEqual([]);
    expect(findProcessesByEnviron(marks, new Set(), join(root, 'missing'))).toEqual([]);
  });

  it('finds a real process by the environment it was started with', async () => {
    const mark = `MIGPOOL_PROC_TEST=${process.pid}-${Date.now()}`;
    const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { env: { ...process.env, MIGPOOL_PROC_TEST: mark.split('=')[1] }, stdio: 'ignore' });
    try {
      await new Promise((r) => child.once('spawn', r));
      // Until the exec, /proc/PID/environ is the parent's: wait for the child's own.
      const deadline = Date.now() + 5000;
      let found: number[] = [];
      while (Date.now() < deadline && !(found = findProcessesByEnviron([mark])).includes(child.pid!)) await new Promise((r) => setTimeout(r, 20));
      expect(found).toEqual([child.pid]);
      expect(readCmdline(child.pid!)).toEqual([process.execPath, '-e', 'setInterval(() => {}, 1000)']);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
