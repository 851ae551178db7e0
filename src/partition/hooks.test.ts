import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MigpoolError } from '../errors.js';
import { HOOK_POINTS, hookEnv, hooksAt, MIG_PARTED_HOOK_ENV_NAMES, migPartedHookEnv, parseMigPartedHooks } from './hooks.js';

const FIXTURES = join(import.meta.dirname, '../../test/fixtures/mig-parted');
const read = (name: string): string => readFileSync(join(FIXTURES, name), 'utf8');

describe('parseMigPartedHooks', () => {
  it("reads mig-parted's hooks-default.yaml", () => {
    const hooks = parseMigPartedHooks(read('hooks-default.yaml'), 'hooks-default.yaml');
    expect(hooks.version).toBe('v1');
    expect(hooks.warnings).toEqual([]);
    expect([...hooks.hooks.keys()]).toEqual([...HOOK_POINTS]);
    expect(hooksAt(hooks, 'pre-apply-mode')).toHaveLength(2);
    expect(hooksAt(hooks, 'apply-start')).toEqual([
      {
        workdir: '/etc/nvidia-mig-manager',
        command: '/bin/bash',
        args: ['-x', '-c', 'source hooks.sh; persist-config ${MIG_PARTED_SELECTED_CONFIG}'],
        envs: {},
        file: 'hooks-default.yaml',
        line: 6,
      },
    ]);
    expect(hooksAt(null, 'apply-exit')).toEqual([]);
  });

  it('accepts what mig-parted accepts and warns about what it ignores', () => {
    const hooks = parseMigPartedHooks(read('hooks-lenient.yaml'), 'hooks-lenient.yaml');
    expect(hooks.version).toBe('v2');
    // Case-insensitive field names, scalars turned into strings (sigs.k8s.io/yaml + encoding/json).
    expect(hooksAt(hooks, 'apply-start')[0]).toMatchObject({ command: '/bin/echo', args: ['1', 'true', '2.5', ''], envs: { RETRIES: '3', DEBUG: 'true' } });
    expect(hooks.hooks.get('post-apply')).toHaveLength(1);
    expect(hooksAt(hooks, 'pre-apply-config')).toEqual([]);
    expect(hooksAt(hooks, 'apply-exit')[0]).toMatchObject({ command: '', args: [] });
    expect(hooks.warnings).toEqual([
      'hooks-lenient.yaml:4: comment: unknown field, ignored by mig-parted; the top level holds version and hooks',
      'hooks-lenient.yaml:12: hooks.apply-start[0].timeout: unknown field, ignored by mig-parted; a hook holds command, args, envs, workdir',
      'hooks-lenient.yaml:13: hooks.post-apply: unknown hook name, never run by mig-parted; the hook points are apply-start, pre-apply-mode, pre-apply-config, apply-exit',
      expect.stringMatching(/^hooks-lenient\.yaml:17: hooks\.apply-exit\[0\]: empty hook/),
      "hooks-lenient.yaml:3: version: 'v2'; mig-parted does not check it, but write \"version: v1\"",
    ]);
  });

  it('takes an empty file as no hooks', () => {
    const hooks = parseMigPartedHooks('', 'h.yaml');
    expect(hooks.hooks.size).toBe(0);
    expect(hooks.warnings).toEqual([]);
    expect(parseMigPartedHooks('hooks: {}\n', 'h.yaml').warnings).toEqual(['h.yaml:1: version: missing; mig-parted does not check it, but write "version: v1"']);
  });

  const dir = join(FIXTURES, 'invalid');
  for (const name of readdirSync(dir).filter((f) => f.startsWith('hooks-'))) {
    it(`rejects ${name} with file:line and field`, () => {
      const text = readFileSync(join(dir, name), 'utf8');
      const [, line, field] = /^# expect: (\d+) (.*)$/m.exec(text) ?? [];
      let err: unknown;
      try {
        parseMigPartedHooks(text, name);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(MigpoolError);
      expect((err as MigpoolError).code).toBe('BAD_INPUT');
      expect((err as MigpoolError).message.startsWith(`${name}:${line}: ${field}: `)).toBe(true);
    });
  }

  it('rejects other shapes that fail to decode in mig-parted', () => {
    expect(() => parseMigPartedHooks('- a\n', 'h.yaml')).toThrow(/^h\.yaml:1: expected a mapping/);
    expect(() => parseMigPartedHooks('hooks: [a]\n', 'h.yaml')).toThrow(/^h\.yaml:1: hooks: expected a mapping of hook names/);
    expect(() => parseMigPartedHooks('hooks:\n  apply-start: [3]\n', 'h.yaml')).toThrow(/^h\.yaml:2: hooks\.apply-start\[0\]: expected a mapping with command/);
    expect(() => parseMigPartedHooks('hooks:\n  apply-start:\n  - command: [a]\n', 'h.yaml')).toThrow(/^h\.yaml:3: hooks\.apply-start\[0\]\.command: must be a string/);
    expect(() => parseMigPartedHooks('version: {a: 1}\n', 'h.yaml')).toThrow(/version: must be a string/);
  });
});

describe('hook environment (apply.go GetHooksEnvsMap, hooks.go Combine)', () => {
  it('sets the five MIG_PARTED_* variables', () => {
    expect(MIG_PARTED_HOOK_ENV_NAMES).toEqual(['MIG_PARTED_CONFIG_FILE', 'MIG_PARTED_SELECTED_CONFIG', 'MIG_PARTED_HOOKS_FILE', 'MIG_PARTED_SKIP_RESET', 'MIG_PARTED_MODE_CHANGE_ONLY']);
    expect(migPartedHookEnv({ configFile: '/etc/config.yaml', selectedConfig: 'all-balanced' })).toEqual({
      MIG_PARTED_CONFIG_FILE: '/etc/config.yaml',
      MIG_PARTED_SELECTED_CONFIG: 'all-balanced',
      MIG_PARTED_HOOKS_FILE: '',
      MIG_PARTED_SKIP_RESET: 'false',
      MIG_PARTED_MODE_CHANGE_ONLY: 'false',
    });
    const env = migPartedHookEnv({ configFile: '-', selectedConfig: 'x', hooksFile: 'hooks.yaml', skipReset: true, modeOnly: true });
    expect(Object.keys(env)).toEqual([...MIG_PARTED_HOOK_ENV_NAMES]);
    expect(env).toMatchObject({ MIG_PARTED_HOOKS_FILE: 'hooks.yaml', MIG_PARTED_SKIP_RESET: 'true', MIG_PARTED_MODE_CHANGE_ONLY: 'true' });
  });

  it("lets mig-parted's variables win over a hook's envs", () => {
    const hook = { command: 'x', args: [], envs: { A: '1', MIG_PARTED_SELECTED_CONFIG: 'mine' }, workdir: '', file: 'h.yaml', line: 1 };
    expect(hookEnv(hook, { MIG_PARTED_SELECTED_CONFIG: 'all-disabled' })).toEqual({ A: '1', MIG_PARTED_SELECTED_CONFIG: 'all-disabled' });
  });
});
