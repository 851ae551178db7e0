import { Command, CommanderError, Help, type Option } from 'commander';
import { exitCodeFor, MigpoolError } from '../errors.js';
import { registerGpus, registerProfiles } from './commands/catalog.js';
import { registerCheck, registerLayouts } from './commands/geometry.js';
import { registerBench } from './commands/bench.js';
import { registerBurst } from './commands/burst.js';
import { registerAdvise } from './commands/advise.js';
import { registerExport } from './commands/export.js';
import { registerK8s } from './commands/k8s.js';
import { registerPartition } from './commands/partition.js';
import { registerMigPartedState } from './commands/mig-parted-state.js';
import { registerSim } from './commands/sim.js';
import { registerSimulate } from './commands/simulate.js';
import { registerSlurm } from './commands/slurm.js';
import { registerWorkloads } from './commands/workloads.js';
import { registerStatus } from './commands/status.js';
import { registerDemo, registerServe } from './commands/serve.js';
import { registerSubmit } from './commands/submit.js';
import { registerClient } from './commands/client.js';
import { registerUsers } from './commands/users.js';
import { endQuietlyOnClosedPipe, processIo, type Io } from './io.js';

/** Builds the `migpool` command tree. */
export function buildProgram(io: Io): Command {
  const program = new Command('migpool')
    .description('Turn NVIDIA MIG GPUs into a shared pool for deep-learning training.')
    .version('0.1.0')
    // mig-parted's global flag (cmd/nvidia-mig-parted/main.go): debug output for its commands.
    .option('-d, --debug', "debug output of the mig-parted commands (apply, assert, ...) on stderr, with their hooks' output (or $MIG_PARTED_DEBUG)")
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.out(s), writeErr: (s) => io.err(s) })
    .showSuggestionAfterError(true);
  registerGpus(program, io);
  registerProfiles(program, io);
  registerLayouts(program, io);
  registerCheck(program, io);
  registerStatus(program, io);
  registerPartition(program, io);
  registerMigPartedState(program, io);
  registerExport(program, io);
  registerSlurm(program, io);
  registerK8s(program, io);
  registerBench(program, io);
  registerWorkloads(program, io);
  registerSim(program, io);
  registerAdvise(program, io);
  registerSimulate(program, io);
  registerBurst(program, io);
  registerServe(program, io);
  registerDemo(program, io);
  registerSubmit(program, io);
  registerClient(program, io);
  registerUsers(program, io);
  const all = (cmds: readonly Command[]): Command[] => cmds.flatMap((c) => [c, ...all(c.commands)]);
  for (const cmd of all(program.commands)) cmd.exitOverride().configureOutput({ writeOut: (s) => io.out(s), writeErr: (s) => io.err(s) });
  for (const cmd of [program, ...all(program.commands)]) cmd.configureHelp({ optionDescription });
  return program;
}

const plainHelp = new Help();

/**
 * An option's line in --help, as commander writes it, except that a repeatable option's empty
 * list is not shown as `(default: [])`: it means "none given", not a value to pass.
 */
function optionDescription(option: Option): string {
  const empty = Array.isArray(option.defaultValue) && (option.defaultValue as unknown[]).length === 0;
  if (!empty) return plainHelp.optionDescription(option);
  const shown = Object.assign(Object.create(Object.getPrototypeOf(option) as object) as Option, option, { defaultValue: undefined });
  return plainHelp.optionDescription(shown);
}

/**
 * Runs the CLI and returns the exit status: 0 success, 1 a check that failed, 2 bad input, 3 a
 * device or runtime failure. User errors print one line, never a stack trace.
 */
export async function main(argv: readonly string[], io: Io = processIo): Promise<number> {
  if (io === processIo) endQuietlyOnClosedPipe();
  const program = buildProgram(io);
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return 0;
  } catch (e) {
    if (e instanceof CommanderError) {
      // Help and version exit with 0; commander has already printed its one-line error otherwise.
      return e.exitCode === 0 ? 0 : 2;
    }
    if (e instanceof MigpoolError) {
      if (!e.details['quiet']) io.err(`migpool: ${e.message}`);
      // `submit --wait` ends with the job's own exit status.
      const own = e.details['exitCode'];
      return typeof own === 'number' && Number.isInteger(own) && own > 0 && own < 256 ? own : exitCodeFor(e.code);
    }
    io.err(`migpool: internal error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    return 3;
  }
}
