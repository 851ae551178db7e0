import { join } from 'node:path';
import type { Command } from 'commander';
import { commandOf, dryRunLines, executePlans, planAll } from '../../control/apply.js';
import { JournalFile } from '../../control/journal.js';
import { readCurrentState } from '../../control/state-reader.js';
import { badInput, MigpoolError } from '../../errors.js';
import { applyWithHooks } from '../../exec/hooks-runner.js';
import { parseMigPartedConfig, resolveSelectedConfigName, selectConfig } from '../../partition/config.js';
import { assertDifferences, desiredStates } from '../../control/mig-config.js';
import { migPartedHookEnv } from '../../partition/hooks.js';
import { openGpuPort, stateDirOf, type DeviceOptions } from '../device.js';
import { writeJson, type Io } from '../io.js';
import { withDeviceOptions } from './status.js';
import { debugLogOf, HOOK_TIMEOUT_HELP, hookRunOptions, hookTimeoutMs, loadHooks, processStopperOf, readUserFile, withApplyLock, withDebugOption, type DebugLog } from './mig-parted-common.js';
import { boolFlag, stringFlag } from './mig-parted-env.js';

interface ConfigOptions extends DeviceOptions {
  configFile?: string;
  selectedConfig?: string;
}

/** The config file and name from the flags, else mig-parted's environment variables. */
function loadSelection(opts: ConfigOptions, log: DebugLog) {
  const file = stringFlag(opts.configFile, 'MIG_PARTED_CONFIG_FILE', '');
  if (!file) throw badInput('no config file: pass -f FILE (or set MIG_PARTED_CONFIG_FILE)');
  log('Parsing config file...');
  const config = parseMigPartedConfig(readUserFile(file, 'config file'), file);
  log('Selecting specific MIG config...');
  const name = resolveSelectedConfigName(config, stringFlag(opts.selectedConfig, 'MIG_PARTED_SELECTED_CONFIG', ''));
  return { file, name, entries: selectConfig(config, name) };
}

/**
 * `migpool apply`, `migpool assert`: mig-parted's commands, changing only what must change. Flags,
 * short flags and environment variables as NVIDIA mig-parted v0.15 defines them
 * (cmd/nvidia-mig-parted/apply/apply.go, assert/assert.go BuildCommand).
 */
