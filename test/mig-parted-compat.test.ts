import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { cli } from './run-cli.js';

const DEFAULTS = fileURLToPath(new URL('./fixtures/mig-parted/config-default.yaml', import.meta.url));

function box(spec = '1xA100-SXM4-40GB'): string[] {
  return ['--simulate', spec, '--state-dir', mkdtempSync(join(tmpdir(), 'migpool-compat-'))];
}

function tmp(): string {
  return mkdtempSync(join(tmpdir(), 'migpool-compat-'));
}

/** A hooks file whose hooks append `<point> <selected config>` to a log and print a line on stdout and stderr. */
function loggingHooks(dir: string, points = ['apply-start', 'pre-apply-mode', 'pre-apply-config', 'apply-exit']): { file: string; log: string } {
  const log = join(dir, 'log');
  const hook = (point: string) =>
    `  ${point}:\n  - workdir: ${dir}\n    command: ${process.execPath}\n    args: ["-e", "require('fs').appendFileSync('${log}', '${point}\\\\n'); console.log('out of ${point}'); console.error('err of ${point}')"]\n`;
  const file = join(dir, `hooks-${points.length}.yaml`);
  writeFileSync(file, `version: v1\nhooks:\n${points.map(hook).join('')}`);
  return { file, log };
}

afterEach(() => {
  vi.unstubAllEnvs();
});

describe('mig-parted flags: -d, short flags, environment variables', () => {
  it('-d before or after the subcommand prints debug lines on stderr and shows hook output; without it hooks are quiet', { timeout: 180_000 }, async () => {
    const dir = tmp();
    const { file } = loggingHooks(dir);
    const quiet = await cli('apply', '-f', DEFAULTS, '-c', 'all-1g.5gb', '-k', file, ...box());
    expect(quiet.code).toBe(0);
    expect(quiet.out).not.toContain('out of apply-start');
    expect(quiet.err).not.toMatch(/debug:|err of/);

    const before = await cli('-d', 'apply', '-f', DEFAULTS, '-c', 'all-1g.5gb', '-k', file, ...box());
    expect(before.code).toBe(0);
    expect(before.out).toContain('out of apply-start\n');
    expect(before.out).toContain('out of pre-apply-config\n');
    expect(before.err).toContain('err of apply-exit\n');
    expect(before.err).toMatch(/debug: Parsing config file/);
    expect(before.err).toMatch(/debug: Running apply-start hook \[0\]/);
    expect(before.err).toMatch(/debug: {3}nvidia-smi mig -i 0 -cgi 19:0/);

    const one = loggingHooks(dir, ['apply-start']).file;
    const after = await cli('apply', '-d', '-f', DEFAULTS, '-c', 'all-1g.5gb', '-k', one, ...box());
    expect(after.out).toContain('out of apply-start');
    vi.stubEnv('MIG_PARTED_DEBUG', 'true');
    const byEnv = await cli('apply', '-f', DEFAULTS, '-c', 'all-1g.5gb', '-k', one, ...box());
    expect(byEnv.out).toContain('out of apply-start');
  });

  it('takes the short flags -m, -s (also combined) and -a', async () => {
    const b = box();
    // As the systemd unit does it: the mode change left pending (-ms), then the reset (-m).
    const mode = await cli('apply', '-ms', '-f', DEFAULTS, '-c', 'all-balanced', ...b);
    expect(mode.code).toBe(0);
    expect(mode.out).toMatch(/GPU 0: MIG mode change pending; reset skipped/);
    expect((await cli('assert', '-m', '-f', DEFAULTS, '-c', 'all-balanced', ...b)).code).toBe(1);
    expect((await cli('apply', '-m', '-f', DEFAULTS, '-c', 'all-balanced', ...b)).code).toBe(0);
    expect((await cli('assert', '-m', '-f', DEFAULTS, '-c', 'all-balanced', ...b)).code).toBe(0);
    expect((await cli('assert', '-f', DEFAULTS, '-c', 'all-balanced', ...b)).code).toBe(1);
    const valid = await cli('assert', '-a', '-f', DEFAULTS, '-c', 'all-balanced', ...b);
    expect(valid.code).toBe(0);
    expect((await cli('assert', '-a', '-f', DEFAULTS, '-c', 'no-such', ...b)).code).toBe(2);
  });

  it('assert reads MIG_PARTED_MODE_CHANGE_ONLY and MIG_PARTED_VALID_CONFIG; a bad boolean is bad input', async () => {
    const b = box();
    expect((await cli('apply', '--mode-only', '-f', DEFAULTS, '-c', 'all-balanced', ...b)).code).toBe(0);
    expect((await cli('assert', '-f', DEFAULTS, '-c', 'all-balanced', ...b)).code).toBe(1);
    vi.stubEnv('MIG_PARTED_MODE_CHANGE_ONLY', 'true');
    expect((await cli('assert', '-f', DEFAULTS, '-c', 'all-balanced', ...b)).code).toBe(0);
    vi.stubEnv('MIG_PARTED_MODE_CHANGE_ONLY', '');
    vi.stubEnv('MIG_PARTED_VALID_CONFIG', '1');
    expect((await cli('assert', '-f', DEFAULTS, '-c', 'all-balanced', ...b)).out).toContain('is valid');
    vi.stubEnv('MIG_PARTED_VALID_CONFIG', 'yes');
    const bad = await cli('assert', '-f', DEFAULTS, '-c', 'all-balanced', ...b);
    expect(bad.code).toBe(2);
    expect(bad.err.trim()).toBe("migpool: MIG_PARTED_VALID_CONFIG='yes' is not a boolean; set it to true or false (or 1 / 0), as mig-parted reads it");
  });

  it('export reads MIG_PARTED_OUTPUT_FORMAT and MIG_PARTED_CONFIG_LABEL; flags win', async () => {
    const b = box();
    vi.stubEnv('MIG_PARTED_OUTPUT_FORMAT', 'json');
    vi.stubEnv('MIG_PARTED_CONFIG_LABEL', 'mine');
    const json = JSON.parse((await cli('export', ...b)).out) as { 'mig-configs': Record<string, unknown> };
    expect(Object.keys(json['mig-configs'])).toEqual(['mine']);
    expect((await cli('export', '-o', 'yaml', '-l', 'x', ...b)).out).toMatch(/^version: v1\nmig-configs:\n {2}x:/);
    vi.stubEnv('MIG_PARTED_OUTPUT_FORMAT', 'xml');
    expect((await cli('export', ...b)).err).toMatch(/-o 'xml' \(from MIG_PARTED_OUTPUT_FORMAT\): use yaml or json/);
  });
});

