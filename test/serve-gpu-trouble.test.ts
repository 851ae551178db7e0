import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadMachine, saveMachine } from '../src/gpu/simulated/state-file.js';
import { withStateLock } from '../src/gpu/simulated/state-lock.js';
import { cli } from './run-cli.js';
import { runMigpool, startServe, type ServeProcess } from './serve-harness.js';

/**
 * `migpool serve` on "real" GPUs (the fake nvidia-smi on PATH, over a simulated A100) while the
 * machine misbehaves: the GPU falls off the bus under a running job, then nvidia-smi vanishes from
 * PATH, then both come back. The service reads every GPU every 10 s (its default), so each step
 * waits up to a read and a little more.
 */
const dirs: string[] = [];
let serve: ServeProcess | null = null;

afterAll(async () => {
  await serve?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const READ_MS = 25_000;

describe('migpool serve when the GPU and nvidia-smi misbehave', () => {
  it('holds jobs off a GPU that fell off the bus, keeps serving while nvidia-smi is missing, and recovers', { timeout: 180_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'migpool-serve-trouble-'));
    dirs.push(dir);
    expect((await cli('sim', 'reset', '--simulate', '1xA100-SXM4-40GB', '--state-dir', dir)).code).toBe(0);
    expect((await cli('sim', 'install-nvidia-smi', join(dir, 'bin'), '--state-dir', dir)).code).toBe(0);
    const state = join(dir, 'simulated-machine.json');
    const env = { ...process.env, MIGPOOL_SIMULATE: '', PATH: `${join(dir, 'bin')}:${process.env['PATH'] ?? ''}`, MIGPOOL_FAKE_NVIDIA_SMI_STATE: state };
    const setLost = (lost: boolean) =>
      withStateLock(state, () => {
        const m = loadMachine(state)!;
        m.setLost(0, lost);
        saveMachine(state, m);
      });
    const data = join(dir, 'data');
    serve = await startServe({ dataDir: data, args: ['--policy', 'exclusive'], env });
    const { url, token } = serve;
    const get = async (id: string) => (await (await fetch(`${url}/v1/jobs/${id}`, { headers: { authorization: `Bearer ${token}` } })).json()) as { state: string; pending: string | null };
    const submit = async (name: string) => {
      const job = join(dir, `${name}.yaml`);
      writeFileSync(job, `name: ${name}\ncommand: [sleep, '60']\nresources: { gpus: 1 }\n`);
      const sub = await runMigpool(['submit', job, '--data-dir', data, '--json'], env);
      expect(sub.code, sub.err).toBe(0);
      return /"id":\s*"(\d+)"/.exec(sub.out)?.[1] ?? '';
    };
    const until = async (what: string, test: () => Promise<boolean>) => {
      const t0 = Date.now();
      while (!(await test())) {
        if (Date.now() - t0 > READ_MS) throw new Error(`timed out waiting for ${what}: ${serve?.log() ?? ''}`);
        await new Promise((r) => setTimeout(r, 200));
      }
    };

    const first = await submit('first');
    await until('the first job to run', async () => (await get(first)).state === 'running');
    setLost(true);
    await until('the loss to be seen', () => Promise.resolve(/GPU 0 \(0000:[0-9A-F]{2}:00\.0\) does not answer nvidia-smi \(Unknown Error\).*no job starts there until it answers; job 1 ran there/.test(serve?.log() ?? '')));
    expect((await runMigpool(['cancel', first, '--data-dir', data], env)).code).toBe(0);
    await until('the first job to end', async () => (await get(first)).state === 'cancelled');
    const second = await submit('second');
    await until('the second job to hear why it waits', async () => /does not answer nvidia-smi \(Unknown Error\) \(fallen off the bus\? look for Xid 79 in dmesg; reset it with nvidia-smi -r -i 0000:[0-9A-F]{2}:00\.0 or reboot the node, and reseat it if it comes back lost\): no job starts there until it answers/.test((await get(second)).pending ?? ''));
    expect((await get(second)).state).toBe('queued');

    // nvidia-smi leaves PATH (a driver being reinstalled): the service still answers, and says so once.
    renameSync(join(dir, 'bin', 'nvidia-smi'), join(dir, 'bin', 'nvidia-smi.away'));
    await until('the failure to be said', () => Promise.resolve((serve?.log() ?? '').includes('reading the GPUs failed (list GPUs: nvidia-smi not found')));
    await until('the queue to say it', async () => /the GPUs cannot be read \(list GPUs: nvidia-smi not found/.test((await get(second)).pending ?? ''));

    // Both come back: the GPU is read again and the waiting job starts on it.
    setLost(false);
    renameSync(join(dir, 'bin', 'nvidia-smi.away'), join(dir, 'bin', 'nvidia-smi'));
    await until('the second job to run', async () => (await get(second)).state === 'running');
    const log = serve.log();
    expect(log).toContain('reading the GPUs works again');
    expect(log).toMatch(/GPU 0 \(GPU-[0-9a-f-]+\) answers nvidia-smi again: jobs may start there/);
    expect(log.match(/reading the GPUs failed/g)).toHaveLength(1);
    // With its only GPU lost, nvidia-smi lists no processes: that is no failure to read them.
    expect(log).not.toContain('not nvidia-smi XML');
    expect((await runMigpool(['cancel', second, '--data-dir', data], env)).code).toBe(0);
  });
});
