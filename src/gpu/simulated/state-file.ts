import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { MigpoolError } from '../../errors.js';
import { SimulatedMachine, type SimState } from './machine.js';
import { simStateProblem } from './state-check.js';

/**
 * Loads a simulated machine from its state file, or null when the file does not exist. A file
 * that is not a migpool simulator state is an error naming the file and the fix.
 */
export function loadMachine(path: string): SimulatedMachine | null {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new MigpoolError('BAD_INPUT', `cannot read simulator state ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}; pass a readable --state-dir`);
  }
  let state: unknown;
  try {
    state = JSON.parse(text);
  } catch {
    throw new MigpoolError('BAD_INPUT', `simulator state ${path} is not JSON; delete it or run 'migpool sim reset'`);
  }
  const s = state as Partial<SimState>;
  if (s.version !== 1 || !Array.isArray(s.gpus) || !Array.isArray(s.faults)) {
    throw new MigpoolError('BAD_INPUT', `simulator state ${path} is not a migpool state file (version 1); run 'migpool sim reset'`);
  }
  const problem = simStateProblem(s);
  if (problem !== null) throw new MigpoolError('BAD_INPUT', `simulator state ${path} is damaged: ${problem}; fix the field or run 'migpool sim reset'`);
  return new SimulatedMachine(s as SimState);
}

/** Writes the machine's state atomically (temporary file, then rename). */
export function saveMachine(path: string, machine: SimulatedMachine): void {
  try {
    mkdirSync(dirname(path), { recursive: true });
    const tmp = `${path}.${process.pid}.tmp`;
    writeFileSync(tmp, `${JSON.stringify(machine.state, null, 1)}\n`);
    renameSync(tmp, path);
  } catch (e) {
    throw new MigpoolError('BAD_INPUT', `cannot write simulator state ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}; pass a writable --state-dir`);
  }
}
