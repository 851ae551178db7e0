import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { BIN, cli } from './run-cli.js';

const run = promisify(execFile);
const DEFAULTS = fileURLToPath(new URL('./fixtures/mig-parted/config-default.yaml', import.meta.url));


function box(spec = '2xA100-SXM4-40GB'): string[] {
  return ['--simulate', spec, '--state-dir', mkdtempSync(join(tmpdir(), 'migpool-apply-'))];
}

describe('migpool apply | assert | export on a simulated box', () => {
  it('--dry-run prints the nvidia-smi commands and changes nothing', async () => {
    const b = box('1xA100-SXM4-40GB');
    const dry = await cli('apply', '-f', DEFAULTS, '-c', 'all-balanced', '--dry-run', ...b);
    expect(dry.code).toBe(0);
    expect(dry.out.split('\n')).toEqual(
      expect.arrayContaining(['nvidia-smi -i 0 -mig 1', 'nvidia-smi mig -i 0 -cgi 9:4    # 3g.20gb at 4:4', 'nvidia-smi mig -i 0 -gi <GI at 4> -cci 2    # 3g.20gb in the 3g.20gb at 4']),
    );
    expect((await cli('assert', '-f', DEFAULTS, '-c', 'all-balanced', ...b)).code).toBe(1);
  });

  it('apply, assert, re-apply (a no-op), switch configs changing only what differs', async () => {
    const b = box();
    expect((await cli('apply', '-f', DEFAULTS, '-c', 'all-balanced', ...b)).code).toBe(0);
    expect((await cli('assert', '-f', DEFAULTS, '-c', 'all-balanced', ...b)).out).toContain("config 'all-balanced' is applied");
    const again = JSON.parse((await cli('apply', '-f', DEFAULTS, '-c', 'all-balanced', '--json', ...b)).out) as { done: number };
    expect(again.done).toBe(0);
    const change = JSON.parse((await cli('apply', '-f', DEFAULTS, '-c', 'all-1g.5gb', '--json', ...b)).out) as { gpus: { kept: unknown[]; destroyedGpuInstances: number }[] };
    expect(change.gpus.map((g) => [g.kept.length, g.destroyedGpuInstances])).toEqual([
      [2, 2],
      [2, 2],
    ]);
    const failed = await cli('assert', '-f', DEFAULTS, '-c', 'all-balanced', ...b);
    expect(failed.code).toBe(1);
    expect(failed.err).toMatch(/config 'all-balanced' is not applied: GPU 0: 1g\.5gb: 7 \(want 2\), 2g\.10gb: 0 \(want 1\), 3g\.20gb: 0 \(want 1\)/);
  });

  it('export gives back a config that applies the same layout to a fresh box', async () => {
    const b = box('1xH100-80GB');
    await cli('apply', '-f', DEFAULTS, '-c', 'all-balanced', ...b);
    const exported = (await cli('export', '-l', 'mine', ...b)).out;
    expect(exported).toContain('mine:');
    const file = join(mkdtempSync(join(tmpdir(), 'migpool-export-')), 'mine.yaml');
    writeFileSync(file, exported);
    const fresh = box('1xH100-80GB');
    expect((await cli('apply', '-f', file, '-c', 'mine', ...fresh)).code).toBe(0);
    expect((await cli('assert', '-f', DEFAULTS, '-c', 'all-balanced', ...fresh)).code).toBe(0);
    const k8s = JSON.parse((await cli('export', '--format', 'k8s', '--json', ...fresh)).out) as { resources: Record<string, number> };
    expect(k8s.resources).toEqual({ 'nvidia.com/mig-1g.10gb': 2, 'nvidia.com/mig-2g.20gb': 1, 'nvidia.com/mig-3g.40gb': 1 });
    expect((await cli('export', '--format', 'slurm', '--node', 'gpu01', ...fresh)).out).toContain('NodeName=gpu01 Gres=gpu:');
  });

  it('runs mig-parted hooks with its environment, apply-exit included', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'migpool-hooks-'));
    const log = join(dir, 'log');
    const hook = (point: string) =>
      `  ${point}:\n  - workdir: ${dir}\n    command: ${process.execPath}\n    args: ["-e", "require('fs').appendFileSync('${log}', '${point} ' + process.env.MIG_PARTED_SELECTED_CONFIG + '\\\\n')"]\n`;
    writeFileSync(join(dir, 'hooks.yaml'), `version: v1\nhooks:\n${['apply-start', 'pre-apply-mode', 'pre-apply-config', 'apply-exit'].map(hook).join('')}`);
    const r = await cli('apply', '-f', DEFAULTS, '-c', 'all-7g.40gb', '-k', join(dir, 'hooks.yaml'), ...box('1xA100-SXM4-40GB'));
    expect(r.code).toBe(0);
    expect(readFileSync(log, 'utf8').trim().split('\n')).toEqual(['apply-start all-7g.40gb', 'pre-apply-mode all-7g.40gb', 'pre-apply-config all-7g.40gb', 'apply-exit all-7g.40gb']);
  });

  it('refuses to touch a busy instance, names it, and changes nothing (exit 3); --force names the processes', async () => {
    const b = box('1xA100-SXM4-40GB');
    await cli('apply', '-f', DEFAULTS, '-c', 'all-3g.20gb', ...b);
    const pid = (await cli('sim', 'attach', '--gpu', '0', '--gi', '1', '--ci', '0', ...b.slice(2))).out.trim();
    const refused = await cli('apply', '-f', DEFAULTS, '-c', 'all-7g.40gb', ...b);
    expect(refused.code).toBe(3);
    expect(refused.err).toMatch(new RegExp(`GPU 0: .*runs processes ${pid}; nothing changed \\(use --force to destroy them\\)`));
    expect((await cli('assert', '-f', DEFAULTS, '-c', 'all-3g.20gb', ...b)).code).toBe(0);
    const forced = await cli('apply', '-f', DEFAULTS, '-c', 'all-7g.40gb', '--force', ...b);
    expect(forced.err).toContain(`--force destroys instances used by processes ${pid}`);
  });

  it.each([
    [['apply', '-f', DEFAULTS, '-c', 'no-such'], /no-such/],
    [['apply', '-f', '/nonexistent.yaml', '-c', 'x'], /cannot read config file '\/nonexistent.yaml': ENOENT/],
    [['apply', '-f', DEFAULTS, '-c', 'all-1g.6gb'], /A30|match|select/i],
    [['apply', '-c', 'all-balanced'], /no config file: pass -f FILE \(or set MIG_PARTED_CONFIG_FILE\)/],
  ])('bad input %j exits 2 with one line', async (argv, message) => {
    const { code, err } = await cli(...argv, ...box('1xA100-SXM4-40GB'));
    expect(code).toBe(2);
    expect(err).toMatch(message);
    expect(err.trim().split('\n')).toHaveLength(1);
  });
});

