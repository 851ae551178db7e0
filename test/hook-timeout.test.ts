/**
 * `apply/restore --hook-timeout`: a mig-parted hook that hangs no longer hangs the apply with the
 * GPUs half way. End to end through the CLI on a simulated machine.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { BIN, cli } from './run-cli.js';

const DEFAULTS = fileURLToPath(new URL('./fixtures/mig-parted/config-default.yaml', import.meta.url));

function tmp(): string {
  return mkdtempSync(join(tmpdir(), 'migpool-hook-timeout-'));
}

function box(): string[] {
  return ['--simulate', '1xA100-SXM4-40GB', '--state-dir', tmp()];
}

/** Whether a process is still there (a zombie counts as gone). */
function alive(pid: number): boolean {
  try {
    return !/^\S+ \(.*\) [ZX] /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/**
 * A hooks file: `point` runs a shell script that forks a `sleep 30` (its pid in sleep.pid) and waits
 * for it; apply-exit appends to exit.log.
 */
function hangingHooks(dir: string, point: string): string {
  const file = join(dir, 'hooks.yaml');
  writeFileSync(
    file,
    [
      'version: v1',
      'hooks:',
      `  ${point}:`,
      `  - workdir: ${dir}`,
      '    command: /bin/sh',
      '    args: ["-c", "sleep 30 & echo $! > sleep.pid; wait"]',
      '  apply-exit:',
      `  - workdir: ${dir}`,
      '    command: /bin/sh',
      '    args: ["-c", "echo exit >> exit.log"]',
      '',
    ].join('\n'),
  );
  return file;
}

afterEach(() => {
  vi.unstubAllEnvs();
});

describe('apply --hook-timeout', () => {
  it('stops a pre-apply-config hook that sleeps past 1 s with what it forked, runs apply-exit, and exits 3 with one line naming the hook and the fix', { timeout: 60_000 }, async () => {
    const dir = tmp();
    const hooks = hangingHooks(dir, 'pre-apply-config');
    const b = box();
    const started = Date.now();
    const r = await cli('apply', '-f', DEFAULTS, '-c', 'all-1g.5gb', '-k', hooks, '--hook-timeout', '1', ...b);
    const took = Date.now() - started;
    expect(r.code).toBe(3);
    expect(r.err.trim().split('\n')).toHaveLength(1);
    expect(r.err.trim()).toBe(
      `migpool: pre-apply-config hook [0] (${hooks}:4) /bin/sh -c "sleep 30 & echo $! > sleep.pid; wait" was still running after 1 s and was stopped (SIGTERM to its process group); raise --hook-timeout (or $MIGPOOL_HOOK_TIMEOUT) or fix the hook`,
    );
    // 1 s of hook, the simulated apply and the CLI: far under the hook's 30 s.
    expect(took).toBeLessThan(15_000);
    const sleep = Number(readFileSync(join(dir, 'sleep.pid'), 'utf8'));
    for (let i = 0; i < 40 && alive(sleep); i++) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(alive(sleep)).toBe(false);
    // mig-parted's deferred apply-exit runs after a failed pre-apply hook.
    expect(readFileSync(join(dir, 'exit.log'), 'utf8')).toBe('exit\n');
    // As in mig-parted: the MIG mode was changed before pre-apply-config, the devices were not.
    expect((await cli('assert', '-m', '-f', DEFAULTS, '-c', 'all-1g.5gb', ...b)).code).toBe(0);
    expect((await cli('assert', '-f', DEFAULTS, '-c', 'all-1g.5gb', ...b)).code).toBe(1);
  });

  it('takes the limit from $MIGPOOL_HOOK_TIMEOUT; an apply-start past it changes nothing and skips apply-exit, as mig-parted', { timeout: 60_000 }, async () => {
    const dir = tmp();
    const hooks = hangingHooks(dir, 'apply-start');
    const b = box();
    vi.stubEnv('MIGPOOL_HOOK_TIMEOUT', '0.5');
    const r = await cli('apply', '-f', DEFAULTS, '-c', 'all-1g.5gb', '-k', hooks, ...b);
    expect(r.code).toBe(3);
    expect(r.err).toMatch(/^migpool: apply-start hook \[0\] \(.*hooks\.yaml:4\) .* was still running after 0\.5 s and was stopped/);
    expect(existsSync(join(dir, 'exit.log'))).toBe(false);
    expect((await cli('assert', '-m', '-f', DEFAULTS, '-c', 'all-disabled', ...b)).code).toBe(0);
  });

  it('lets a hook under the limit finish', { timeout: 60_000 }, async () => {
    const dir = tmp();
    const hooks = join(dir, 'hooks.yaml');
    writeFileSync(hooks, `version: v1\nhooks:\n  apply-start:\n  - workdir: ${dir}\n    command: /bin/sh\n    args: ["-c", "sleep 0.2; echo ok > ok.log"]\n`);
    const b = box();
    expect((await cli('apply', '-f', DEFAULTS, '-c', 'all-1g.5gb', '-k', hooks, '--hook-timeout', '5', ...b)).code).toBe(0);
    expect(readFileSync(join(dir, 'ok.log'), 'utf8')).toBe('ok\n');
  });

  it.each(['0', '-1', 'abc', '1e999', '0x10', '', '2147484'])("refuses --hook-timeout '%s' with one line, exit 2, before anything changes", async (value) => {
    const b = box();
    for (const command of ['apply', 'restore']) {
      const args = command === 'apply' ? ['-f', DEFAULTS, '-c', 'all-1g.5gb'] : ['-f', join(tmp(), 'checkpoint.json')];
      const r = await cli(command, ...args, `--hook-timeout=${value}`, ...b);
      expect(r.code).toBe(2);
      expect(r.out).toBe('');
      expect(r.err).toBe(
        `migpool: --hook-timeout '${value}' is not a time limit: give the seconds a hook may run, above 0 and at most 2147483 (default 600)\n`,
      );
    }
    expect((await cli('assert', '-m', '-f', DEFAULTS, '-c', 'all-disabled', ...b)).code).toBe(0);
  });

  it('refuses a bad $MIGPOOL_HOOK_TIMEOUT naming the variable; the flag wins over it', async () => {
    const b = box();
    vi.stubEnv('MIGPOOL_HOOK_TIMEOUT', 'ten');
    const r = await cli('apply', '-f', DEFAULTS, '-c', 'all-1g.5gb', ...b);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/^migpool: MIGPOOL_HOOK_TIMEOUT 'ten' is not a time limit/);
    expect((await cli('apply', '-f', DEFAULTS, '-c', 'all-1g.5gb', '--hook-timeout', '60', ...b)).code).toBe(0);
  });

  it('--help states the option, its default and its variable', async () => {
    const r = await cli('apply', '--help');
    expect(r.out.replace(/\s+/g, ' ')).toMatch(/--hook-timeout <seconds> stop a hook that runs longer than this many seconds, with all it started, and fail \(default 600, or \$MIGPOOL_HOOK_TIMEOUT; mig-parted has no limit\)/);
  });

  it('passes a Ctrl-C (SIGINT) of migpool on to the hook, which runs in a process group of its own', { timeout: 60_000 }, async () => {
    const dir = tmp();
    const hooks = join(dir, 'hooks.yaml');
    writeFileSync(hooks, `version: v1\nhooks:\n  apply-start:\n  - workdir: ${dir}\n    command: /bin/sh\n    args: ["-c", "echo $$ > sh.pid; exec sleep 30"]\n`);
    const child = spawn(process.execPath, [BIN, 'apply', '-f', DEFAULTS, '-c', 'all-1g.5gb', '-k', hooks, ...box()], { stdio: 'ignore' });
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_code, signal) => resolve(signal)));
    const written = (): boolean => existsSync(join(dir, 'sh.pid')) && /^\d+\n$/.test(readFileSync(join(dir, 'sh.pid'), 'utf8'));
    for (let i = 0; i < 200 && !written(); i++) await new Promise((resolve) => setTimeout(resolve, 50));
    const hook = Number(readFileSync(join(dir, 'sh.pid'), 'utf8'));
    expect(alive(hook)).toBe(true);
    child.kill('SIGINT');
    expect(await exited).toBe('SIGINT');
    for (let i = 0; i < 40 && alive(hook); i++) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(alive(hook)).toBe(false);
  });
});
