import { join } from 'node:path';
import type { Command } from 'commander';
import { commandOf, executePlans } from '../../control/apply.js';
import { JournalFile } from '../../control/journal.js';
import { modelOfGpu, readCurrentState } from '../../control/state-reader.js';
import { badInput, MigpoolError } from '../../errors.js';
import { applyWithHooks } from '../../exec/hooks-runner.js';
import { checkpointDifferences, checkpointOf, formatCheckpoint, parseCheckpoint, planRestoreGpu } from '../../partition/checkpoint.js';
import { formatGeneratedJson, formatGeneratedYaml, generateMigConfig } from '../../partition/generate-config.js';
import type { GpuPlan } from '../../partition/plan.js';
import { openGpuPort, stateDirOf, type DeviceOptions } from '../device.js';
import { writeJson, writeUserFile, type Io } from '../io.js';
import { withDeviceOptions } from './status.js';
import { debugLogOf, HOOK_TIMEOUT_HELP, hookRunOptions, hookTimeoutMs, loadHooks, processStopperOf, readUserFile, withApplyLock, withDebugOption } from './mig-parted-common.js';
import { boolFlag, stringFlag } from './mig-parted-env.js';

function checkpointFileOf(flag: string | undefined): string {
  const file = stringFlag(flag, 'MIG_PARTED_CHECKPOINT_FILE', '');
  if (file === '') throw badInput('no checkpoint file: pass -f FILE (or set MIG_PARTED_CHECKPOINT_FILE)');
  return file;
}

/**
 * `migpool generate-config`, `checkpoint`, `restore`: mig-parted v0.15's commands of those names
 * (cmd/nvidia-mig-parted/generateconfig, checkpoint, restore), with their flags, short flags and
 * environment variables.
 */
