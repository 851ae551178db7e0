/**
 * NVIDIA mig-parted's hooks file (`version: v1`, `hooks: {apply-start: [{workdir, command, args,
 * envs}], ...}`) and the environment mig-parted gives hooks. Pure: the runner is
 * exec/hooks-runner.ts.
 *
 * Sources (github.com/NVIDIA/mig-parted): api/hooks/v1/hooks.go (the file's shape, how a hook
 * runs and how its env is combined), cmd/nvidia-mig-parted/apply/apply.go (ParseHooksFile, the
 * flags and their env variables, GetHooksEnvsMap, the order of hook points),
 * cmd/apply/hooks.go (the four hook point names).
 *
 * mig-parted decodes this file with sigs.k8s.io/yaml into plain Go structs, which validates
 * little: `version` is never checked, unknown fields and unknown hook names are ignored, field
 * names match case-insensitively, and numbers or booleans where a string is expected are turned
 * into strings. This parser accepts the same files and reports those cases in `warnings`; it
 * rejects (BAD_INPUT, `file:line: field: ...`) exactly what fails to decode there: a top level,
 * `hooks`, hook list, hook, `args` or `envs` of the wrong shape. Stricter: duplicate keys.
 */
import { describeNode, inputError, readYamlTree } from './config.js';
import type { YamlNode, YamlPair } from './config.js';

/** The hook points mig-parted runs, in the order of an apply (cmd/apply/hooks.go). */
export const HOOK_POINTS = ['apply-start', 'pre-apply-mode', 'pre-apply-config', 'apply-exit'] as const;
export type HookPoint = (typeof HOOK_POINTS)[number];

/** One hook: a command run with an argument list (never a shell). */
export interface HookSpec {
  /** Program to run; mig-parted looks a bare name up in its own PATH. */
  command: string;
  args: string[];
  /** Extra environment variables of this hook. */
  envs: Record<string, string>;
  /** Working directory; "" for the caller's. */
  workdir: string;
  /** Where the hook is written: `file` and 1-based `line`. */
  file: string;
  line: number;
}

export interface MigPartedHooks {
  file: string;
  /** As written ("" when absent); mig-parted ignores it, a value other than v1 is warned about. */
  version: string;
  /** Hook name to hooks, file order; names other than {@link HOOK_POINTS} never run. */
  hooks: Map<string, HookSpec[]>;
  /** `file:line: field: ...` for what mig-parted silently ignores. */
  warnings: string[];
}

const SPEC_FIELDS = ['version', 'hooks'] as const;
const HOOK_FIELDS = ['command', 'args', 'envs', 'workdir'] as const;

/** encoding/json field lookup: an exact match first, then a case-insensitive one. */
function fieldFor<T extends string>(key: string, fields: readonly T[]): T | undefined {
  return fields.find((f) => f === key) ?? fields.find((f) => f.toLowerCase() === key.toLowerCase());
}

/** A string field as sigs.k8s.io/yaml + encoding/json fill it: scalars become text, null is "". */
function stringValue(node: YamlNode, file: string, field: string): string {
  if (node.kind !== 'scalar') throw inputError(file, node.line, field, `must be a string, got ${describeNode(node)}; quote the value`);
  if (node.value === null) return '';
  return String(node.value);
}

/**
 * Parses a mig-parted hooks file. An empty file is no hooks (mig-parted accepts it too).
 */
export function parseMigPartedHooks(text: string, file: string): MigPartedHooks {
  const result: MigPartedHooks = { file, version: '', hooks: new Map(), warnings: [] };
  const warn = (line: number, field: string, message: string): void => {
    result.warnings.push(`${file}:${line}: ${field}: ${message}`);
  };
  const root = readYamlTree(text, file);
  if (root === null || (root.kind === 'scalar' && root.value === null)) return result;
  if (root.kind !== 'map') throw inputError(file, root.line, '', `expected a mapping with "version" and "hooks", got ${describeNode(root)}`);
  let versionLine = root.line;
  for (const pair of root.pairs) {
    const field = fieldFor(pair.key, SPEC_FIELDS);
    if (field === 'version') {
      result.version = stringValue(pair.value, file, pair.key);
      versionLine = pair.line;
    } else if (field === 'hooks') {
      parseHookMap(pair, file, result, warn);
    } else {
      warn(pair.line, pair.key, `unknown field, ignored by mig-parted; the top level holds ${SPEC_FIELDS.join(' and ')}`);
    }
  }
  if (result.version !== 'v1') warn(versionLine, 'version', `${result.version === '' ? 'missing' : `'${result.version}'`}; mig-parted does not check it, but write "version: v1"`);
  return result;
}

function parseHookMap(pair: YamlPair, file: string, result: MigPartedHooks, warn: (line: number, field: string, message: string) => void): void {
  const node = pair.value;
  if (node.kind === 'scalar' && node.value === null) return;
  if (node.kind !== 'map') throw inputError(file, node.line, pair.key, `expected a mapping of hook names (${HOOK_POINTS.join(', ')}) to lists of hooks, got ${describeNode(node)}`);
  for (const point of node.pairs) {
    const field = `hooks.${point.key}`;
    if (!(HOOK_POINTS as readonly string[]).includes(point.key)) {
      warn(point.line, field, `unknown hook name, never run by mig-parted; the hook points are ${HOOK_POINTS.join(', ')}`);
    }
    const list = point.value;
    if (list.kind === 'scalar' && list.value === null) {
      result.hooks.set(point.key, []);
      continue;
    }
    if (list.kind !== 'seq') throw inputError(file, list.line, field, `expected a list of hooks ("- command: ..."), got ${describeNode(list)}`);
    result.hooks.set(point.key, list.items.map((item, i) => parseHook(item, file, `${field}[${i}]`, warn)));
  }
}