describe('hooks files: warnings shown, hooks checked before anything changes', () => {
  it('prints what mig-parted would silently ignore', async () => {
    const dir = tmp();
    const file = join(dir, 'hooks.yaml');
    writeFileSync(file, `hooks:\n  apply-start:\n  - command: ${process.execPath}\n    args: ["-e", ""]\n    timeout: 3\n  post-apply: []\n`);
    const r = await cli('apply', '-f', DEFAULTS, '-c', 'all-1g.5gb', '-k', file, ...box());
    expect(r.code).toBe(0);
    expect(r.err).toContain(`warning: ${file}:5: hooks.apply-start[0].timeout: unknown field, ignored by mig-parted`);
    expect(r.err).toContain(`warning: ${file}:6: hooks.post-apply: unknown hook name`);
    expect(r.err).toContain(`warning: ${file}:1: version: missing`);
  });

  it.each([
    ['a missing workdir', (dir: string) => `  pre-apply-config:\n  - workdir: ${dir}/nope\n    command: /bin/true\n`, /hooks\.yaml:4: hooks\.pre-apply-config\[0\]\.workdir: .*\/nope is not a directory/],
    ['no command', () => `  pre-apply-config:\n  - args: [a]\n`, /hooks\.yaml:4: hooks\.pre-apply-config\[0\]\.command: missing/],
    ['a command not on PATH', () => `  apply-exit:\n  - command: no-such-program-xyz\n`, /hooks\.yaml:4: hooks\.apply-exit\[0\]\.command: no-such-program-xyz is not found on PATH/],
  ])('refuses a hook with %s (exit 2, one line naming file, line and field) and changes nothing', async (_what, body, message) => {
    const dir = tmp();
    const file = join(dir, 'hooks.yaml');
    writeFileSync(file, `version: v1\nhooks:\n${body(dir)}`);
    const b = box();
    const r = await cli('apply', '-f', DEFAULTS, '-c', 'all-1g.5gb', '-k', file, ...b);
    expect(r.code).toBe(2);
    const errors = r.err.trim().split('\n').filter((l) => !l.startsWith('warning: '));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(message);
    expect((await cli('assert', '-m', '-f', DEFAULTS, '-c', 'all-disabled', ...b)).code).toBe(0);
  });
});

