import type { Command } from 'commander';
import { badInput } from '../../errors.js';
import { installFakeNvidiaSmi } from '../../gpu/fake-nvidia-smi/install.js';
import { STATE_ENV } from '../../gpu/fake-nvidia-smi/main.js';
import type { SimulatedMachine } from '../../gpu/simulated/machine.js';
import { loadMachine, saveMachine } from '../../gpu/simulated/state-file.js';
import { withStateLock } from '../../gpu/simulated/state-lock.js';
import { resetSimulator, simulateSpecOf, simulatorStatePath, type DeviceOptions } from '../device.js';
import type { Io } from '../io.js';
import { withDeviceOptions } from './status.js';

function intOption(value: string, name: string): number {
  if (!/^\d+$/.test(value)) throw badInput(`${name} must be a whole number, got '${value}'`);
  return Number(value);
}

/**
 * What `sim attach` is asked for, checked as a user's input (exit 2) before the machine sees it: a
 * GPU the machine has, a MIG device (--gi and --ci) exactly when the GPU is in MIG mode (nvidia-smi
 * shows a process on a GPU instance only in MIG mode), and no more memory than the GPU holds.
 */
function checkAttach(machine: SimulatedMachine, gpu: number, target: { gpuInstanceId?: number; computeInstanceId?: number; usedMemoryMiB: number }): void {
  const gpus = machine.listGpus();
  const info = gpus.find((g) => g.index === gpu);
  if (!info) throw badInput(`--gpu ${gpu}: the simulated machine has no GPU ${gpu}; give one of 0 to ${gpus.length - 1}`);
  const onDevice = target.gpuInstanceId !== undefined || target.computeInstanceId !== undefined;
  if (info.migMode?.current === 'enabled' && (target.gpuInstanceId === undefined || target.computeInstanceId === undefined)) {
    throw badInput(`--gi and --ci: GPU ${gpu} is in MIG mode, where a process runs on a MIG device: name its GPU instance and compute instance IDs (migpool status lists them)`);
  }
  if (info.migMode?.current !== 'enabled' && onDevice) throw badInput(`--gi/--ci: GPU ${gpu} is not in MIG mode, so it has no MIG devices: leave them out to attach to the whole GPU`);
  if (onDevice) {
    const devices = machine.listComputeInstances(gpu);
    if (!devices.some((c) => c.gpuInstanceId === target.gpuInstanceId && c.id === target.computeInstanceId)) {
      const named = devices.map((c) => `--gi ${c.gpuInstanceId} --ci ${c.id}`);
      throw badInput(`--gi ${target.gpuInstanceId} --ci ${target.computeInstanceId}: GPU ${gpu} has no such MIG device; ${named.length > 0 ? `give one of ${named.join(', ')}` : "it has none: create some first (migpool apply)"}`);
    }
  }
  if (target.usedMemoryMiB > info.memoryMiB) throw badInput(`--memory ${target.usedMemoryMiB}: GPU ${gpu} holds ${info.memoryMiB} MiB; give at most that`);
}

/** `migpool sim reset | attach | detach`: manage the simulated machine behind --simulate. */
export function registerSim(program: Command, io: Io): void {
  const sim = program.command('sim').description('manage the simulated machine used with --simulate');

  withDeviceOptions(sim.command('reset').description('start the simulated machine afresh (MIG disabled, no instances, no processes)'))
    .option('--seed <n>', 'seed for the simulated UUIDs', '1')
    .action((opts: DeviceOptions & { seed: string }) => {
      const path = simulatorStatePath(opts);
      const seed = intOption(opts.seed, '--seed');
      const { spec, machine } = withStateLock(path, () => {
        const spec = simulateSpecOf(opts) ?? loadMachine(path)?.state.spec;
        if (spec === undefined) throw badInput(`no machine to reset: pass --simulate SPEC, e.g. --simulate 2xA100-SXM4-40GB`);
        return { spec, machine: resetSimulator(spec, path, seed) };
      });
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
      // Read, change and write under the state file's lock: concurrent attaches each keep their process.
      const pid = withStateLock(path, () => {
        const machine = loadMachine(path);
        if (!machine) throw badInput(`no simulated machine in ${path}: run 'migpool sim reset --simulate SPEC' first`);
        checkAttach(machine, gpu, target);
        const pid = machine.attachProcess(gpu, target);
        saveMachine(path, machine);
        return pid;
      });
      io.out(String(pid));
    });

  withDeviceOptions(sim.command('detach').description('end a pretend process').argument('<pid>', 'process ID')).action((pid: string, opts: DeviceOptions) => {
    const path = simulatorStatePath(opts);
    const n = intOption(pid, 'pid');
    withStateLock(path, () => {
      const machine = loadMachine(path);
      if (!machine) throw badInput(`no simulated machine in ${path}: run 'migpool sim reset --simulate SPEC' first`);
      if (!machine.listProcesses().some((p) => p.pid === n)) throw badInput(`no simulated process ${n}; 'migpool status --json' lists them`);
      machine.detachProcess(n);
      saveMachine(path, machine);
    });
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
