import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FileSimulatedGpuPort } from './file-port.js';
import { SimulatedMachine } from './machine.js';
import { parseSimulateSpec } from './spec.js';
import { loadMachine, saveMachine } from './state-file.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('FileSimulatedGpuPort', () => {
  it('keeps what another process wrote to the state file (sim attach) when it changes the machine itself', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'migpool-simfile-'));
    dirs.push(dir);
    const path = join(dir, 'simulated-machine.json');
    const machine = SimulatedMachine.create(parseSimulateSpec('2xA100-SXM4-40GB'), 1, '2xA100-SXM4-40GB');
    saveMachine(path, machine);
    const port = new FileSimulatedGpuPort(path, machine);
    await port.listGpus();
    // `migpool sim attach --gpu 1` in another process:
    const other = loadMachine(path)!;
    const pid = other.attachProcess(1, { usedMemoryMiB: 500, name: 'python' });
    await new Promise((r) => setTimeout(r, 20));
    saveMachine(path, other);
    expect((await port.listProcesses()).map((p) => p.pid)).toContain(pid);
    await port.setMigMode(0, true);
    const after = loadMachine(path)!;
    expect(after.listProcesses().map((p) => p.pid)).toContain(pid);
  });
});
