import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cli } from './run-cli.js';
import { runMigpool, runProcess, startServe, type ServeProcess } from './serve-harness.js';

/**
 * `migpool serve` on "real" GPUs: no --simulate, so it drives nvidia-smi, here the fake one on PATH
 * over a simulated A100. MIG is off at first (a pending mode change on Ampere needs a reset), so
 * the service has to enable it, create the instances through nvidia-smi and give the job the MIG
 * device UUID nvidia-smi lists.
 */
const dirs: string[] = [];
let serve: ServeProcess | null = null;

afterAll(async () => {
  await serve?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('migpool serve through nvidia-smi', () => {
  it('partitions the GPU with nvidia-smi commands and runs the job on the MIG device nvidia-smi lists', { timeout: 180_000 }, async () => {
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
    serve = await startServe({ dataDir: data, args: ['--policy', 'static:7x1g.5gb'], env });
    // serve writes server.json before it prints what it serves: wait for the line, not just the file.
    expect(await serve.waitForLog('NVIDIA A100-SXM4-40GB')).toContain('NVIDIA A100-SXM4-40GB');

    const job = join(dir, 'job.yaml');
    writeFileSync(job, `name: where\ncommand: [sh, -c, 'echo "devices=$CUDA_VISIBLE_DEVICES"']\nresources: { profile: 1g.5gb }\n`);
    const sub = await runMigpool(['submit', job, '--data-dir', data, '--json'], env);
    expect(sub.code, sub.err).toBe(0);
    const id = /"id":\s*"(\d+)"/.exec(sub.out)?.[1] ?? '';
    const { url, token } = serve;
    const t0 = Date.now();
    let state = '';
    while (state !== 'succeeded') {
      state = ((await (await fetch(`${url}/v1/jobs/${id}`, { headers: { authorization: `Bearer ${token}` } })).json()) as { state: string }).state;
      if (state === 'failed' || Date.now() - t0 > 60_000) throw new Error(`job ${id} is ${state}: ${serve.log()}`);
      await new Promise((r) => setTimeout(r, 100));
    }

    const listed = await runProcess('nvidia-smi', ['-L'], env);
    const migs = [...listed.out.matchAll(/MIG 1g\.5gb\s+Device\s+\d+: \(UUID: (MIG-[0-9a-f-]+)\)/g)].map((m) => m[1]);
    expect(migs).toHaveLength(7);
    const logs = await runMigpool(['logs', id, '--data-dir', data], env);
    const device = /devices=(\S+)/.exec(logs.out)?.[1];
    expect(migs).toContain(device);
  });
});