describe('generate-config', () => {
  it("lists the configs of the GPUs present as mig-parted's does, and its configs apply", async () => {
    const b = box('2xA100-SXM4-40GB');
    const r = await cli('generate-config', ...b);
    expect(r.code).toBe(0);
    const text = r.out;
    // yaml.v2 key order: digit runs compare as numbers.
    const names = [...text.matchAll(/^ {2}(\S+):$/gm)].map((m) => m[1]);
    expect(names).toEqual(['all-1g.5gb', 'all-1g.5gb.me', 'all-1g.10gb', 'all-2g.10gb', 'all-3g.20gb', 'all-4g.20gb', 'all-7g.40gb', 'all-balanced', 'all-disabled', 'all-enabled']);
    expect(text).toContain('  all-balanced:\n  - devices: all\n    mig-enabled: true\n    mig-devices:\n      1g.5gb: 2\n      2g.10gb: 1\n      3g.20gb: 1\n');
    expect(text).toContain('  all-1g.5gb.me:\n  - devices: all\n    mig-enabled: true\n    mig-devices:\n      1g.5gb+me: 1\n');
    expect(text).toContain('  all-disabled:\n  - devices: all\n    mig-enabled: false\n    mig-devices: {}\n');
    expect(text).not.toContain('device-filter');
    const file = join(tmp(), 'config.yaml');
    expect((await cli('generate-config', '-f', file, ...b)).code).toBe(0);
    expect(readFileSync(file, 'utf8')).toBe(`${text.replace(/\n$/, '')}\n`);
    expect((await cli('apply', '-f', file, '-c', 'all-balanced', ...b)).code).toBe(0);
    expect((await cli('assert', '-f', DEFAULTS, '-c', 'all-balanced', ...b)).code).toBe(0);
    expect((await cli('apply', '-f', file, '-c', 'all-1g.5gb.me', ...b)).code).toBe(0);
  });

  it('adds device filters on a node with two GPU models, and writes JSON with -o json', async () => {
    const b = box('1xA100-SXM4-40GB,1xA30');
    const json = JSON.parse((await cli('generate-config', '-o', 'json', ...b)).out) as { 'mig-configs': Record<string, { 'device-filter'?: string[]; 'mig-devices': Record<string, number> | null }[]> };
    expect(json['mig-configs']['all-balanced']).toEqual([
      { 'device-filter': ['0x20B010DE'], devices: 'all', 'mig-enabled': true, 'mig-devices': { '1g.5gb': 2, '2g.10gb': 1, '3g.20gb': 1 } },
      { 'device-filter': ['0x20B710DE'], devices: 'all', 'mig-enabled': true, 'mig-devices': { '1g.6gb': 2, '2g.12gb': 1 } },
    ]);
    expect(json['mig-configs']['all-disabled']).toEqual([{ devices: 'all', 'mig-enabled': false, 'mig-devices': null }]);
    expect(json['mig-configs']['all-1g.6gb']).toEqual([{ 'device-filter': ['0x20B710DE'], devices: 'all', 'mig-enabled': true, 'mig-devices': { '1g.6gb': 4 } }]);
  });
});

describe('checkpoint and restore', () => {
  it('checkpoints the state in mig-parted\'s format and restores it exactly, placements included', async () => {
    const b = box('2xA100-SXM4-40GB');
    await cli('apply', '-f', DEFAULTS, '-c', 'all-balanced', ...b);
    // The layout as status shows it, less the MIG device UUIDs a new instance gets anew.
    const status = async () => JSON.parse((await cli('status', '--json', ...b)).out.replace(/"uuid": "MIG-[^"]*"/g, '"uuid": "MIG"')) as unknown;
    const before = await status();
    const file = join(tmp(), 'checkpoint.json');
    const cp = await cli('checkpoint', '-f', file, ...b);
    expect(cp.code).toBe(0);
    const written = JSON.parse(readFileSync(file, 'utf8')) as { Version: string; MigState: { Devices: { UUID: string; MigMode: number; GpuInstances: { ProfileID: number; Placement: { Start: number; Size: number }; ComputeInstances: { ProfileID: number; EngProfileID: number }[] }[] }[] } };
    expect(written.Version).toBe('v1');
    expect(written.MigState.Devices).toHaveLength(2);
    // NVML_GPU_INSTANCE_PROFILE_1_SLICE = 0, _2_SLICE = 1, _3_SLICE = 2 (nvml.h).
    expect(written.MigState.Devices[0]?.GpuInstances.map((g) => g.ProfileID)).toEqual([0, 0, 1, 2]);
    expect(written.MigState.Devices[0]?.MigMode).toBe(1);

    await cli('apply', '-f', DEFAULTS, '-c', 'all-disabled', ...b);
    vi.stubEnv('MIG_PARTED_CHECKPOINT_FILE', file);
    const restored = await cli('restore', ...b);
    expect(restored.code).toBe(0);
    expect(await status()).toEqual(before);
    const again = await cli('restore', '--json', ...b);
    expect((JSON.parse(again.out) as { done: number }).done).toBe(0);
  });

  it('restore -m restores only the MIG mode; a checkpoint of another node is refused naming the field', async () => {
    const b = box();
    await cli('apply', '-f', DEFAULTS, '-c', 'all-1g.5gb', ...b);
    const file = join(tmp(), 'cp.json');
    await cli('checkpoint', '-f', file, ...b);
    await cli('apply', '-f', DEFAULTS, '-c', 'all-disabled', ...b);
    expect((await cli('restore', '-m', '-f', file, ...b)).code).toBe(0);
    expect((await cli('assert', '-f', DEFAULTS, '-c', 'all-enabled', ...b)).code).toBe(0);
    const other = JSON.parse(readFileSync(file, 'utf8')) as { MigState: { Devices: { UUID: string }[] } };
    (other.MigState.Devices[0] as { UUID: string }).UUID = 'GPU-00000000-0000-0000-0000-000000000000';
    writeFileSync(file, JSON.stringify(other));
    const r = await cli('restore', '-f', file, ...b);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/cp\.json: MigState\.Devices\[0\]\.UUID: GPU GPU-0{8}-.* is not on this node/);
    writeFileSync(file, '{"Version":"v2"}');
    expect((await cli('restore', '-f', file, ...b)).err).toMatch(/cp\.json: Version: unknown checkpoint version "v2"/);
  });
});

