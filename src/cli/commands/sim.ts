import type { Command } from 'commander';
import { badInput } from '../../errors.js';
import { installFakeNvidiaSmi } from '../../gpu/fake-nvidia-smi/install.js';
import { STATE_ENV } from '../../gpu/fake-nvidia-smi/main.js';
import { loadMachine, saveMachine } from '../../gpu/simulated/state-file.js';
import { resetSimulator, simulateSpecOf, simulatorStatePath, type DeviceOptions } from '../device.js';
import type { Io } from '../io.js';
import { withDeviceOptions } from './status.js';

function intOption(value: string, name: string): number {
  if (!/^\d+$/.test(value)) throw badInput(`${name} must be a whole number, got '${value}'`);
  return Number(value);
}

/** `migpool sim reset | attach | detach`: manage the simulated machine behind --simulate. */
export function registerSim(program: Command, io: Io): void {
  const sim = program.command('sim').description('manage the simulated machine used with --simulate');

  withDeviceOptions(sim.command('reset').description('start the simulated machine afresh (MIG disabled, no instances, no processes)'))
    .option('--seed <n>', 'seed for the simulated UUIDs', '1')
    .action((opts: DeviceOptions & { seed: string }) => {
      const path = simulatorStatePath(opts);
      const spec = simulateSpecOf(opts) ?? loadMachine(path)?.state.spec;
      if (spec === undefined) throw badInput(`no machine to reset: pass --simulate SPEC, e.g. --simulate 2xA100-SXM4-40GB`);
      const machine = resetSimulator(spec, path, intOption(opts.seed, '--seed'));
      io.out(`simulated machine ${spec}: ${machine.state.gpus.length} GPU${machine.state.gpus.length === 1 ? '' : 's'}, MIG disabled (${path})`);
    });

  withDeviceOptions(sim.command('attach').description('start a pretend process on a simulated GPU or MIG device'))
    .requiredOption('--gpu <index>', 'GPU index')
    .option('--gi <id>', 'GPU instance ID (MIG mode)')
    .option('--ci <id>', 'compute instance ID (MIG mode)')
    .option('--memory <MiB>', 'memory it holds', '500')
    .option('--name <name>', 'process name', 'python')
    .action((opts: DeviceOptions & { gpu: string; gi?: string; ci?: string; memory: string; name: string }) => {
      const gpu = intOption(opts.gpu, '--gpu');
      const target = {
        ...(opts.gi === undefined ? {} : { gpuInstanceId: intOption(opts.gi, '--gi') }),
        ...(opts.ci === undefined ? {} : { computeInstanceId: intOption(opts.ci, '--ci') }),
        usedMemoryMiB: intOption(opts.memory, '--memory'),
        name: opts.name,
      };
      const path = simulatorStatePath(opts);
      const machine = loadMachine(path);
      if (!machine) throw badInput(`no simulated machine in ${path}: run 'migpool sim reset --simulate SPEC' first`);
      const pid = machine.attachProcess(gpu, target);
      saveMachine(path, machine);
      io.out(String(pid));
    });

  withDeviceOptions(sim.command('detach').description('end a pretend process').argument('<pid>', 'process ID')).action((pid: string, opts: DeviceOptions) => {
    const path = simulatorStatePath(opts);
    const machine = loadMachine(path);
    if (!machine) throw badInput(`no simulated machine in ${path}: run 'migpool sim reset --simulate SPEC' first`);
    const n = intOption(pid, 'pid');
    if (!machine.listProcesses().some((p) => p.pid === n)) throw badInput(`no simulated process ${n}; 'migpool status --json' lists them`);
    machine.detachProcess(n);
    saveMachine(path, machine);
  });

  withDeviceOptions(
    sim
      .command('install-nvidia-smi')
      .description('write a fake nvidia-smi over the simulated machine into DIR, for other programs to run against')
      .argument('<dir>', 'directory to put first on PATH'),
  ).action((dir: string, opts: DeviceOptions) => {
    const path = installFakeNvidiaSmi(dir);
    const state = simulatorStatePath(opts);
    io.out(`${path}\nuse it with: export PATH=${dir}:$PATH ${STATE_ENV}=${state}`);
  });
}