export function registerPartition(program: Command, io: Io): void {
  withDebugOption(withDeviceOptions(program.command('apply').description('apply a mig-parted config: keep matching instances, change only the rest')))
    .option('-f, --config-file <file>', 'mig-parted v1 config file (or $MIG_PARTED_CONFIG_FILE)')
    .option('-c, --selected-config <name>', 'config to apply (or $MIG_PARTED_SELECTED_CONFIG)')
    .option('-k, --hooks-file <file>', 'mig-parted hooks file (or $MIG_PARTED_HOOKS_FILE)')
    .option('--hook-timeout <seconds>', HOOK_TIMEOUT_HELP)
    .option('-m, --mode-only', 'only change MIG mode (or $MIG_PARTED_MODE_CHANGE_ONLY)')
    .option('-s, --skip-reset', 'leave pending MIG mode changes pending (or $MIG_PARTED_SKIP_RESET)')
    .option('--dry-run', 'print the plan as the nvidia-smi commands it would run, change nothing')
    .option('--force', 'destroy instances that have processes when the target needs it (names them; on a simulated machine their processes end first)')
    .option('--json', 'print JSON')
    .action(async (opts: ConfigOptions & { hooksFile?: string; hookTimeout?: string; dryRun?: boolean; force?: boolean; modeOnly?: boolean; skipReset?: boolean; json?: boolean }, cmd: Command) =>
      withApplyLock(opts, async () => {
      const timeoutMs = hookTimeoutMs(opts.hookTimeout);
      const debug = debugLogOf(io, cmd);
      const { file, name, entries } = loadSelection(opts, debug.log);
      const hooksFile = stringFlag(opts.hooksFile, 'MIG_PARTED_HOOKS_FILE', '');
      const hooks = loadHooks(hooksFile, io, debug.log);
      const modeOnly = boolFlag(opts.modeOnly, 'MIG_PARTED_MODE_CHANGE_ONLY');
      const skipReset = boolFlag(opts.skipReset, 'MIG_PARTED_SKIP_RESET');
      const port = openGpuPort(opts);
      const found = await readCurrentState(port);
      const desired = desiredStates(found, entries, file, name);
      debug.log(modeOnly ? 'Checking current MIG mode...' : 'Checking current MIG mode and MIG device configuration...');
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
        const lines = dryRunLines(plans, skipReset);
        if (opts.json) return writeJson(io, { config: name, file, dryRun: true, gpus: summary.map((s, i) => ({ ...s, commands: dryRunLines([plans[i] as (typeof plans)[number]], skipReset) })) });
        return io.out(lines.length > 0 ? lines.join('\n') : `# nothing to do: config '${name}' is applied`);
      }
      for (const p of plans) if (p.forcedPids.length > 0) io.err(`warning: GPU ${p.gpu}: --force destroys instances used by processes ${p.forcedPids.join(', ')}`);
      const env = migPartedHookEnv({ configFile: file, selectedConfig: name, hooksFile, skipReset, modeOnly });
      const journal = new JournalFile(join(stateDirOf(opts), 'apply-journal.json'));
      const stop = opts.force ? processStopperOf(port) : null;
      const report = await applyWithHooks(
        hooks,
        env,
        (runPoint) =>
          executePlans(port, plans, `${file}#${name}`, journal, {
            skipReset,
            beforeMode: () => runPoint('pre-apply-mode'),
            beforeConfig: () => runPoint('pre-apply-config'),
            debug: debug.log,
            ...(stop ? { stopProcesses: stop } : {}),
          }),
        hookRunOptions(io, debug, opts.json === true, timeoutMs),
      );
      if (opts.json) return writeJson(io, { config: name, file, done: report.done, skipped: report.skipped, resumed: report.resumed, notes: report.notes, gpus: summary });
      if (report.resumed) io.out(`finished ${report.resumed}`);
      for (const p of plans) {
        const changes = p.operations.length === 0 ? 'already as configured' : `kept ${p.kept.length} GPU instances, destroyed ${p.destroyedGpuInstances} (${p.destroyedComputeInstances} compute instances), created ${p.operations.filter((o) => o.kind === 'create-gi').length}`;
        io.out(`GPU ${p.gpu}: ${changes}`);
      }
      for (const n of report.notes) io.out(n);
      io.out(`applied config '${name}' from ${file}: ${report.done} operations`);
    }));

  withDebugOption(withDeviceOptions(program.command('assert').description('check that a mig-parted config is applied: exit 0 if so, 1 with what differs if not')))
    .option('-f, --config-file <file>', 'mig-parted v1 config file (or $MIG_PARTED_CONFIG_FILE)')
    .option('-c, --selected-config <name>', 'config to check (or $MIG_PARTED_SELECTED_CONFIG)')
    .option('-m, --mode-only', 'only check MIG mode (or $MIG_PARTED_MODE_CHANGE_ONLY)')
    .option('-a, --valid-config', 'only check that the config file is valid and holds the selected config (or $MIG_PARTED_VALID_CONFIG)')
    .option('--json', 'print JSON')
    .action(async (opts: ConfigOptions & { modeOnly?: boolean; validConfig?: boolean; json?: boolean }, cmd: Command) => {
      const debug = debugLogOf(io, cmd);
      const { file, name, entries } = loadSelection(opts, debug.log);
      const modeOnly = boolFlag(opts.modeOnly, 'MIG_PARTED_MODE_CHANGE_ONLY');
      if (boolFlag(opts.validConfig, 'MIG_PARTED_VALID_CONFIG')) {
        if (opts.json) return writeJson(io, { config: name, file, valid: true });
        return io.out(`config '${name}' in ${file} is valid`);
      }
      const found = await readCurrentState(openGpuPort(opts));
      const desired = desiredStates(found, entries, file, name);
      debug.log(modeOnly ? 'Asserting MIG mode configuration...' : 'Asserting MIG mode and MIG device configuration...');
      const differences = assertDifferences(found, desired, modeOnly);
      for (const d of differences) debug.log(d);
      if (opts.json) writeJson(io, { config: name, file, applied: differences.length === 0, modeOnly, differences });
      else if (differences.length === 0) io.out(modeOnly ? `MIG mode of config '${name}' is applied` : `config '${name}' is applied`);
      if (differences.length > 0) {
        throw new MigpoolError('CHECK_FAILED', `config '${name}' is not applied${modeOnly ? ' (MIG mode)' : ''}: ${differences.join('; ')}`, { quiet: opts.json === true });
      }
    });
}