describe('defects of issue 16 (item 7)', () => {
  it('apply --force on a busy instance ends its process first and applies fully, never half', async () => {
    const b = box();
    await cli('apply', '-f', DEFAULTS, '-c', 'all-1g.5gb', ...b);
    const status = JSON.parse((await cli('status', '--json', ...b)).out) as { gpus: { gpuInstances: { id: number; computeInstances: { id: number }[] }[] }[] };
    const gi = status.gpus[0]?.gpuInstances[3];
    const pid = (await cli('sim', 'attach', '--gpu', '0', '--gi', String(gi?.id), '--ci', String(gi?.computeInstances[0]?.id), ...b.slice(2))).out.trim();
    expect(pid).toMatch(/^\d+$/);
    const forced = await cli('apply', '-f', DEFAULTS, '-c', 'all-7g.40gb', '--force', ...b);
    expect(forced.err).toContain(`--force destroys instances used by processes ${pid}`);
    expect(forced.code).toBe(0);
    expect((await cli('assert', '-f', DEFAULTS, '-c', 'all-7g.40gb', ...b)).code).toBe(0);
  });

  it('a YAML alias bomb under 1 KB is refused at once (exit 2), for apply and assert', async () => {
    const lines = ['a0: &a0 [x, x, x, x, x, x, x, x, x, x]'];
    for (let i = 1; i < 12; i++) lines.push(`a${i}: &a${i} [${Array.from({ length: 10 }, () => `*a${i - 1}`).join(', ')}]`);
    const text = `version: v1\nmig-configs:\n  x: [{devices: all, mig-enabled: false}]\n${lines.join('\n')}\n`;
    expect(text.length).toBeLessThan(1024);
    const file = join(tmp(), 'bomb.yaml');
    writeFileSync(file, text);
    for (const command of ['apply', 'assert']) {
      const started = Date.now();
      const r = await cli(command, '-f', file, '-c', 'x', ...box());
      expect(Date.now() - started).toBeLessThan(5000);
      expect(r.code).toBe(2);
      expect(r.err).toMatch(/bomb\.yaml:1: too many aliases/);
    }
  });

  it('apply --dry-run --skip-reset prints no reset (nor the instance changes the pending mode holds back)', async () => {
    const b = box();
    const dry = await cli('apply', '-f', DEFAULTS, '-c', 'all-1g.5gb', '--dry-run', '--skip-reset', ...b);
    expect(dry.code).toBe(0);
    expect(dry.out).toContain('nvidia-smi -i 0 -mig 1');
    expect(dry.out).not.toMatch(/ -r\b/);
    expect(dry.out).not.toContain('-cgi');
    expect(dry.out).toContain('# GPU 0: the MIG mode change stays pending (--skip-reset)');
    const plain = await cli('apply', '-f', DEFAULTS, '-c', 'all-1g.5gb', '--dry-run', ...b);
    expect(plain.out).toMatch(/nvidia-smi -i 0 -r/);
  });
});

