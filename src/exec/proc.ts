/**
 * What Linux's /proc says about a process: enough to tell whether a recorded pid is still the
 * same process (its start time) and whether it is alive (not a zombie), and to find processes
 * by their command line or their environment.
 */
import { readFileSync, readdirSync } from 'node:fs';

export interface ProcStat {
  readonly pid: number;
  /** Field 3: `R`, `S`, `D`, `Z` (zombie), `T`, `X` (dead), ... */
  readonly state: string;
  /** Field 5: the process group id. */
  readonly pgrp: number;
  /** Field 6: the session id (the pid of the session's leader). */
  readonly session: number;
  /** Field 22: start time in clock ticks since boot, as a decimal string. */
  readonly startTicks: string;
}

/**
 * Parses the text of /proc/PID/stat. Field 2, the command name in parentheses, may itself hold
 * blanks and parentheses, so the fields are counted from after its last `)`. Returns null for
 * text that is not a stat line.
 */
export function parseProcStat(text: string): ProcStat | null {
  const open = text.indexOf('(');
  const close = text.lastIndexOf(')');
  if (open < 1 || close < open) return null;
  const pid = Number(text.slice(0, open).trim());
  const rest = text.slice(close + 1).trim().split(/\s+/);
  // rest[0] is field 3, so field N is rest[N - 3].
  const state = rest[0];
  const pgrp = Number(rest[2]);
  const session = Number(rest[3]);
  const startTicks = rest[19];
  if (!Number.isInteger(pid) || state === undefined || !Number.isInteger(pgrp) || !Number.isInteger(session) || startTicks === undefined || !/^\d+$/.test(startTicks)) return null;
  return { pid, state, pgrp, session, startTicks };
}

/** /proc/PID/stat of a process, or null when there is no such process (or no /proc). */
export function readProcStat(pid: number): ProcStat | null {
  return readStatAt('/proc', pid);
}

function readStatAt(procRoot: string, pid: number): ProcStat | null {
  if (!Number.isInteger(pid) || pid <= 0) return null;
  let text: string;
  try {
    text = readFileSync(`${procRoot}/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  return parseProcStat(text);
}

/**
 * True when `pid` is a live process (not a zombie) that started at `startTicks`: the process
 * recorded earlier, not another one that got the same pid since.
 */
export function isSameLiveProcess(pid: number, startTicks: string): boolean {
  const stat = readProcStat(pid);
  return stat !== null && stat.startTicks === startTicks && stat.state !== 'Z' && stat.state !== 'X' && stat.state !== 'x';
}

/** The pids listed under `procRoot` (the entries of /proc that are numbers), or none when it cannot be read. */
export function listPids(procRoot = '/proc'): number[] {
  let entries: string[];
  try {
    entries = readdirSync(procRoot);
  } catch {
    return [];
  }
  return entries.filter((e) => /^\d+$/.test(e)).map(Number);
}

/**
 * Splits the text of /proc/PID/cmdline or /proc/PID/environ into its NUL-terminated entries
 * (proc(5): each entry ends with a NUL byte; the last one may lack it).
 */
export function splitNulList(text: string): string[] {
  if (text === '') return [];
  const parts = text.split('\0');
  if (parts[parts.length - 1] === '') parts.pop();
  return parts;
}

function readNulList(path: string): string[] | null {
  try {
    return splitNulList(readFileSync(path, 'utf8'));
  } catch {
    return null;
  }
}

/** The argument list of a process (/proc/PID/cmdline), or null when it cannot be read (gone, not ours to read). */
export function readCmdline(pid: number, procRoot = '/proc'): string[] | null {
  return readNulList(`${procRoot}/${pid}/cmdline`);
}

/** The environment a process was started with (/proc/PID/environ), or null when it cannot be read (gone, not ours to read). */
export function readEnviron(pid: number, procRoot = '/proc'): string[] | null {
  return readNulList(`${procRoot}/${pid}/environ`);
}

/**
 * True when `environ` (the entries of /proc/PID/environ) holds every one of `wanted`, each
 * `NAME=value` as a whole entry: `MIGPOOL_ATTEMPT=1` does not match `MIGPOOL_ATTEMPT=10`, nor
 * `X_MIGPOOL_ATTEMPT=1`.
 */
export function environHasAll(environ: readonly string[], wanted: readonly string[]): boolean {
  const have = new Set(environ);
  return wanted.every((entry) => have.has(entry));
}

/**
 * The live processes (not zombies) whose environment holds every entry of `wanted`
 * (`NAME=value`, see {@link environHasAll}), less the pids in `except`. One pass over
 * /proc/PID/environ; entries that cannot be read are skipped.
 *
 * What it cannot see, by how Linux works (proc(5)): /proc/PID/environ is the environment the
 * process was started with (at its execve); a process that cleared or replaced its environment
 * when it started a program (`env -i`, execve with its own list) no longer carries the entries.
 * Reading it needs the right to ptrace the process (same user, or root): the processes of
 * another user, or set-user-ID programs, are not found unless the caller is root; nor are the
 * processes that a /proc mounted with `hidepid` hides. An empty `wanted` matches nothing.
 */
export function findProcessesByEnviron(wanted: readonly string[], except: ReadonlySet<number> = new Set(), procRoot = '/proc'): number[] {
  if (wanted.length === 0) return [];
  const found: number[] = [];
  for (const pid of listPids(procRoot)) {
    if (except.has(pid)) continue;
    const environ = readNulList(`${procRoot}/${pid}/environ`);
    if (environ === null || !environHasAll(environ, wanted)) continue;
    const stat = readStatAt(procRoot, pid);
    if (stat !== null && stat.state !== 'Z' && stat.state !== 'X' && stat.state !== 'x') found.push(pid);
  }
  return found;
}

/** Sends `signal` to every process of the group `pgid`; a group already gone is no error (ESRCH). */
export function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // No process of the group is left.
  }
}