describe('migpool apply through nvidia-smi (the fake one on PATH)', () => {
  // Each nvidia-smi call is a node process here: minutes on a loaded machine.
  it('applies and asserts with the real adapter', { timeout: 300_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'migpool-real-'));
    await cli('sim', 'reset', '--simulate', '2xH100-80GB', '--state-dir', dir);
    await cli('sim', 'install-nvidia-smi', join(dir, 'bin'), '--state-dir', dir);
    const env = { ...process.env, MIGPOOL_SIMULATE: '', MIGPOOL_STATE_DIR: dir, PATH: `${join(dir, 'bin')}:${process.env['PATH'] ?? ''}`, MIGPOOL_FAKE_NVIDIA_SMI_STATE: join(dir, 'simulated-machine.json') };
    const applied = await run(process.execPath, [BIN, 'apply', '-f', DEFAULTS, '-c', 'all-balanced'], { env });
    expect(applied.stdout).toMatch(/applied config 'all-balanced'/);
    await run(process.execPath, [BIN, 'assert', '-f', DEFAULTS, '-c', 'all-balanced'], { env });
    const again = await run(process.execPath, [BIN, 'apply', '-f', DEFAULTS, '-c', 'all-balanced', '--dry-run'], { env });
    expect(again.stdout.trim()).toBe("# nothing to do: config 'all-balanced' is applied");
  });
});
