import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MigpoolError } from '../errors.js';
import { migPartedHookEnv, parseMigPartedHooks } from '../partition/hooks.js';
import type { HookSpec } from '../partition/hooks.js';
import { applyWithHooks, checkHooksRunnable, runHooks } from './hooks-runner.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'migpool-hooks-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

const NODE = process.execPath;
const hook = (script: string, extra: Partial<HookSpec> = {}): HookSpec => ({ command: NODE, args: ['-e', script], envs: {}, workdir: '', file: 'hooks.yaml', line: 3, ...extra });
/** A hook that appends `tag` to log.txt in the temp dir. */
const logs = (tag: string): HookSpec => hook(`require('fs').appendFileSync(${JSON.stringify(join(dir, 'log.txt'))}, ${JSON.stringify(`${tag}\n`)})`);
const logged = (): string[] => {
  try {
    return readFileSync(join(dir, 'log.txt'), 'utf8').trim().split('\n');
  } catch {
    return [];
  }
};
const env = migPartedHookEnv({ configFile: 'config.yaml', selectedConfig: 'all-balanced', hooksFile: 'hooks.yaml' });

async function failure(p: Promise<unknown>): Promise<MigpoolError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(MigpoolError);
    return e as MigpoolError;
  }
  throw new Error('expected a failure');
}

describe('runHooks', () => {
  it('runs each hook in its workdir with process env, hook envs and mig-parted variables', async () => {
    const out = join(dir, 'out.json');
    const script = `require('fs').writeFileSync(${JSON.stringify(out)}, JSON.stringify({ cwd: process.cwd(), argv: process.argv.slice(1), env: process.env }))`;
    await runHooks('apply-start', [{ ...hook(script), args: ['-e', script, 'a b', '$HOME;'], workdir: dir, envs: { EXTRA: 'x', MIG_PARTED_SELECTED_CONFIG: 'overridden' } }], env);
    const seen = JSON.parse(readFileSync(out, 'utf8')) as { cwd: string; argv: string[]; env: Record<string, string> };
    expect(seen.cwd).toBe(dir);
    expect(seen.argv).toEqual(['a b', '$HOME;']);
    expect(seen.env).toMatchObject({ EXTRA: 'x', MIG_PARTED_SELECTED_CONFIG: 'all-balanced', MIG_PARTED_CONFIG_FILE: 'config.yaml', MIG_PARTED_SKIP_RESET: 'false' });
    expect(seen.env.PATH).toBe(process.env.PATH);
  });

  it('with inheritEnv false passes only what mig-parted passes', async () => {
    const out = join(dir, 'env.json');
    await runHooks('apply-start', [hook(`require('fs').writeFileSync(${JSON.stringify(out)}, JSON.stringify(process.env))`, { envs: { ONLY: '1' } })], env, { inheritEnv: false });
    const seen = JSON.parse(readFileSync(out, 'utf8')) as Record<string, string>;
    expect(Object.keys(seen).filter((k) => k !== 'LC_CTYPE').sort()).toEqual(['MIG_PARTED_CONFIG_FILE', 'MIG_PARTED_HOOKS_FILE', 'MIG_PARTED_MODE_CHANGE_ONLY', 'MIG_PARTED_SELECTED_CONFIG', 'MIG_PARTED_SKIP_RESET', 'ONLY']);
  });

  it('looks a bare command up in our PATH even with inheritEnv false', async () => {
    await expect(runHooks('apply-start', [{ command: 'node', args: ['-e', ''], envs: {}, workdir: '', file: 'h.yaml', line: 1 }], env, { inheritEnv: false })).resolves.toBeUndefined();
  });

  it('stops at the first failure, naming point, hook, command and exit status', async () => {
    const err = await failure(runHooks('pre-apply-mode', [logs('one'), hook("console.error('services busy'); process.exit(3)"), logs('three')], env));
    expect(err.code).toBe('RUNTIME');
    expect(err.message).toMatch(/^pre-apply-mode hook \[1\] \(hooks\.yaml:3\) \S*node -e .* failed with exit status 3: services busy$/);
    expect(err.details).toMatchObject({ point: 'pre-apply-mode', index: 1, exitCode: 3 });
    expect(logged()).toEqual(['one']);
  });

  it('reports a missing command, a missing workdir, an empty command and a timeout', async () => {
    expect((await failure(runHooks('apply-exit', [{ ...hook(''), command: join(dir, 'nope') }], env))).message).toMatch(/could not start: command .*nope not found/);
    expect((await failure(runHooks('apply-exit', [hook('', { workdir: join(dir, 'missing') })], env))).message).toMatch(/could not start: workdir .*missing does not exist/);
    expect((await failure(runHooks('apply-exit', [hook('', { command: '' })], env))).message).toMatch(/^apply-exit hook \[0\] \(hooks\.yaml:3\) has no command/);
  });

  it('runs hooks parsed from a file', async () => {
    const out = join(dir, 'sel.txt');
    const yaml = `version: v1\nhooks:\n  apply-start:\n  - command: ${JSON.stringify(NODE)}\n    args: ["-e", "require('fs').writeFileSync(process.env.OUT, process.env.MIG_PARTED_SELECTED_CONFIG)"]\n    envs: {OUT: ${JSON.stringify(out)}}\n`;
    writeFileSync(join(dir, 'hooks.yaml'), yaml);
    const hooks = parseMigPartedHooks(yaml, join(dir, 'hooks.yaml'));
    await runHooks('apply-start', hooks.hooks.get('apply-start') ?? [], env);
    expect(readFileSync(out, 'utf8')).toBe('all-balanced');
  });
});

