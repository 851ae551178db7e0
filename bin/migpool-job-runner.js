#!/usr/bin/env node
// migpool-job-runner: supervises one attempt of a migpool job, so that the attempt's end is
// recorded and its max runtime enforced even while `migpool serve` is down.
//
//   migpool-job-runner.js DIR/launch.json
//
// launch.json (written by src/exec/local-executor.ts): { command: string[], workdir, env (added to
// this process's environment), maxRuntimeSeconds: number | null, graceSeconds, uid?, gid? }. With
// uid and gid (the runner runs as root), the command runs as that user and group, without the
// runner's supplementary groups (Node's spawn drops them: libuv calls setgroups(0, NULL) before
// setgid/setuid); the runner itself stays root to signal the job's group and write exit.json.
//
// The runner is started detached (leader of its own session and process group) with stdout and
// stderr already open on DIR/stdout.log and DIR/stderr.log. It starts the command (argument
// list, no shell) as the leader of a second process group, which the job and everything it starts
// belong to, and writes DIR/runner.json { pid, startTicks, jobPid, jobStartTicks }.
// - SIGTERM or SIGINT to the runner (a cancel): SIGTERM to the job's group, SIGKILL after the grace.
// - Past the max runtime: the same, recorded as a timeout.
// - When the job's main process has ended, what is left of its group gets SIGTERM, then SIGKILL
//   after the grace, so that nothing of the attempt outlives it.
// - A process that left the job's group with setsid() (a daemonizing tool, `setsid cmd &`) is
//   found by the marks every process of the attempt inherits: the entries MIGPOOL_JOB_ID=,
//   MIGPOOL_ATTEMPT= and MIGPOOL_ATTEMPT_DIR= of launch.json's env, all three present as whole
//   entries of /proc/PID/environ. At each of the steps above it gets the same signals as the group,
//   and the runner waits for it as for the group. Not found (proc(5)): a process that started a
//   program with its environment cleared or replaced (environ is the environment at execve), and
//   one whose environ the runner may not read (another user's, a set-user-ID program's, when the
//   runner is not root). src/exec/proc.ts findProcessesByEnviron does the same for the service.
// Then it writes DIR/exit.json { exitCode, signal, reason: exited | timeout | cancelled, endedAt }
// (temp file + rename) and exits. A command that cannot be started ends as exit status 127
// (126 when it exists but cannot be run), the reason in stderr.log and as exit.json's `message`.
// Plain JavaScript without dependencies: it runs as it ships, from the checkout or the package.
import { spawn } from 'node:child_process';
import { closeSync, fsyncSync, openSync, readFileSync, readdirSync, renameSync, statSync, writeSync } from 'node:fs';
import { constants } from 'node:os';
import { dirname, join } from 'node:path';
import { clearTimeout, setTimeout } from 'node:timers';

const LEFTOVER_POLL_MS = 50;
const AFTER_KILL_WAIT_MS = 1000;

function say(message) {
  try {
    writeSync(2, `[migpool] ${message}\n`);
  } catch {
    // stderr is gone: nothing to tell.
  }
}

function statOf(pid) {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const rest = text.slice(text.lastIndexOf(')') + 1).trim().split(/\s+/);
    return { state: rest[0], pgrp: Number(rest[2]), startTicks: rest[19] ?? null };
  } catch {
    return null;
  }
}