export function registerMigPartedState(program: Command, io: Io): void {
  withDebugOption(withDeviceOptions(program.command('generate-config').description("write a mig-parted config listing the configs this node's GPUs can take (all-disabled, all-enabled, all-balanced, all-<profile>)")))
    .option('-f, --output-file <file>', 'write it to FILE instead of stdout (or $MIG_PARTED_OUTPUT_FILE)')
    .option('-o, --output-format <format>', 'yaml or json (or $MIG_PARTED_OUTPUT_FORMAT; default yaml)')
    .action(async (opts: DeviceOptions & { outputFile?: string; outputFormat?: string }, cmd: Command) => {
      const debug = debugLogOf(io, cmd);
      const format = stringFlag(opts.outputFormat, 'MIG_PARTED_OUTPUT_FORMAT', 'yaml');
      if (format !== 'yaml' && format !== 'json') throw badInput(`output format '${format}'${opts.outputFormat === undefined ? ' (from MIG_PARTED_OUTPUT_FORMAT)' : ''}: use yaml or json`);
      const out = stringFlag(opts.outputFile, 'MIG_PARTED_OUTPUT_FILE', '');
      const gpus = await openGpuPort(opts).listGpus();
      for (const g of gpus) debug.log(`GPU ${g.index}: ${g.name} (${g.pciDeviceId})${g.migCapable ? '' : ', not MIG-capable: skipped'}`);
      const config = generateMigConfig(gpus.map((g) => ({ index: g.index, pciDeviceId: g.pciDeviceId, model: g.migCapable ? modelOfGpu(g) : null })));
      const text = format === 'json' ? formatGeneratedJson(config) : formatGeneratedYaml(config);
      if (out === '') return io.out(text);
      writeUserFile(out, text.endsWith('\n') ? text : `${text}\n`, '-f');
      debug.log(`Wrote ${Object.keys(config['mig-configs']).length} configs to ${out}`);
    });

  withDebugOption(withDeviceOptions(program.command('checkpoint').description('write the MIG state of every MIG-capable GPU (mode, instances at their placements) to a file, for restore')))
    .option('-f, --checkpoint-file <file>', 'the checkpoint file (or $MIG_PARTED_CHECKPOINT_FILE)')
    .action(async (opts: DeviceOptions & { checkpointFile?: string }, cmd: Command) => {
      const debug = debugLogOf(io, cmd);
      const file = checkpointFileOf(opts.checkpointFile);
      debug.log('Fetching MIG state...');
      const found = await readCurrentState(openGpuPort(opts));
      const checkpoint = checkpointOf(found.flatMap((g) => (g.current ? [g.current] : [])));
      writeUserFile(file, formatCheckpoint(checkpoint), '-f');
      io.out(`MIG state of ${checkpoint.MigState.Devices?.length ?? 0} GPU(s) checkpointed to ${file}`);
    });

  withDebugOption(withDeviceOptions(program.command('restore').description('put the GPUs back as a checkpoint file has them, keeping instances already in place')))
    .option('-f, --checkpoint-file <file>', 'the checkpoint file (or $MIG_PARTED_CHECKPOINT_FILE)')
    .option('-k, --hooks-file <file>', 'mig-parted hooks file (or $MIG_PARTED_HOOKS_FILE)')
    .option('--hook-timeout <seconds>', HOOK_TIMEOUT_HELP)
    .option('-m, --mode-only', 'only restore the MIG mode (or $MIG_PARTED_MODE_CHANGE_ONLY)')
    .option('--force', 'destroy instances that have processes when the checkpoint needs it (on a simulated machine their processes end first)')
    .option('--json', 'print JSON')
    .action(async (opts: DeviceOptions & { checkpointFile?: string; hooksFile?: string; hookTimeout?: string; modeOnly?: boolean; force?: boolean; json?: boolean }, cmd: Command) =>
      withApplyLock(opts, async () => {
      const timeoutMs = hookTimeoutMs(opts.hookTimeout);
      const debug = debugLogOf(io, cmd);
      const file = checkpointFileOf(opts.checkpointFile);
      debug.log('Parsing checkpoint file...');
      const checkpoint = parseCheckpoint(readUserFile(file, 'checkpoint file'), file);
      const hooksFile = stringFlag(opts.hooksFile, 'MIG_PARTED_HOOKS_FILE', '');
      const hooks = loadHooks(hooksFile, io, debug.log);
      const modeOnly = boolFlag(opts.modeOnly, 'MIG_PARTED_MODE_CHANGE_ONLY');
      const port = openGpuPort(opts);
      const found = await readCurrentState(port);
      const plans: GpuPlan[] = [];
      const refusals: string[] = [];
      (checkpoint.MigState.Devices ?? []).forEach((device, i) => {
        const at = `${file}: MigState.Devices[${i}]`;
        const gpu = found.find((g) => g.info.uuid.toLowerCase() === device.UUID.toLowerCase());
        if (!gpu) throw badInput(`${at}.UUID: GPU ${device.UUID} is not on this node (it has ${found.map((g) => g.info.uuid).join(', ') || 'no GPUs'}); restore a checkpoint taken here`);
        if (!gpu.current) throw badInput(`${at}.UUID: GPU ${gpu.info.index} (${device.UUID}) is not a MIG-capable GPU migpool knows`);
        const outcome = planRestoreGpu(gpu.current, device, at, { force: opts.force === true, modeOnly });
        if (outcome.ok) plans.push(outcome.plan);
        else refusals.push(`GPU ${outcome.gpu}: ${outcome.reason}`);
      });
      if (refusals.length > 0) throw new MigpoolError('DEVICE', refusals.join('; '));
      for (const p of plans) if (p.forcedPids.length > 0) io.err(`warning: GPU ${p.gpu}: --force destroys instances used by processes ${p.forcedPids.join(', ')}`);
      // The variables mig-parted gives restore's hooks: one per flag of `restore` (GetHooksEnvsMap).
      const env = { MIG_PARTED_CHECKPOINT_FILE: file, MIG_PARTED_HOOKS_FILE: hooksFile, MIG_PARTED_MODE_CHANGE_ONLY: String(modeOnly) };
      const journal = new JournalFile(join(stateDirOf(opts), 'apply-journal.json'));
      const stop = opts.force ? processStopperOf(port) : null;
      const report = await applyWithHooks(
        hooks,
        env,
        (runPoint) =>
          executePlans(port, plans, `${file} (restore)`, journal, {
            failureAdvice: 'run restore again to finish',
            beforeMode: () => runPoint('pre-apply-mode'),
            beforeConfig: () => runPoint('pre-apply-config'),
            debug: debug.log,
            ...(stop ? { stopProcesses: stop } : {}),
          }),
        hookRunOptions(io, debug, opts.json === true, timeoutMs),
      );
      const after = (await readCurrentState(port)).flatMap((g) => (g.current ? [g.current] : []));
      const differences = checkpointDifferences(after, checkpoint, modeOnly);
      if (opts.json) writeJson(io, { file, done: report.done, skipped: report.skipped, notes: report.notes, restored: differences.length === 0, differences, gpus: plans.map((p) => ({ gpu: p.gpu, kept: p.kept, commands: p.operations.map(commandOf) })) });
      else {
        for (const n of report.notes) io.out(n);
        if (differences.length === 0) io.out(`restored ${modeOnly ? 'the MIG mode' : 'the MIG state'} of ${plans.length} GPU(s) from ${file}: ${report.done} operations`);
      }
      if (differences.length > 0) throw new MigpoolError('DEVICE', `restore from ${file} did not reach the checkpointed state: ${differences.join('; ')}`, { quiet: opts.json === true });
    }));
}