function parseHook(node: YamlNode, file: string, field: string, warn: (line: number, field: string, message: string) => void): HookSpec {
  const hook: HookSpec = { command: '', args: [], envs: {}, workdir: '', file, line: node.line };
  if (node.kind === 'scalar' && node.value === null) {
    warn(node.line, field, 'empty hook; mig-parted fails when it runs it ("exec: no command"); give it a command');
    return hook;
  }
  if (node.kind !== 'map') throw inputError(file, node.line, field, `expected a mapping with command (and args, envs, workdir), got ${describeNode(node)}`);
  for (const pair of node.pairs) {
    const f = `${field}.${pair.key}`;
    const value = pair.value;
    switch (fieldFor(pair.key, HOOK_FIELDS)) {
      case 'command':
        hook.command = stringValue(value, file, f);
        break;
      case 'workdir':
        hook.workdir = stringValue(value, file, f);
        break;
      case 'args':
        if (value.kind === 'scalar' && value.value === null) {
          hook.args = [];
        } else if (value.kind === 'seq') {
          hook.args = value.items.map((item, i) => stringValue(item, file, `${f}[${i}]`));
        } else {
          throw inputError(file, value.line, f, `must be a list of strings such as ["-c", "echo hi"], got ${describeNode(value)}`);
        }
        break;
      case 'envs':
        if (value.kind === 'map') {
          // encoding/json decodes into the existing map, so repeated `envs` keys merge.
          for (const env of value.pairs) hook.envs[env.key] = stringValue(env.value, file, `${f}.${env.key}`);
        } else if (!(value.kind === 'scalar' && value.value === null)) {
          throw inputError(file, value.line, f, `must be a mapping of variable names to values such as {FOO: bar}, got ${describeNode(value)}`);
        }
        break;
      default:
        warn(pair.line, f, `unknown field, ignored by mig-parted; a hook holds ${HOOK_FIELDS.join(', ')}`);
    }
  }
  if (hook.command === '') warn(node.line, `${field}.command`, 'missing; mig-parted fails when it runs this hook ("exec: no command")');
  return hook;
}

/** The hooks of one point ([] when the file has none or there is no hooks file). */
export function hooksAt(hooks: MigPartedHooks | null, point: HookPoint): HookSpec[] {
  return hooks?.hooks.get(point) ?? [];
}

/**
 * The variables mig-parted sets for every hook, in the order of its `apply` flags
 * (apply.go BuildCommand): each flag's env variable, set to the flag's value.
 */
export const MIG_PARTED_HOOK_ENV_NAMES = [
  'MIG_PARTED_CONFIG_FILE',
  'MIG_PARTED_SELECTED_CONFIG',
  'MIG_PARTED_HOOKS_FILE',
  'MIG_PARTED_SKIP_RESET',
  'MIG_PARTED_MODE_CHANGE_ONLY',
] as const;

/** What an apply was asked to do, as mig-parted's `apply` flags say it. */
export interface ApplySettings {
  /** `--config-file` as given (a path, or `-` for stdin). */
  configFile: string;
  /**
   * `--selected-config`. mig-parted fills it in when the flag is empty and the file has a single
   * config, so pass the resolved name (config.ts resolveSelectedConfigName).
   */
  selectedConfig: string;
  /** `--hooks-file` as given; "" or absent when there is none. */
  hooksFile?: string;
  /** `--skip-reset`; default false. */
  skipReset?: boolean;
  /** `--mode-only`; default false. */
  modeOnly?: boolean;
}

/**
 * The env mig-parted passes to hooks (apply.go GetHooksEnvsMap): every variable of
 * {@link MIG_PARTED_HOOK_ENV_NAMES} set, strings as given and booleans as `true` / `false`
 * (Go's `%v`).
 */
export function migPartedHookEnv(settings: ApplySettings): Record<(typeof MIG_PARTED_HOOK_ENV_NAMES)[number], string> {
  return {
    MIG_PARTED_CONFIG_FILE: settings.configFile,
    MIG_PARTED_SELECTED_CONFIG: settings.selectedConfig,
    MIG_PARTED_HOOKS_FILE: settings.hooksFile ?? '',
    MIG_PARTED_SKIP_RESET: String(settings.skipReset ?? false),
    MIG_PARTED_MODE_CHANGE_ONLY: String(settings.modeOnly ?? false),
  };
}

/**
 * The environment one hook runs with in mig-parted (hooks.go HookSpec.Run,
 * `h.Envs.Combine(envs)`): the hook's own `envs`, then mig-parted's variables, which win on a
 * clash. mig-parted passes nothing else: no PATH, no HOME (exec/hooks-runner.ts adds the
 * process environment unless told not to).
 */
export function hookEnv(hook: HookSpec, migPartedEnv: Readonly<Record<string, string>>): Record<string, string> {
  return { ...hook.envs, ...migPartedEnv };
}