function writeJsonAtomic(path, value) {
  const temp = `${path}.tmp-${process.pid}`;
  const fd = openSync(temp, 'w', 0o644);
  try {
    writeSync(fd, `${JSON.stringify(value)}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temp, path);
  try {
    const dirFd = openSync(dirname(path), 'r');
    try {
      fsyncSync(dirFd);
    } finally {
      closeSync(dirFd);
    }
  } catch {
    // Some file systems cannot sync a directory; the rename is still atomic.
  }
}

/** The entries of a NUL-separated /proc file (cmdline, environ), or null when it cannot be read. */
function nulList(path) {
  let text;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return null;
  }
  const parts = text.split('\0');
  if (parts[parts.length - 1] === '') parts.pop();
  return parts;
}

function isLive(stat) {
  return stat !== null && stat.state !== 'Z' && stat.state !== 'X' && stat.state !== 'x';
}

/** Pids of the live processes (other than this one) whose environment holds every entry of `marks`. */
function findMarked(marks) {
  let entries;
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  const found = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    const environ = nulList(`/proc/${entry}/environ`);
    if (environ === null) continue;
    const have = new Set(environ);
    if (marks.every((m) => have.has(m)) && isLive(statOf(entry))) found.push(Number(entry));
  }
  return found;
}

/** True while some process of group `pgid` is alive (zombies waiting to be reaped do not count). */
function groupAlive(pgid) {
  try {
    process.kill(-pgid, 0);
  } catch (error) {
    return error.code === 'EPERM';
  }
  let entries;
  try {
    entries = readdirSync('/proc');
  } catch {
    return true;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = statOf(entry);
    if (stat && stat.pgrp === pgid && stat.state !== 'Z' && stat.state !== 'X') return true;
  }
  return false;
}

function signalGroup(pgid, signal) {
  try {
    process.kill(-pgid, signal);
  } catch {
    // Already gone.
  }
}

const launchFile = process.argv[2];
if (!launchFile) {
  say('usage: migpool-job-runner.js DIR/launch.json');
  process.exit(2);
}
const dir = dirname(launchFile);
let launch;
try {
  launch = JSON.parse(readFileSync(launchFile, 'utf8'));
} catch (error) {
  say(`cannot read ${launchFile}: ${error.message}`);
  process.exit(2);
}
const command = launch.command;
const MARK_NAMES = ['MIGPOOL_JOB_ID', 'MIGPOOL_ATTEMPT', 'MIGPOOL_ATTEMPT_DIR'];
/** The attempt's marks (`NAME=value`), or null when launch.json does not set all three: then nothing is searched by environment. */
const marks = MARK_NAMES.every((name) => typeof launch.env?.[name] === 'string') ? MARK_NAMES.map((name) => `${name}=${launch.env[name]}`) : null;
const graceMs = Math.max(0, Math.round(Number(launch.graceSeconds ?? 10) * 1000));

let reason = 'exited';
let stopping = false;
let jobPgid = null;
let result = null;
/** Why the command could not be started (one line), or null when it was. */
let startFailure = null;
let giveUpAt = null;
let finished = false;
/** After the grace: SIGKILL, also for marked processes found later. */
let killing = false;
/** Processes of the attempt outside the job's group (found by their marks): pid -> start ticks. */
const escaped = new Map();
const timers = new Set();

// Node's timers hold at most 2^31-1 ms (about 24.8 days); a longer delay fires after 1 ms with a
// TimeoutOverflowWarning (https://nodejs.org/api/timers.html#settimeoutcallback-delay-args).
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Runs `fn` after `ms` milliseconds, however long: waits longer than a Node timer holds are chained. */
function later(ms, fn) {
  const deadline = Date.now() + ms;
  const arm = (wait) => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      const left = deadline - Date.now();
      if (left > 0) arm(Math.min(left, MAX_TIMER_MS));
      else fn();
    }, wait);
    timers.add(timer);
  };
  arm(Math.min(ms, MAX_TIMER_MS));
}

function finish() {
  if (finished) return;
  finished = true;
  for (const timer of timers) clearTimeout(timer);
  const { exitCode, signal } = result;
  try {
    writeJsonAtomic(join(dir, 'exit.json'), { exitCode, signal, reason, endedAt: Date.now(), ...(startFailure === null ? {} : { message: startFailure }) });
  } catch (error) {
    say(`cannot write ${join(dir, 'exit.json')}: ${error.message}`);
  }
  process.exit(exitCode ?? 128 + (constants.signals[signal] ?? 15));
}

/** Adds the marked processes outside the job's group to `escaped`; one pass over /proc/PID/environ. */
function scanEscaped() {
  if (marks === null) return;
  for (const pid of findMarked(marks)) {
    const stat = statOf(pid);
    if (isLive(stat) && stat.pgrp !== jobPgid && stat.startTicks !== null) escaped.set(pid, stat.startTicks);
  }
}

/** Forgets the escaped processes that ended (or whose pid now names another process); true when some are left. */
function escapedAlive() {
  for (const [pid, ticks] of escaped) {
    const stat = statOf(pid);
    if (!isLive(stat) || stat.startTicks !== ticks) escaped.delete(pid);
  }
  return escaped.size > 0;
}

function signalEscaped(signal) {
  escapedAlive();
  for (const pid of escaped.keys()) {
    try {
      process.kill(pid, signal);
    } catch {
      // Gone meanwhile.
    }
  }
}

/** True while some process of the attempt is alive: in the job's group, or escaped from it (searched again once the known ones ended). */
function attemptAlive() {
  if (groupAlive(jobPgid) || escapedAlive()) return true;
  scanEscaped();
  return escapedAlive();
}

/** SIGTERM to the job's group and its escaped processes now, SIGKILL after the grace. */
function terminateGroup() {
  if (stopping) return;
  stopping = true;
  signalGroup(jobPgid, 'SIGTERM');
  scanEscaped();
  signalEscaped('SIGTERM');
  later(graceMs, () => {
    scanEscaped();
    if (groupAlive(jobPgid) || escapedAlive()) {
      say(`the job's processes outlived the ${graceMs / 1000} s grace period; sending SIGKILL`);
      signalGroup(jobPgid, 'SIGKILL');
      signalEscaped('SIGKILL');
    }
    killing = true;
    giveUpAt = Date.now() + AFTER_KILL_WAIT_MS;
  });
}

