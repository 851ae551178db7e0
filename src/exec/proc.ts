/**
 * What Linux's /proc says about a process: enough to tell whether a recorded pid is still the
 * same process (its start time) and whether it is alive (not a zombie).
 */
import { readFileSync } from 'node:fs';

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
  if (!Number.isInteger(pid) || pid <= 0) return null;
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
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
