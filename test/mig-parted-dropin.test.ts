/**
 * migpool in the place of `nvidia-mig-parted`: the command lines the GPU Operator's MIG manager
 * and mig-parted's systemd unit run, unchanged, against the installed `migpool` (bin/migpool.js,
 * over the build) named `nvidia-mig-parted` on PATH, on a simulated machine. Sources in
 * test/fixtures/mig-parted/SOURCE.md.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { BIN } from './run-cli.js';

const FIXTURES = fileURLToPath(new URL('./fixtures/mig-parted/', import.meta.url));
const DEFAULTS = join(FIXTURES, 'config-default.yaml');

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a program with an argument list (no shell), as exec.Command does. */
function run(command: string, args: readonly string[], env: NodeJS.ProcessEnv): Promise<Run> {
  return new Promise((resolve) => {
    execFile(command, args, { env, encoding: 'utf8', timeout: 240_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof (error as { code?: unknown }).code === 'number' ? ((error as { code: number }).code) : -1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** A directory with `nvidia-mig-parted` -> migpool, and the environment that points it at a simulated machine. */
function installAsMigParted(spec: string): { dir: string; env: NodeJS.ProcessEnv } {
  const dir = mkdtempSync(join(tmpdir(), 'migpool-dropin-'));
  mkdirSync(join(dir, 'bin'));
  symlinkSync(BIN, join(dir, 'bin', 'nvidia-mig-parted'));
  const env: NodeJS.ProcessEnv = {
    PATH: `${join(dir, 'bin')}:${process.env['PATH'] ?? ''}`,
    HOME: dir,
    MIGPOOL_SIMULATE: spec,
    MIGPOOL_STATE_DIR: join(dir, 'state'),
  };
  return { dir, env };
}

describe("the GPU Operator's MIG manager (pkg/mig/reconfigure/reconfigure.go) runs migpool as nvidia-mig-parted", () => {
  it('validates, checks, changes the MIG mode and then the devices, with its exact command lines', { timeout: 300_000 }, async () => {
    const { env: base } = installAsMigParted('2xA100-SXM4-40GB');
    // The nvidia-mig-manager container's environment (gpu-operator assets/state-mig-manager/0600_daemonset.yaml).
    const env = { ...base, NODE_NAME: 'gpu-node-1', POD_NAME: 'nvidia-mig-manager-x', POD_NAMESPACE: 'gpu-operator', GPU_CLIENTS_FILE: '/gpu-clients/clients.yaml', DEFAULT_GPU_CLIENTS_NAMESPACE: 'gpu-operator' };
    const f = DEFAULTS;
    const c = 'all-balanced';
    const mp = (...args: string[]) => run('nvidia-mig-parted', args, env);

    // validateMigConfig, isConfigAlreadyApplied, checkMigModeChangeRequired
    expect((await mp('assert', '--valid-config', '-f', f, '-c', c)).code).toBe(0);
    expect((await mp('assert', '-f', f, '-c', c)).code).toBe(1);
    expect((await mp('assert', '--mode-only', '-f', f, '-c', c)).code).toBe(1);
    // applyMigModeChange
    const mode = await mp('-d', 'apply', '--mode-only', '-f', f, '-c', c);
    expect(mode.code).toBe(0);
    expect(mode.stderr).toMatch(/debug: Parsing config file/);
    expect((await mp('-d', 'assert', '--mode-only', '-f', f, '-c', c)).code).toBe(0);
    // applyMigConfig
    const config = await mp('-d', 'apply', '-f', f, '-c', c);
    expect(config.code).toBe(0);
    expect(config.stderr).toMatch(/debug: {3}nvidia-smi mig -i 1 -cgi/);
    expect((await mp('assert', '-f', f, '-c', c)).code).toBe(0);

    // The next label value: the mode is right, the devices are not.
    expect((await mp('assert', '-f', f, '-c', 'all-1g.5gb')).code).toBe(1);
    expect((await mp('assert', '--mode-only', '-f', f, '-c', 'all-1g.5gb')).code).toBe(0);
    expect((await mp('-d', 'apply', '-f', f, '-c', 'all-1g.5gb')).code).toBe(0);
    expect((await mp('assert', '-f', f, '-c', 'all-1g.5gb')).code).toBe(0);
    // An unknown config fails validation, so the manager sets the node's state to failed.
    expect((await mp('assert', '--valid-config', '-f', f, '-c', 'all-9g.99gb')).code).toBe(2);
  });
});

describe("mig-parted's systemd unit (deployments/systemd/service.sh) runs migpool as nvidia-mig-parted", () => {
  it('generates the config at boot, applies the selected one in its three steps with its hooks, and exports', { timeout: 300_000 }, async () => {
    const { dir, env: base } = installAsMigParted('2xA100-SXM4-40GB');
    // /etc/nvidia-mig-manager as the package installs it, with stand-ins for utils.sh and hooks.sh.
    const etc = join(dir, 'etc-nvidia-mig-manager');
    mkdirSync(etc);
    copyFileSync(join(FIXTURES, 'systemd', 'service.sh'), join(etc, 'service.sh'));
    copyFileSync(join(FIXTURES, 'systemd', 'utils-stand-in.sh'), join(etc, 'utils.sh'));
    copyFileSync(join(FIXTURES, 'systemd', 'hooks-stand-in.sh'), join(etc, 'hooks.sh'));
    writeFileSync(join(etc, 'hooks.yaml'), readFileSync(join(FIXTURES, 'systemd', 'hooks-default.yaml'), 'utf8').replaceAll('/etc/nvidia-mig-manager', etc));
    copyFileSync(DEFAULTS, join(etc, 'config-default.yaml'));
    // override.conf's Environment= line, with a config the node has to change for.
    expect(readFileSync(join(FIXTURES, 'systemd', 'override.conf'), 'utf8')).toContain('Environment="MIG_PARTED_SELECTED_CONFIG=all-disabled"');
    const env = { ...base, MIG_PARTED_SELECTED_CONFIG: 'all-balanced' };

    const boot = await run('/bin/bash', [join(etc, 'service.sh')], env);
    expect(boot.stderr).not.toMatch(/^(Error|Warning)/m);
    expect(boot.code).toBe(0);
    // The first assert says why it failed, on stderr; mig-parted says less ("assertion failure").
    expect(boot.stderr).toContain("migpool: config 'all-balanced' is not applied (MIG mode): GPU 0: MIG mode is disabled (pending disabled), want enabled");
    // generate-config wrote the config the unit then applied from.
    const generated = readFileSync(join(etc, 'config.yaml'), 'utf8');
    expect(generated).toMatch(/^# DO NOT EDIT: Auto-generated from hardware on every boot\.\n# To use a custom config, set MIG_PARTED_CONFIG_FILE\.\n\nversion: v1\nmig-configs:\n/);
    expect(generated).toContain('  all-balanced:\n');
    // The three nvidia-mig-parted calls of service.sh, as `set -x` traces them.
    expect(boot.stderr).toContain('+ nvidia-mig-parted assert --mode-only\n');
    expect(boot.stderr).toContain('+ nvidia-mig-parted apply --mode-only --skip-reset\n');
    expect(boot.stderr).toContain('+ nvidia-mig-parted apply --mode-only\n');
    expect(boot.stderr).toContain('+ nvidia-mig-parted apply\n');
    // export printed the layout it reached.
    expect(boot.stdout).toContain('mig-configs:\n  current:\n  - devices: all\n    mig-enabled: true\n    mig-devices:\n      1g.5gb: 2\n      2g.10gb: 1\n      3g.20gb: 1\n');
    const calls = readFileSync(join(etc, 'calls.log'), 'utf8').trim().split('\n');
    expect(calls).toEqual([
      'select_hooks_file',
      // apply --mode-only --skip-reset
      'hook apply-start all-balanced',
      'hook pre-apply-mode',
      'hook apply-exit',
      'hook refresh-cdi',
      'assert_gpu_reset_available',
      // apply --mode-only: the reset
      'hook apply-start all-balanced',
      'hook pre-apply-mode',
      'hook apply-exit',
      'hook refresh-cdi',
      'clear_reboot_state',
      'assert_module_loaded nvidia',
      // apply
      'hook apply-start all-balanced',
      'hook pre-apply-config',
      'hook apply-exit',
      'hook refresh-cdi',
    ]);

    // The next boot: nothing to change, no hook but apply-start and apply-exit.
    const again = await run('/bin/bash', [join(etc, 'service.sh')], env);
    expect(again.code).toBe(0);
    expect(again.stderr).not.toContain('+ nvidia-mig-parted apply --mode-only --skip-reset');
    const more = readFileSync(join(etc, 'calls.log'), 'utf8').trim().split('\n').slice(calls.length);
    expect(more).toEqual(['select_hooks_file', 'clear_reboot_state', 'assert_module_loaded nvidia', 'hook apply-start all-balanced', 'hook apply-exit', 'hook refresh-cdi']);
  });
});
