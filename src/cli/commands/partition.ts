import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { commandOf, executePlans, planAll } from '../../control/apply.js';
import { JournalFile } from '../../control/journal.js';
import { readCurrentState } from '../../control/state-reader.js';
import { badInput, MigpoolError } from '../../errors.js';
import { applyWithHooks } from '../../exec/hooks-runner.js';
import { parseMigPartedConfig, resolveSelectedConfigName, selectConfig } from '../../partition/config.js';
import { assertDifferences, desiredStates } from '../../control/mig-config.js';
import { migPartedHookEnv, parseMigPartedHooks } from '../../partition/hooks.js';
import { openGpuPort, stateDirOf, type DeviceOptions } from '../device.js';
import { writeJson, type Io } from '../io.js';
import { withDeviceOptions } from './status.js';

interface ConfigOptions extends DeviceOptions {
  configFile?: string;
  selectedConfig?: string;
}

/** Reads a file the user named, as a one-line error when it cannot be read. */
function readUserFile(path: string, what: string): string {
  try {
    return readFileSync(path === '-' ? 0 : path, 'utf8');
  } catch (e) {
    throw badInput(`cannot read ${what} '${path}': ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
}

/** The config file and name from the flags, else mig-parted's environment variables. */
function loadSelection(opts: ConfigOptions) {
  const file = opts.configFile ?? process.env['MIG_PARTED_CONFIG_FILE'];
  if (!file) throw badInput('no config file: pass -f FILE (or set MIG_PARTED_CONFIG_FILE)');
  const config = parseMigPartedConfig(readUserFile(file, 'config file'), file);
  const name = resolveSelectedConfigName(config, opts.selectedConfig ?? process.env['MIG_PARTED_SELECTED_CONFIG'] ?? null);
  return { file, name, entries: selectConfig(config, name) };
}

function flag(value: boolean | undefined, env: string): boolean {
  if (value) return true;
  const v = process.env[env];
  return v !== undefined && /^(1|true|yes)$/i.test(v);
}

/** `migpool apply`, `migpool assert`: mig-parted's commands, changing only what must change. */
export function registerPartition(program: Command, io: Io): void {
  withDeviceOptions(program.command('apply').description('apply a mig-parted config: keep matching instances, change only the rest'))
    .option('-f, --config-file <file>', 'mig-parted v1 config file (or $MIG_PARTED_CONFIG_FILE)')
    .option('-c, --selected-config <name>', 'config to apply (or $MIG_PARTED_SELECTED_CONFIG)')
    .option('-k, --hooks-file <file>', "mig-parted hooks file (or $MIG_PARTED_HOOKS_FILE)")
    .option('--dry-run', 'print the plan as the nvidia-smi commands it would run, change nothing')
    .option('--force', 'destroy instances that have processes when the target needs it (names them)')
    .option('--mode-only', 'only change MIG mode (or $MIG_PARTED_MODE_CHANGE_ONLY)')
    .option('--skip-reset', 'leave pending MIG mode changes pending (or $MIG_PARTED_SKIP_RESET)')
    .option('--json', 'print JSON')
    .action(async (opts: ConfigOptions & { hooksFile?: string; dryRun?: boolean; force?: boolean; modeOnly?: boolean; skipReset?: boolean; json?: boolean }) => {
      const { file, name, entries } = loadSelection(opts);
      const hooksFile = opts.hooksFile ?? process.env['MIG_PARTED_HOOKS_FILE'] ?? '';
      const hooks = hooksFile ? parseMigPartedHooks(readUserFile(hooksFile, 'hooks file'), hooksFile) : null;
      const modeOnly = flag(opts.modeOnly, 'MIG_PARTED_MODE_CHANGE_ONLY');
      const skipReset = flag(opts.skipReset, 'MIG_PARTED_SKIP_RESET');
      const port = openGpuPort(opts);
      const found = await readCurrentState(port);
      const desired = desiredStates(found, entries, file, name);
      const { plans, refusals } = planAll(found, desired, { force: opts.force === true, modeOnly });
      if (refusals.length > 0) throw new MigpoolError('DEVICE', refusals.join('; '));
      const summary = plans.map((p) => ({
        gpu: p.gpu,
        kept: p.kept,
        destroyedGpuInstances: p.destroyedGpuInstances,
        destroyedComputeInstances: p.destroyedComputeInstances,
        forcedPids: p.forcedPids,
        fragmentation: p.fragmentation,
        commands: p.operations.map(commandOf),
      }));
      if (opts.dryRun) {
        if (opts.json) return writeJson(io, { config: name, file, dryRun: true, gpus: summary });
        const lines = plans.flatMap((p) => p.operations.map(commandOf));
        return io.out(lines.length > 0 ? lines.join('\n') : `# nothing to do: config '${name}' is applied`);
      }
      for (const p of plans) if (p.forcedPids.length > 0) io.err(`warning: GPU ${p.gpu}: --force destroys instances used by processes ${p.forcedPids.join(', ')}`);
      const env = migPartedHookEnv({ configFile: file, selectedConfig: name, hooksFile, skipReset, modeOnly });
      const journal = new JournalFile(join(stateDirOf(opts), 'apply-journal.json'));
      const report = await applyWithHooks(hooks, env, (runPoint) =>
        executePlans(port, plans, `${file}#${name}`, journal, {
          skipReset,
          beforeMode: () => runPoint('pre-apply-mode'),
          beforeConfig: () => runPoint('pre-apply-config'),
        }),
      );
      if (opts.json) return writeJson(io, { config: name, file, done: report.done, skipped: report.skipped, resumed: report.resumed, notes: report.notes, gpus: summary });
      if (report.resumed) io.out(`finished ${report.resumed}`);
      for (const p of plans) {
        const changes = p.operations.length === 0 ? 'already as configured' : `kept ${p.kept.length} GPU instances, destroyed ${p.destroyedGpuInstances} (${p.destroyedComputeInstances} compute instances), created ${p.operations.filter((o) => o.kind === 'create-gi').length}`;
        io.out(`GPU ${p.gpu}: ${changes}`);
      }
      for (const n of report.notes) io.out(n);
      io.out(`applied config '${name}' from ${file}: ${report.done} operations`);
    });

  withDeviceOptions(program.command('assert').description('check that a mig-parted config is applied: exit 0 if so, 1 with what differs if not'))
    .option('-f, --config-file <file>', 'mig-parted v1 config file (or $MIG_PARTED_CONFIG_FILE)')
    .option('-c, --selected-config <name>', 'config to check (or $MIG_PARTED_SELECTED_CONFIG)')
    .option('--mode-only', 'only check MIG mode')
    .option('--valid-config', 'only check that the config file is valid')
    .option('--json', 'print JSON')
    .action(async (opts: ConfigOptions & { modeOnly?: boolean; validConfig?: boolean; json?: boolean }) => {
      const { file, name, entries } = loadSelection(opts);
      if (opts.validConfig) {
        if (opts.json) return writeJson(io, { config: name, file, valid: true });
        return io.out(`config '${name}' in ${file} is valid`);
      }
      const found = await readCurrentState(openGpuPort(opts));
      const desired = desiredStates(found, entries, file, name);
      const differences = assertDifferences(found, desired, opts.modeOnly === true);
      if (opts.json) writeJson(io, { config: name, file, applied: differences.length === 0, differences });
      else if (differences.length === 0) io.out(`config '${name}' is applied`);
      if (differences.length > 0) {
        throw new MigpoolError('CHECK_FAILED', `config '${name}' is not applied: ${differences.join('; ')}`, { quiet: opts.json === true });
      }
    });
}
