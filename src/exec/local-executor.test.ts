import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Executor, ExitReport, LaunchSpec } from './executor.js';
import { attemptFiles, createLocalExecutor, findRunnerProcess, jobRunnerPath, readExitFile, readProcessRef } from './local-executor.js';
import { isSameLiveProcess, readProcStat } from './proc.js';

const node = process.execPath;
let root: string;
const executors: Executor[] = [];

function executor(opts: Parameters<typeof createLocalExecutor>[0] = {}): Executor {
  const made = createLocalExecutor({ graceSeconds: 0.3, pollMs: 25, ...opts });
  executors.push(made);
  return made;
}

let attemptNo = 0;
function spec(script: string, extra: Partial<LaunchSpec> = {}): LaunchSpec {
  attemptNo++;
  return {
    jobId: `job-${attemptNo}`,
    attempt: 1,
    command: [node, '-e', script],
    workdir: root,
    env: {},
    devices: [],
    maxRuntimeSeconds: null,
    dir: join(root, `attempt-${attemptNo}`),
    ...extra,
  };
}

/** Resolves with the next report of `jobId`. */
function nextExit(ex: Executor, jobId: string): Promise<ExitReport> {
  return new Promise((done) => ex.onExit((report) => report.jobId === jobId && done(report)));
}

async function waitFor(check: () => boolean, ms = 3000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 10));
  }
}

function processGone(pid: number): boolean {
  const stat = readProcStat(pid);
  return stat === null || stat.state === 'Z';
}

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'migpool-exec-'));
});

/** Kills what a failed test may have left running: every runner and job group under `root`. */
function killLeftovers(): void {
  for (const entry of readdirSync(root)) {
    const file = attemptFiles(join(root, entry)).runner;
    if (!existsSync(file)) continue;
    const runner = JSON.parse(readFileSync(file, 'utf8')) as { pid: number; startTicks: string; jobPid: number; jobStartTicks: string };
    for (const [pid, ticks] of [[runner.pid, runner.startTicks], [runner.jobPid, runner.jobStartTicks]] as const) {
      if (isSameLiveProcess(pid, ticks)) process.kill(-pid, 'SIGKILL');
    }
  }
}

/** Processes a test started itself (escaped children found by pid, stand-ins): killed after each test. */
const strays: number[] = [];
const children: ChildProcess[] = [];

afterEach(async () => {
  for (const ex of executors.splice(0)) await ex.close();
  killLeftovers();
  for (const pid of strays.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone, as it should be.
    }
  }
  for (const child of children.splice(0)) child.kill('SIGKILL');
  rmSync(root, { recursive: true, force: true });
});

describe('jobRunnerPath', () => {
  it('finds bin/migpool-job-runner.js from src/exec, and the same file from dist/src/exec', () => {
    const repo = fileURLToPath(new URL('../../', import.meta.url));
    expect(jobRunnerPath()).toBe(resolve(repo, 'bin/migpool-job-runner.js'));
    const fromDist = fileURLToPath(new URL('../../../bin/migpool-job-runner.js', new URL('dist/src/exec/local-executor.js', `file://${repo}`)));
    expect(fromDist).toBe(jobRunnerPath());
  });
});

