import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN, cli } from './run-cli.js';

/**
 * `migpool serve` on "real" GPUs: no --simulate, so it drives nvidia-smi, here the fake one on PATH
 * over a simulated A100. MIG is off at first (a pending mode change on Ampere needs a reset), so
 * the service has to enable it, create the instances through nvidia-smi and give the job the MIG
 * device UUID nvidia-smi lists.
 */
const dirs: string[] = [];
let proc: ChildProcess | null = null;

afterAll(async () => {
  if (proc && proc.exitCode === null) {
    proc.kill('SIGTERM');
    await new Promise((r) => proc!.once('exit', r));
  }
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('close', (code) => resolve({ code: code ?? -1, out, err }));
  });
}

describe('migpool serve through nvidia-smi', () => {
  it('partitions the GPU with nvidia-smi commands and runs the job on the MIG device nvidia-smi lists', { timeout: 60_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'migpool-serve-smi-'));
    dirs.push(dir);
    expect((await cli('sim', 'reset', '--simulate', '1xA100-SXM4-40GB', '--state-dir', dir)).code).toBe(0);
    expect((await cli('sim', 'install-nvidia-smi', join(dir, 'bin'), '--state-dir', dir)).code).toBe(0);
    const env = {
      ...process.env,
      MIGPOOL_SIMULATE: '',
      PATH: `${join(dir, 'bin')}:${process.env['PATH'] ?? ''}`,
      MIGPOOL_FAKE_NVIDIA_SMI_STATE: join(dir, 'simulated-machine.json'),
    };
    const data = join(dir, 'data');
    proc = spawn(process.execPath, [BIN, 'serve', '--data-dir', data, '--listen', '127.0.0.1:0', '--policy', 'static:7x1g.5gb'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let log = '';
    proc.stderr?.on('data', (d: Buffer) => (log += d.toString()));
    const t0 = Date.now();
    while (!existsSync(join(data, 'server.json'))) {
      if (Date.now() - t0 > 20_000 || proc.exitCode !== null) throw new Error(`migpool serve did not start: ${log}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    // serve writes server.json before it prints what it serves: wait for the line, not just the file.
    while (!log.includes('NVIDIA A100-SXM4-40GB')) {
      if (Date.now() - t0 > 20_000 || proc.exitCode !== null) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(log).toContain('NVIDIA A100-SXM4-40GB');

    const job = join(dir, 'job.yaml');
    writeFileSync(job, `name: where\ncommand: [sh, -c, 'echo "devices=$CUDA_VISIBLE_DEVICES"']\nresources: { profile: 1g.5gb }\n`);
    const sub = await run(process.execPath, [BIN, 'submit', job, '--data-dir', data, '--json'], env);
    expect(sub.code, sub.err).toBe(0);
    const id = /"id":\s*"(\d+)"/.exec(sub.out)?.[1] ?? '';
    const { url } = JSON.parse(readFileSync(join(data, 'server.json'), 'utf8')) as { url: string };
    let state = '';
    while (state !== 'succeeded') {
      const token = readFileSync(join(data, 'token'), 'utf8').trim();
      state = ((await (await fetch(`${url}/v1/jobs/${id}`, { headers: { authorization: `Bearer ${token}` } })).json()) as { state: string }).state;
      if (state === 'failed' || Date.now() - t0 > 40_000) throw new Error(`job ${id} is ${state}: ${log}`);
      await new Promise((r) => setTimeout(r, 100));
    }

    const listed = await run('nvidia-smi', ['-L'], env);
    const migs = [...listed.out.matchAll(/MIG 1g\.5gb\s+Device\s+\d+: \(UUID: (MIG-[0-9a-f-]+)\)/g)].map((m) => m[1]);
    expect(migs).toHaveLength(7);
    const logs = await run(process.execPath, [BIN, 'logs', id, '--data-dir', data], env);
    const device = /devices=(\S+)/.exec(logs.out)?.[1];
    expect(migs).toContain(device);
  });
});