/** A hook run by /bin/sh (a script that forks its commands, as mig-parted's hooks.sh does). */
const shell = (script: string): HookSpec => ({ command: '/bin/sh', args: ['-c', script], envs: {}, workdir: dir, file: 'hooks.yaml', line: 7 });
/** Whether a process is still there (a zombie counts as gone). */
function alive(pid: number): boolean {
  try {
    return !/^\S+ \(.*\) [ZX] /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}
const pidIn = (file: string): number => Number(readFileSync(join(dir, file), 'utf8').trim());
async function gone(pid: number): Promise<boolean> {
  for (let i = 0; i < 40 && alive(pid); i++) await new Promise((r) => setTimeout(r, 50));
  return !alive(pid);
}

describe('a time limit on hooks (timeoutMs)', () => {
  it('stops a hook past the limit and fails naming the hook, the limit and the fix', async () => {
    const err = await failure(runHooks('apply-exit', [hook('setTimeout(() => {}, 10000)')], env, { timeoutMs: 200, timeoutFix: 'raise --hook-timeout or fix the hook' }));
    expect(err.code).toBe('RUNTIME');
    expect(err.message).toMatch(/^apply-exit hook \[0\] \(hooks\.yaml:3\) \S*node -e .* was still running after 0\.2 s and was stopped \(SIGTERM to its process group\); raise --hook-timeout or fix the hook$/);
    expect(err.details).toMatchObject({ timedOut: true, timeoutMs: 200, signal: 'SIGTERM' });
  });

  it('stops what a shell script hook started too, without waiting for it to let go of the output pipe', async () => {
    const started = Date.now();
    // The shell forks sleep, which holds the hook's stdout and stderr; execFile's timeout signalled only the shell.
    const err = await failure(runHooks('pre-apply-config', [shell('sleep 30 & echo $! > sleep.pid; wait; echo done')], env, { timeoutMs: 500 }));
    expect(err.message).toMatch(/^pre-apply-config hook \[0\] \(hooks\.yaml:7\) \/bin\/sh -c .* was still running after 0\.5 s/);
    expect(Date.now() - started).toBeLessThan(3000);
    expect(await gone(pidIn('sleep.pid'))).toBe(true);
  });

  it('kills the process group of a hook that ignores SIGTERM after the grace time', async () => {
    const started = Date.now();
    const err = await failure(runHooks('pre-apply-mode', [shell('trap "" TERM; sleep 30 & echo $! > sleep.pid; wait')], env, { timeoutMs: 300, killGraceMs: 300 }));
    expect(err.message).toMatch(/was still running after 0\.3 s and was stopped \(SIGTERM to its process group, then SIGKILL\)/);
    expect(Date.now() - started).toBeLessThan(3000);
    expect(await gone(pidIn('sleep.pid'))).toBe(true);
  });

  it('kills what is left of the group once a timed-out hook has ended, also a child that ignores SIGTERM and let go of the pipes', async () => {
    const err = await failure(runHooks('pre-apply-mode', [shell('(trap "" TERM; exec sleep 30) >/dev/null 2>&1 & echo $! > sleep.pid; wait')], env, { timeoutMs: 300, killGraceMs: 20_000 }));
    expect(err.details).toMatchObject({ timedOut: true });
    expect(await gone(pidIn('sleep.pid'))).toBe(true);
  });

  it('does not wait for what a finished hook left running in the background, and leaves it running, as mig-parted', async () => {
    const started = Date.now();
    await runHooks('apply-start', [shell('sleep 20 & echo $! > bg.pid')], env, { timeoutMs: 10_000 });
    expect(Date.now() - started).toBeLessThan(5000);
    const pid = pidIn('bg.pid');
    expect(alive(pid)).toBe(true);
    process.kill(pid, 'SIGKILL');
  });

  it('runs apply-exit after a pre-apply hook timed out (mig-parted defers apply-exit once apply-start succeeded)', async () => {
    const hooks = { file: 'hooks.yaml', version: 'v1', hooks: new Map(Object.entries({ 'pre-apply-mode': [hook('setTimeout(() => {}, 10000)')], 'apply-exit': [logs('exit')] })), warnings: [] };
    let changed = false;
    const err = await failure(
      applyWithHooks(
        hooks,
        env,
        async (runPoint) => {
          await runPoint('pre-apply-mode');
          changed = true;
        },
        { timeoutMs: 200 },
      ),
    );
    expect(err.details).toMatchObject({ point: 'pre-apply-mode', timedOut: true });
    expect(changed).toBe(false);
    expect(logged()).toEqual(['exit']);
  });
});

describe('applyWithHooks (apply.go ApplyMigConfigWithHooks)', () => {
  const hooksWith = (points: Record<string, HookSpec[]>) => ({ file: 'hooks.yaml', version: 'v1', hooks: new Map(Object.entries(points)), warnings: [] });

  it('runs apply-start, the pre-apply points the apply asks for, then apply-exit', async () => {
    const hooks = hooksWith({ 'apply-start': [logs('start')], 'pre-apply-mode': [logs('mode')], 'pre-apply-config': [logs('config')], 'apply-exit': [logs('exit')] });
    const result = await applyWithHooks(hooks, env, async (runPoint) => {
      await runPoint('pre-apply-config');
      return 42;
    });
    expect(result).toBe(42);
    expect(logged()).toEqual(['start', 'config', 'exit']);
  });

  it('runs apply-exit when the apply fails and keeps the apply error', async () => {
    const hooks = hooksWith({ 'apply-exit': [logs('exit'), hook('process.exit(1)')] });
    const err = await failure(
      applyWithHooks(hooks, env, async () => {
        throw new MigpoolError('DEVICE', 'nvidia-smi failed');
      }),
    );
    expect(err.message).toBe('nvidia-smi failed');
    expect(String(err.details.applyExitError)).toMatch(/^apply-exit hook \[1\].*exit status 1/);
    expect(logged()).toEqual(['exit']);
  });

  it('runs apply-exit when a pre-apply hook fails', async () => {
    const hooks = hooksWith({ 'pre-apply-mode': [hook('process.exit(2)')], 'apply-exit': [logs('exit')] });
    const err = await failure(applyWithHooks(hooks, env, async (runPoint) => runPoint('pre-apply-mode')));
    expect(err.message).toMatch(/^pre-apply-mode hook \[0\].*exit status 2/);
    expect(logged()).toEqual(['exit']);
  });

  it('throws an apply-exit failure after a successful apply', async () => {
    const err = await failure(applyWithHooks(hooksWith({ 'apply-exit': [hook('process.exit(4)')] }), env, async () => 'done'));
    expect(err.message).toMatch(/^apply-exit hook \[0\].*exit status 4/);
  });

  it('does not run the apply or apply-exit when apply-start fails, as mig-parted', async () => {
    let applied = false;
    const hooks = hooksWith({ 'apply-start': [hook('process.exit(5)')], 'apply-exit': [logs('exit')] });
    const err = await failure(
      applyWithHooks(hooks, env, async () => {
        applied = true;
      }),
    );
    expect(err.message).toMatch(/^apply-start hook \[0\].*exit status 5/);
    expect(applied).toBe(false);
    expect(logged()).toEqual([]);
  });

  it('works without a hooks file', async () => {
    await expect(applyWithHooks(null, env, async (runPoint) => runPoint('pre-apply-mode'))).resolves.toBeUndefined();
  });
});

describe('hook output and checks (mig-parted -d, and before an apply)', () => {
  it('copies each line of a hook\'s stdout and stderr to the given sink, the unterminated last line too', async () => {
    const out: string[] = [];
    const err: string[] = [];
    const started: string[] = [];
    await runHooks('apply-start', [hook("process.stdout.write('a\\nb'); process.stderr.write('c\\n')")], env, { output: { out: (l) => out.push(l), err: (l) => err.push(l) }, onStart: (w) => started.push(w) });
    expect(out).toEqual(['a', 'b']);
    expect(err).toEqual(['c']);
    expect(started).toEqual([expect.stringMatching(/^apply-start hook \[0\] \(hooks\.yaml:3\) /)]);
  });

  it('checkHooksRunnable names the file, line and field of a hook that cannot start', () => {
    const hooks = parseMigPartedHooks(`version: v1\nhooks:\n  apply-exit:\n  - command: ${NODE}\n  - command: /nonexistent/bin/x\n`, 'h.yaml');
    expect(() => checkHooksRunnable(hooks)).toThrow(/^h\.yaml:5: hooks\.apply-exit\[1\]\.command: \/nonexistent\/bin\/x is not an executable file/);
    expect(() => checkHooksRunnable(parseMigPartedHooks(`hooks:\n  apply-exit:\n  - command: ${NODE}\n    workdir: ${dir}\n`, 'h.yaml'))).not.toThrow();
    expect(() => checkHooksRunnable(null)).not.toThrow();
  });
});