describe('local executor', () => {
  it('records the exit code, with the ref of a process that existed', async () => {
    const ex = executor();
    const s = spec('process.exit(7)');
    const exit = nextExit(ex, s.jobId);
    const ref = await ex.launch(s);
    expect(ref.dir).toBe(s.dir);
    expect(ref.startTicks).toMatch(/^\d+$/);
    const report = await exit;
    expect(report).toMatchObject({ jobId: s.jobId, attempt: 1, exitCode: 7, signal: null, reason: 'exited' });
    expect(report.endedAt).toBeGreaterThan(Date.now() - 10_000);
    expect(readExitFile(s.dir)).toMatchObject({ exitCode: 7, reason: 'exited' });
    expect(readProcessRef(s.dir)).toEqual(ref);
  });

  it('runs in the workdir with the environment, CUDA_VISIBLE_DEVICES and the job id; output goes to the log files', async () => {
    const ex = executor();
    const workdir = join(root, 'work dir');
    mkdirSync(workdir);
    const script = `
      const e = process.env;
      console.log(JSON.stringify({ cwd: process.cwd(), cuda: e.CUDA_VISIBLE_DEVICES, job: e.MIGPOOL_JOB_ID, attempt: e.MIGPOOL_ATTEMPT, mine: e.MY_VAR, path: e.PATH !== undefined }));
      console.error('to stderr');`;
    const s = spec(script, { workdir, env: { MY_VAR: 'a b', CUDA_VISIBLE_DEVICES: 'not this' }, devices: ['MIG-aaa', 'MIG-bbb'], attempt: 3 });
    const exit = nextExit(ex, s.jobId);
    const ref = await ex.launch(s);
    expect(await exit).toMatchObject({ exitCode: 0, attempt: 3, reason: 'exited' });
    const logs = ex.logPaths(ref);
    expect(logs).toEqual({ stdout: join(s.dir, 'stdout.log'), stderr: join(s.dir, 'stderr.log') });
    expect(JSON.parse(readFileSync(logs.stdout, 'utf8'))).toEqual({ cwd: workdir, cuda: 'MIG-aaa,MIG-bbb', job: s.jobId, attempt: '3', mine: 'a b', path: true });
    expect(readFileSync(logs.stderr, 'utf8')).toBe('to stderr\n');
    expect(statSync(attemptFiles(s.dir).launch).mode & 0o077).toBe(0);
  });

  it("gives the job the service's environment less its credentials (MIGPOOL_TOKEN, PGPASSWORD, MIGPOOL_DATABASE), which the job's own env may still set", async () => {
    // Found on the live service: `MIGPOOL_TOKEN=<admin's> migpool serve` showed the admin's token to another user's job;
    // and `MIGPOOL_DATABASE=postgres://migpool:secret@db/migpool migpool serve` (README's way to give the store's password) showed the password.
    const names = ['MIGPOOL_TOKEN', 'PGPASSWORD', 'MIGPOOL_DATABASE'] as const;
    const saved = Object.fromEntries(names.map((n) => [n, process.env[n]]));
    process.env['MIGPOOL_TOKEN'] = 'admin-token';
    process.env['PGPASSWORD'] = 'store-password';
    process.env['MIGPOOL_DATABASE'] = 'postgres://migpool:store-password@db/migpool';
    try {
      const ex = executor();
      const script = 'const e = process.env; console.log(JSON.stringify({ token: e.MIGPOOL_TOKEN ?? null, pg: e.PGPASSWORD ?? null, db: e.MIGPOOL_DATABASE ?? null, path: e.PATH !== undefined }))';
      const s = spec(script);
      const exit = nextExit(ex, s.jobId);
      const ref = await ex.launch(s);
      expect(await exit).toMatchObject({ exitCode: 0 });
      expect(JSON.parse(readFileSync(ex.logPaths(ref).stdout, 'utf8'))).toEqual({ token: null, pg: null, db: null, path: true });
      const own = spec(script, { env: { MIGPOOL_TOKEN: 'the-users-own' } });
      const ownExit = nextExit(ex, own.jobId);
      const ownRef = await ex.launch(own);
      await ownExit;
      expect(JSON.parse(readFileSync(ex.logPaths(ownRef).stdout, 'utf8'))).toMatchObject({ token: 'the-users-own' });
    } finally {
      for (const name of names) {
        const value = saved[name];
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  });

  it('stops a job past its max runtime, recorded as a timeout', async () => {
    const ex = executor();
    const s = spec('setInterval(() => {}, 1000)', { maxRuntimeSeconds: 0.3 });
    const exit = nextExit(ex, s.jobId);
    const started = Date.now();
    await ex.launch(s);
    expect(await exit).toMatchObject({ exitCode: null, signal: 'SIGTERM', reason: 'timeout' });
    expect(Date.now() - started).toBeLessThan(2500);
    expect(readFileSync(join(s.dir, 'stderr.log'), 'utf8')).toContain('max runtime of 0.3 s');
  });

  it('a max runtime longer than a Node timer holds (30 days, over 2^31-1 ms) does not fire at once', async () => {
    const ex = executor();
    const s = spec('setTimeout(() => {}, 1200)', { maxRuntimeSeconds: 30 * 86_400 });
    const exit = nextExit(ex, s.jobId);
    await ex.launch(s);
    expect(await exit).toMatchObject({ exitCode: 0, reason: 'exited' });
    expect(readFileSync(join(s.dir, 'stderr.log'), 'utf8')).not.toContain('max runtime');
  });

  it('a launch can set its own grace period: SIGKILL comes that long after SIGTERM', async () => {
    const ex = executor();
    const s = spec(`process.on('SIGTERM', () => console.log('term')); setInterval(() => {}, 1000); console.log('ready')`, { graceSeconds: 1.5 });
    const exit = nextExit(ex, s.jobId);
    await ex.launch(s);
    await waitFor(() => existsSync(join(s.dir, 'stdout.log')) && readFileSync(join(s.dir, 'stdout.log'), 'utf8').includes('ready'));
    const t0 = Date.now();
    await ex.cancel(s.jobId);
    expect(await exit).toMatchObject({ reason: 'cancelled', signal: 'SIGKILL' });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1400);
    expect(readFileSync(join(s.dir, 'stdout.log'), 'utf8')).toContain('term');
  });

  it('cancel stops the whole group: a grandchild that ignores SIGTERM gets SIGKILL after the grace', async () => {
    const ex = executor();
    const grandchild = `process.on('SIGTERM', () => {}); setInterval(() => {}, 1000); console.log('ready')`;
    const script = `
      const { spawn } = require('node:child_process');
      const g = spawn(process.execPath, ['-e', ${JSON.stringify(grandchild)}], { stdio: ['ignore', 'pipe', 'inherit'] });
      g.stdout.once('data', () => console.log(String(g.pid)));
      setInterval(() => {}, 1000);`;
    const s = spec(script);
    const exit = nextExit(ex, s.jobId);
    await ex.launch(s);
    const stdout = join(s.dir, 'stdout.log');
    await waitFor(() => existsSync(stdout) && /^\d+\n/.test(readFileSync(stdout, 'utf8')));
    const grandchildPid = Number(readFileSync(stdout, 'utf8').trim());
    expect(processGone(grandchildPid)).toBe(false);
    await ex.cancel(s.jobId);
    expect(await exit).toMatchObject({ exitCode: null, signal: 'SIGTERM', reason: 'cancelled' });
    expect(processGone(grandchildPid)).toBe(true);
    expect(readFileSync(join(s.dir, 'stderr.log'), 'utf8')).toContain('sending SIGKILL');
    await ex.cancel(s.jobId);
    await ex.cancel('no-such-job');
  });

  it('a restarted service adopts a running attempt and reports its end', async () => {
    const first = executor();
    const s = spec(`const fs = require('node:fs'); setInterval(() => fs.existsSync('go') && process.exit(5), 20)`);
    const ref = await first.launch(s);
    let firstReports = 0;
    first.onExit(() => firstReports++);
    await first.close();

    const second = executor();
    const exit = nextExit(second, s.jobId);
    expect(await second.adopt(s.jobId, 1, ref)).toBe('running');
    expect(await second.adopt(s.jobId, 1, ref)).toBe('running');
    writeFileSync(join(root, 'go'), '');
    expect(await exit).toMatchObject({ jobId: s.jobId, attempt: 1, exitCode: 5, reason: 'exited' });
    expect(firstReports).toBe(0);
  });

  it('a restarted service can cancel an adopted attempt', async () => {
    const first = executor();
    const s = spec('setInterval(() => {}, 1000)');
    const ref = await first.launch(s);
    await first.close();
    await waitFor(() => readProcessRef(s.dir) !== null);
    const second = executor();
    const exit = nextExit(second, s.jobId);
    expect(await second.adopt(s.jobId, 1, ref)).toBe('running');
    await second.cancel(s.jobId);
    expect(await exit).toMatchObject({ reason: 'cancelled', signal: 'SIGTERM' });
  });

  it('adopting an attempt that has ended returns its exit.json, and no onExit call', async () => {
    const first = executor();
    const s = spec('process.exit(3)');
    const done = nextExit(first, s.jobId);
    const ref = await first.launch(s);
    await done;
    const second = executor();
    let reports = 0;
    second.onExit(() => reports++);
    const adopted = await second.adopt(s.jobId, 1, ref);
    expect(adopted).toMatchObject({ jobId: s.jobId, attempt: 1, exitCode: 3, signal: null, reason: 'exited' });
    expect(adopted).toHaveProperty('endedAt', readExitFile(s.dir)?.endedAt);
    await new Promise((r) => setTimeout(r, 60));
    expect(reports).toBe(0);
  });

  it('holds nothing of attempts that ended and were reported, launched or adopted', async () => {
    const ex = executor();
    const launched = Array.from({ length: 12 }, () => spec('process.exit(0)'));
    const ends = launched.map((s) => nextExit(ex, s.jobId));
    const refs = [];
    for (const s of launched) refs.push(await ex.launch(s));
    expect(ex.retained?.()).toBeGreaterThan(0);
    await Promise.all(ends);
    // A restarted service settles attempts that ended while it was down.
    const second = executor();
    for (const [i, s] of launched.entries()) expect(await second.adopt(s.jobId, 1, refs[i]!)).toMatchObject({ reason: 'exited', exitCode: 0 });
    expect(ex.retained?.()).toBe(0);
    expect(second.retained?.()).toBe(0);
  });

  it('a pid now used by another process is lost, not running', async () => {
    const ex = executor({ now: () => 1234 });
    const own = readProcStat(process.pid);
    expect(own).not.toBeNull();
    const dir = join(root, 'never-ran');
    const wrongTicks = String(BigInt(own?.startTicks ?? '0') + 1n);
    expect(await ex.adopt('j', 2, { pid: process.pid, startTicks: wrongTicks, dir })).toEqual({
      jobId: 'j',
      attempt: 2,
      exitCode: null,
      signal: null,
      reason: 'lost',
      endedAt: 1234,
    });
    expect(isSameLiveProcess(process.pid, own?.startTicks ?? '')).toBe(true);
    expect(await ex.adopt('k', 1, { pid: 2 ** 22 + 17, startTicks: '1', dir })).toMatchObject({ reason: 'lost' });
  });

  it('a runner that vanished without exit.json is lost, and what is left of its job is killed', async () => {
    const ex = executor({ now: () => 99 });
    const s = spec('setInterval(() => {}, 1000)');
    const exit = nextExit(ex, s.jobId);
    const ref = await ex.launch(s);
    await waitFor(() => readProcessRef(s.dir) !== null);
    const jobPid = (JSON.parse(readFileSync(attemptFiles(s.dir).runner, 'utf8')) as { jobPid: number }).jobPid;
    process.kill(ref.pid, 'SIGKILL');
    expect(await exit).toEqual({ jobId: s.jobId, attempt: 1, exitCode: null, signal: null, reason: 'lost', endedAt: 99 });
    await waitFor(() => processGone(jobPid));
  });

  it('a command that cannot be found ends as 127 with the reason in stderr.log', async () => {
    const ex = executor();
    const s = spec('', { command: ['migpool-no-such-command-xyz', '--flag'] });
    const exit = nextExit(ex, s.jobId);
    await ex.launch(s);
    expect(await exit).toMatchObject({ exitCode: 127, signal: null, reason: 'exited', message: expect.stringMatching(/^cannot start migpool-no-such-command-xyz: command not found/) });
    expect(readFileSync(join(s.dir, 'stderr.log'), 'utf8')).toMatch(/cannot start migpool-no-such-command-xyz: command not found/);
  });

  it('a missing workdir ends as 127 with the reason in stderr.log', async () => {
    const ex = executor();
    const s = spec('0', { workdir: join(root, 'missing') });
    const exit = nextExit(ex, s.jobId);
    await ex.launch(s);
    expect(await exit).toMatchObject({ exitCode: 127, reason: 'exited', message: expect.stringContaining(`workdir ${join(root, 'missing')} does not exist`) });
    expect(readFileSync(join(s.dir, 'stderr.log'), 'utf8')).toContain(`workdir ${join(root, 'missing')} does not exist`);
  });

  it('refuses a second launch of a running job, and of a folder whose attempt still runs', async () => {
    const ex = executor();
    const s = spec('setInterval(() => {}, 1000)');
    const exit = nextExit(ex, s.jobId);
    await ex.launch(s);
    await expect(ex.launch({ ...s, attempt: 2 })).rejects.toThrow(/attempt 1 is still running/);
    await waitFor(() => readProcessRef(s.dir) !== null);
    const other = executor();
    await expect(other.launch(s)).rejects.toThrow(/still running .*adopt it/);
    await ex.cancel(s.jobId);
    await exit;
  });

  it('rejects bad launch specs with one-line messages', async () => {
    const ex = executor();
    await expect(ex.launch(spec('', { command: [] }))).rejects.toMatchObject({ code: 'BAD_INPUT', message: expect.stringMatching(/command must be a non-empty list/) });
    await expect(ex.launch(spec('', { maxRuntimeSeconds: -1 }))).rejects.toMatchObject({ code: 'BAD_INPUT', message: expect.stringMatching(/maxRuntimeSeconds -1/) });
    expect(() => createLocalExecutor({ pollMs: 0 })).toThrow(/pollMs 0/);
  });

  it('relaunching into the folder of an ended attempt starts afresh', async () => {
    const ex = executor();
    const s = spec('process.exit(1)');
    let exit = nextExit(ex, s.jobId);
    await ex.launch(s);
    expect(await exit).toMatchObject({ exitCode: 1 });
    writeFileSync(join(s.dir, 'note'), '');
    exit = nextExit(ex, s.jobId);
    await ex.launch({ ...s, attempt: 2, command: [node, '-e', 'process.exit(0)'] });
    expect(await exit).toMatchObject({ attempt: 2, exitCode: 0 });
  });
});

describe('processes that left the job group with setsid()', () => {
  /**
   * A job whose child calls setsid() (util-linux `setsid`; where it is missing, Node's detached
   * spawn, which calls setsid() too: https://nodejs.org/api/child_process.html#optionsdetached),
   * then writes its pid to `pidFile` and sleeps; the child ignores SIGTERM when `stubborn`.
   * With `mainStays` the job's main process then waits for a signal, else it exits 0 once the
   * child has written its pid.
   */
  function escapingJob(pidFile: string, opts: { stubborn: boolean; mainStays: boolean }): string[] {
    const sleeper = `${opts.stubborn ? "process.on('SIGTERM', () => {}); " : ''}require('node:fs').writeFileSync(${JSON.stringify(pidFile)}, String(process.pid)); setInterval(() => {}, 1000)`;
    const stay = opts.mainStays ? 'setInterval(() => {}, 1000);' : `setInterval(() => require('node:fs').existsSync(${JSON.stringify(pidFile)}) && process.exit(0), 20);`;
    if (existsSync('/usr/bin/setsid')) {
      const script = `require('node:child_process').spawn('/usr/bin/setsid', [process.execPath, '-e', ${JSON.stringify(sleeper)}], { stdio: 'ignore' }).unref(); ${stay}`;
      return [node, '-e', script];
    }
    const script = `require('node:child_process').spawn(process.execPath, ['-e', ${JSON.stringify(sleeper)}], { stdio: 'ignore', detached: true }).unref(); ${stay}`;
    return [node, '-e', script];
  }

  async function escapedPid(pidFile: string): Promise<number> {
    await waitFor(() => existsSync(pidFile) && /^\d+$/.test(readFileSync(pidFile, 'utf8')), 5000);
    const pid = Number(readFileSync(pidFile, 'utf8'));
    strays.push(pid);
    return pid;
  }

  it('cancel stops a child that called setsid() and ignores SIGTERM: SIGKILL after the grace, before the exit report', async () => {
    const ex = executor();
    const pidFile = join(root, 'escaped.pid');
    const s = spec('', { command: escapingJob(pidFile, { stubborn: true, mainStays: true }) });
    const exit = nextExit(ex, s.jobId);
    await ex.launch(s);
    const pid = await escapedPid(pidFile);
    await waitFor(() => readProcessRef(s.dir) !== null);
    const jobPid = (JSON.parse(readFileSync(attemptFiles(s.dir).runner, 'utf8')) as { jobPid: number }).jobPid;
    // It did leave: another session and group than the job's.
    expect(readProcStat(pid)).toMatchObject({ session: pid, pgrp: pid });
    expect(readProcStat(pid)?.session).not.toBe(jobPid);
    const t0 = Date.now();
    await ex.cancel(s.jobId);
    expect(await exit).toMatchObject({ reason: 'cancelled' });
    // Gone when the end is reported (grace 0.3 s; the runner waits for it before writing exit.json).
    expect(processGone(pid)).toBe(true);
    expect(Date.now() - t0).toBeLessThan(3000);
    expect(readFileSync(join(s.dir, 'stderr.log'), 'utf8')).toContain('sending SIGKILL');
  });

  it('past the max runtime, a child that called setsid() is stopped with the job, recorded as a timeout', async () => {
    const ex = executor();
    const pidFile = join(root, 'escaped.pid');
    const s = spec('', { command: escapingJob(pidFile, { stubborn: false, mainStays: true }), maxRuntimeSeconds: 1 });
    const exit = nextExit(ex, s.jobId);
    await ex.launch(s);
    const pid = await escapedPid(pidFile);
    expect(processGone(pid)).toBe(false);
    expect(await exit).toMatchObject({ reason: 'timeout' });
    expect(processGone(pid)).toBe(true);
  });

  it('a job that exits normally leaving a setsid child: the child is stopped before the exit report, which keeps exit code 0', async () => {
    const ex = executor();
    const pidFile = join(root, 'escaped.pid');
    const s = spec('', { command: escapingJob(pidFile, { stubborn: false, mainStays: false }) });
    const exit = nextExit(ex, s.jobId);
    await ex.launch(s);
    const report = await exit;
    expect(report).toMatchObject({ exitCode: 0, signal: null, reason: 'exited' });
    const pid = Number(readFileSync(pidFile, 'utf8'));
    strays.push(pid);
    expect(processGone(pid)).toBe(true);
    expect(readFileSync(join(s.dir, 'stderr.log'), 'utf8')).toContain(`1 outside its process group: ${pid}`);
  });

  it('stops only its own attempt: processes with the same job id but another attempt number or folder live on', async () => {
    const ex = executor();
    const s = spec('setTimeout(() => {}, 100)', { attempt: 1 });
    const bystander = (env: Record<string, string>): ChildProcess => {
      const child = spawn(node, ['-e', 'setInterval(() => {}, 1000)'], { env: { ...process.env, ...env }, stdio: 'ignore', detached: true });
      children.push(child);
      return child;
    };
    const otherAttempt = bystander({ MIGPOOL_JOB_ID: s.jobId, MIGPOOL_ATTEMPT: '11', MIGPOOL_ATTEMPT_DIR: s.dir });
    const otherService = bystander({ MIGPOOL_JOB_ID: s.jobId, MIGPOOL_ATTEMPT: '1', MIGPOOL_ATTEMPT_DIR: join(root, 'elsewhere') });
    const exit = nextExit(ex, s.jobId);
    await ex.launch(s);
    expect(await exit).toMatchObject({ exitCode: 0, reason: 'exited' });
    expect(processGone(otherAttempt.pid!)).toBe(false);
    expect(processGone(otherService.pid!)).toBe(false);
    expect(readFileSync(join(s.dir, 'stderr.log'), 'utf8')).not.toContain('left processes');
  });
});

describe('a runner that has not written runner.json yet (the service died right after starting it)', () => {
  it('is found by its command line, and a second launch into its folder is refused: the job does not start twice', async () => {
    const first = executor();
    const starts = join(root, 'starts');
    const s = spec(`require('node:fs').appendFileSync(${JSON.stringify(starts)}, 'start\\n'); setInterval(() => {}, 1000)`);
    const exit = nextExit(first, s.jobId);
    const ref = await first.launch(s);
    await waitFor(() => readProcessRef(s.dir) !== null && existsSync(starts));
    // What a restarted service finds when the runner had not recorded itself: no runner.json.
    rmSync(attemptFiles(s.dir).runner);
    expect(readProcessRef(s.dir)).toBeNull();
    expect(findRunnerProcess(s.dir)).toEqual(ref);
    const second = executor();
    await expect(second.launch(s)).rejects.toMatchObject({ code: 'RUNTIME', message: expect.stringMatching(new RegExp(`still running \\(pid ${ref.pid}\\); adopt it`)) });
    await new Promise((r) => setTimeout(r, 300));
    expect(readFileSync(starts, 'utf8')).toBe('start\n');
    // Adopting the ref found that way watches the attempt to its end.
    const adoptedExit = nextExit(second, s.jobId);
    expect(await second.adopt(s.jobId, s.attempt, ref)).toBe('running');
    await first.cancel(s.jobId);
    expect(await exit).toMatchObject({ reason: 'cancelled' });
    expect(await adoptedExit).toMatchObject({ reason: 'cancelled' });
  });

  it('a stand-in with the runner command line of another folder is not taken for this one', async () => {
    const fakeDir = join(root, 'fake-bin');
    mkdirSync(fakeDir);
    const fake = join(fakeDir, 'migpool-job-runner.js');
    writeFileSync(fake, 'setInterval(() => {}, 1000)\n');
    const dir = join(root, 'attempt-x');
    const other = join(root, 'attempt-y');
    const child = spawn(node, [fake, join(dir, 'launch.json')], { stdio: 'ignore' });
    children.push(child);
    await waitFor(() => findRunnerProcess(dir) !== null);
    expect(findRunnerProcess(dir)).toMatchObject({ pid: child.pid, dir });
    expect(findRunnerProcess(other)).toBeNull();
    const ex = executor();
    await expect(ex.launch(spec('', { dir }))).rejects.toThrow(new RegExp(`pid ${child.pid}\\); adopt it`));
    expect(existsSync(join(dir, 'launch.json'))).toBe(false);
  });
});