function stop(why, message) {
  if (result || reason !== 'exited') return;
  reason = why;
  say(message);
  if (jobPgid !== null) terminateGroup();
}

/** After the job's main process ended: waits for the rest of the attempt (its group, escaped processes), then finishes. */
function waitForGroup() {
  if (!attemptAlive() || (giveUpAt !== null && Date.now() >= giveUpAt)) {
    finish();
    return;
  }
  if (!stopping) {
    say(`the job ended but left processes${escaped.size > 0 ? ` (${escaped.size} outside its process group: ${[...escaped.keys()].join(', ')})` : ''}; sending them SIGTERM`);
    terminateGroup();
  } else if (killing) {
    // Found after the SIGKILL (started by a process that was being killed): no second grace.
    signalGroup(jobPgid, 'SIGKILL');
    signalEscaped('SIGKILL');
  }
  later(LEFTOVER_POLL_MS, waitForGroup);
}

process.on('SIGTERM', () => stop('cancelled', 'cancel requested (SIGTERM); stopping the job'));
process.on('SIGINT', () => stop('cancelled', 'cancel requested (SIGINT); stopping the job'));
process.on('SIGHUP', () => {});

function cannotStart(code, message) {
  say(message);
  startFailure = String(message).split('\n')[0];
  result = { exitCode: code, signal: null };
  finish();
}

if (!Array.isArray(command) || command.length === 0 || command.some((word) => typeof word !== 'string')) {
  cannotStart(127, `${launchFile}: command must be a non-empty list of strings`);
}
function isDirectory(path) {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}
if (!isDirectory(launch.workdir)) {
  cannotStart(127, `cannot start ${command[0]}: workdir ${launch.workdir} does not exist or is not a directory`);
}

let child;
try {
  child = spawn(command[0], command.slice(1), {
    cwd: launch.workdir,
    env: { ...process.env, ...launch.env },
    stdio: ['ignore', 'inherit', 'inherit'],
    detached: true,
    ...(Number.isInteger(launch.uid) && Number.isInteger(launch.gid) ? { uid: launch.uid, gid: launch.gid } : {}),
  });
} catch (error) {
  // Node refuses some arguments before any system call (a NUL byte in the command or the environment).
  cannotStart(126, `cannot start ${command[0]}: ${String(error.message).split('\n')[0]} (${error.code ?? 'error'})`);
}

child.on('error', (error) => {
  if (child.pid !== undefined || result) return;
  const notFound = error.code === 'ENOENT';
  cannotStart(notFound ? 127 : 126, `cannot start ${command[0]}: ${notFound ? 'command not found' : error.message} (${error.code ?? 'error'}; workdir ${launch.workdir})`);
});

child.on('exit', (exitCode, signal) => {
  if (result) return;
  result = { exitCode, signal };
  if (jobPgid === null) {
    finish();
    return;
  }
  waitForGroup();
});

if (child.pid !== undefined) {
  jobPgid = child.pid;
  const self = statOf(process.pid);
  const job = statOf(child.pid);
  try {
    writeJsonAtomic(join(dir, 'runner.json'), {
      pid: process.pid,
      startTicks: self?.startTicks ?? null,
      jobPid: child.pid,
      jobStartTicks: job?.startTicks ?? null,
    });
  } catch (error) {
    say(`cannot write ${join(dir, 'runner.json')}: ${error.message}`);
  }
  const maxRuntime = launch.maxRuntimeSeconds;
  if (typeof maxRuntime === 'number' && maxRuntime > 0) {
    later(Math.round(maxRuntime * 1000), () => stop('timeout', `max runtime of ${maxRuntime} s reached; stopping the job`));
  }
}
