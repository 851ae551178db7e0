import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { cli } from './run-cli.js';

// Bad input to the commands other than the service's, each found to print a stack trace (exit 3),
// or thousands of characters, or to hang: each must be one line naming the input, exit 2, and
// must leave what it read as it was.

const DEFAULTS = fileURLToPath(new URL('./fixtures/mig-parted/config-default.yaml', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'migpool-bad-input-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** One line on stderr, exit 2, nothing on stdout, no stack trace. */
function refused(r: { code: number; out: string; err: string }, message: RegExp): void {
  expect(r.code).toBe(2);
  expect(r.out).toBe('');
  expect(r.err.trim().split('\n')).toHaveLength(1);
  expect(r.err.length).toBeLessThan(400);
  expect(r.err).not.toMatch(/internal error|\n\s+at /);
  expect(r.err.trim()).toMatch(message);
}

describe('a simulated machine state file edited by hand', () => {
  const box = (stateDir: string) => ['--simulate', '2xA100-SXM4-40GB', '--state-dir', stateDir];

  it.each([
    ['a GPU without its instance list', (s: { gpus: Record<string, unknown>[] }) => void delete s.gpus[0]!['gpuInstances'], /gpus\[0\]\.gpuInstances: expected a list, got nothing/],
    ['processes: null', (s: { gpus: Record<string, unknown>[] }) => void (s.gpus[1]!['processes'] = null), /gpus\[1\]\.processes: expected a list, got null/],
    ['a GPU that is null', (s: { gpus: unknown[] }) => void (s.gpus[0] = null), /gpus\[0\]: expected an object, got null/],
    ['a MIG mode that is no mode', (s: { gpus: { migMode: Record<string, unknown> }[] }) => void (s.gpus[0]!.migMode['current'] = 'banana'), /gpus\[0\]\.migMode\.current: expected one of enabled, disabled, got "banana"/],
    ['GPU 0 given index 5', (s: { gpus: Record<string, unknown>[] }) => void (s.gpus[0]!['index'] = 5), /gpus\[0\]\.index: expected 0 \(GPUs are listed in index order\), got 5/],
  ])('%s: status, apply and sim attach refuse it in one line naming the field, and leave the file alone', async (_what, edit, message) => {
    const stateDir = mkdtempSync(join(dir, 'state-'));
    expect((await cli('sim', 'reset', ...box(stateDir))).code).toBe(0);
    const file = join(stateDir, 'simulated-machine.json');
    const state = JSON.parse(readFileSync(file, 'utf8')) as never;
    edit(state);
    const text = JSON.stringify(state);
    writeFileSync(file, text);
    for (const args of [['status'], ['apply', '-f', DEFAULTS, '-c', 'all-balanced'], ['sim', 'attach', '--gpu', '1']]) {
      const r = await cli(...args, ...box(stateDir));
      refused(r, new RegExp(`^migpool: simulator state .*simulated-machine\\.json is damaged: ${message.source}; fix the field or run 'migpool sim reset'$`));
    }
    expect(readFileSync(file, 'utf8')).toBe(text);
    expect((await cli('sim', 'reset', ...box(stateDir))).code).toBe(0);
    expect((await cli('status', ...box(stateDir))).code).toBe(0);
  });
});

describe('paths that are the wrong kind of file', () => {
  it('sim install-nvidia-smi into a path that is a file', async () => {
    const file = join(dir, 'notes.txt');
    writeFileSync(file, 'my notes\n');
    refused(await cli('sim', 'install-nvidia-smi', file, '--state-dir', dir), /^migpool: cannot write .*notes\.txt\/nvidia-smi: it is a file, not a directory; give a directory to put first on PATH \(created if missing\)$/);
    expect(readFileSync(file, 'utf8')).toBe('my notes\n');
  });

  it('apply -f and slurm plan --nodes naming a directory, however large the directory (its size is no file size)', async () => {
    refused(await cli('apply', '-f', tmpdir(), '-c', 'x'), /^migpool: cannot read config file '.*': EISDIR; give a mig-parted config file \(YAML\)$/);
    refused(await cli('slurm', 'plan', '--nodes', tmpdir()), /^migpool: --nodes .*: cannot read it \(EISDIR\); give the site file that lists the GPU nodes$/);
  });

  it('simulate --trace naming a directory', async () => {
    refused(
      await cli('simulate', '--trace', dir, '--fleet', '1xA100-SXM4-40GB', '--policies', 'exclusive'),
      /^migpool: cannot read --trace '.*': EISDIR; give a CSV file \(header arrival,workload,gpus,duration\), or philly, alibaba, synthetic or deeppool$/,
    );
  });
});

describe('files that are not UTF-8 text', () => {
  const binary = Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 131 + 7) % 256));
  const latin1 = Buffer.from('version: v1\nmig-configs:\n  caf\xe9:\n    - devices: all\n      mig-enabled: false\n', 'latin1');

  it('apply, assert and restore refuse a binary or Latin-1 file in one short line', async () => {
    const bin = join(dir, 'random.yaml');
    const lat = join(dir, 'latin1.yaml');
    writeFileSync(bin, binary);
    writeFileSync(lat, latin1);
    const box = ['--simulate', '1xA100-SXM4-40GB', '--state-dir', mkdtempSync(join(dir, 'state-'))];
    for (const file of [bin, lat]) {
      refused(await cli('apply', '-f', file, '-c', 'café', ...box), /^migpool: config file '.*' is not UTF-8 text \(a binary file, or another encoding\); give a mig-parted config file \(YAML\)$/);
      refused(await cli('assert', '-f', file, '-c', 'café', '-a'), /is not UTF-8 text/);
      refused(await cli('apply', '-f', DEFAULTS, '-c', 'all-balanced', '-k', file, ...box), /^migpool: hooks file '.*' is not UTF-8 text/);
      refused(await cli('restore', '-f', file, ...box), /^migpool: checkpoint file '.*' is not UTF-8 text \(a binary file, or another encoding\); give a file 'migpool checkpoint -f' wrote$/);
    }
    expect((await cli('status', '--json', ...box)).out).toContain('"disabled"');
  });

  it('simulate --trace refuses a binary file in one short line', async () => {
    const bin = join(dir, 'random.csv');
    writeFileSync(bin, binary);
    refused(await cli('simulate', '--trace', bin, '--fleet', '1xA100-SXM4-40GB', '--policies', 'exclusive'), /^migpool: --trace '.*random\.csv' is not UTF-8 text/);
  });

  it('still reads UTF-8 with a byte order mark', async () => {
    mkdirSync(join(dir, 'bom'), { recursive: true });
    const csv = join(dir, 'bom', 'jobs.csv');
    writeFileSync(csv, '\ufeffarrival,workload,gpus,duration\n0,small,1,100\n');
    const r = await cli('simulate', '--trace', csv, '--fleet', '1xA100-SXM4-40GB', '--policies', 'exclusive', '--json');
    expect(r.code).toBe(0);
    expect((JSON.parse(r.out) as { jobs: number }).jobs).toBe(1);
  });
});

describe('huge files', () => {
  it('apply refuses a config over 1 MiB before reading it, in one line (21 MB took 36 s and 2.5 GB)', async () => {
    const big = join(dir, 'big.yaml');
    const entry = (i: number) => `  c${i}:\n    - devices: all\n      mig-enabled: false\n`;
    writeFileSync(big, `version: v1\nmig-configs:\n${Array.from({ length: 25_000 }, (_, i) => entry(i)).join('')}`);
    const box = ['--simulate', '1xA100-SXM4-40GB', '--state-dir', mkdtempSync(join(dir, 'state-'))];
    refused(
      await cli('apply', '-f', big, '-c', 'c1', ...box),
      /^migpool: config file '.*big\.yaml' is 13\d{5} bytes, over the limit of 1048576 \(1 MiB; NVIDIA's config-default\.yaml for every MIG GPU is 12 KB\); give a mig-parted config file \(YAML\)$/,
    );
    expect((await cli('status', '--json', ...box)).out).toContain('"disabled"');
  });
});

describe('simulate: numbers that would take minutes and gigabytes', () => {
  const fleet = ['--fleet', '1xA100-SXM4-40GB', '--policies', 'exclusive'];

  it('refuses --limit over 500000 for the generated traces, and --seeds over 1000, before running anything', async () => {
    // --limit 100000000 had taken 4 GB within a minute, still generating; --seeds 100000 2.7 GB.
    refused(await cli('simulate', '--trace', 'synthetic', '--limit', '100000000', ...fleet), /^migpool: --limit 100000000: the synthetic trace makes at most 500000 jobs \(six times the Philly trace\); give a smaller --limit$/);
    refused(await cli('simulate', '--trace', 'deeppool', '--limit', '500001', ...fleet), /^migpool: --limit 500001: the deeppool trace makes at most 500000 jobs/);
    refused(await cli('simulate', '--trace', 'synthetic', '--limit', '5', '--seeds', '100000', ...fleet), /^migpool: --seeds 100000 is over the limit of 1000 .*; give fewer seeds$/);
    const r = await cli('simulate', '--trace', 'synthetic', '--limit', '5', '--seeds', '3', ...fleet, '--json');
    expect(r.code).toBe(0);
    expect((JSON.parse(r.out) as { seeds: number }).seeds).toBe(3);
  });

  it('refuses a trace row of 1e308 seconds (it gave UTIL NaN%)', async () => {
    const csv = join(dir, 'forever.csv');
    writeFileSync(csv, 'arrival,workload,gpus,duration\n0,small,1,100\n0,small,1,1e308\n');
    refused(await cli('simulate', '--trace', csv, ...fleet), /^migpool: .*forever\.csv:3: field 'duration': 1e308 seconds is over the limit of 1000000000 \(31\.7 years\); give the job's seconds alone on one whole GPU$/);
  });
});

describe('advise', () => {
  it('refuses a job weight of 1e308 (it printed "Infinity whole-GPU equivalents", gap NaN%)', async () => {
    const jobs = join(dir, 'weights.txt');
    writeFileSync(jobs, 'small,2,1e308\nmedium,1,1e308\n');
    refused(await cli('advise', '--gpu', 'A100-SXM4-40GB', '--count', '2', '--jobs', jobs), /^migpool: .*weights\.txt:1: weight 1e308 is over the limit of 1000000; weights are relative, so scale them all down$/);
    writeFileSync(jobs, 'small,2,1000000\nmedium,1,1\n');
    const r = await cli('advise', '--gpu', 'A100-SXM4-40GB', '--count', '2', '--jobs', jobs, '--json');
    expect(r.code).toBe(0);
    expect(Number.isFinite((JSON.parse(r.out) as { objective: number }).objective)).toBe(true);
  });
});

describe('YAML files of the Slurm and Kubernetes commands', () => {
  it('slurm plan refuses a site file over 1 MiB before parsing it (21 MB ran for over a minute)', async () => {
    const nodes = join(dir, 'nodes.yaml');
    writeFileSync(nodes, `nodes:\n${Array.from({ length: 30_000 }, (_, i) => `  gpu${String(i).padStart(5, '0')}: {gpu: A100-SXM4-40GB, count: 8}\n`).join('')}`);
    refused(await cli('slurm', 'plan', '--nodes', nodes), /^migpool: --nodes .*nodes\.yaml: 1\d{6} bytes, over the limit of 1048576 \(1 MiB, some 20,000 nodes\); give the site file that lists the GPU nodes$/);
  });

  it('k8s manifest refuses a YAML alias bomb in one line (it printed a ReferenceError stack)', async () => {
    const levels = ['a: &a [x, x, x, x, x, x, x, x, x]', ...'bcdefgh'.split('').map((c, i) => `${c}: &${c} [${Array(9).fill(`*${'abcdefgh'[i]}`).join(', ')}]`)];
    const bomb = join(dir, 'bomb.yaml');
    writeFileSync(bomb, `${levels.join('\n')}\nname: x\ncommand: [python]\n`);
    refused(await cli('k8s', 'manifest', bomb, '--image', 'registry.example.com/migpool:0.1.0'), /^migpool: .*bomb\.yaml: not valid YAML: Excessive alias count indicates a resource exhaustion attack; write the values out instead of aliases$/);
  });
});

describe('an apply journal edited by hand', () => {
  it('is refused as damaged before anything changes (a null operation printed a TypeError stack)', async () => {
    const stateDir = mkdtempSync(join(dir, 'state-'));
    const box = ['--simulate', '2xA100-SXM4-40GB', '--state-dir', stateDir];
    expect((await cli('sim', 'reset', ...box)).code).toBe(0);
    const machine = readFileSync(join(stateDir, 'simulated-machine.json'), 'utf8');
    const journal = join(stateDir, 'apply-journal.json');
    for (const text of ['{"version":1,"target":"x","startedAt":"y","operations":[null]}', '{"version":1,"operations":[{"op":{"kind":"create-gi","gpu":0},"status":"running"}]}']) {
      writeFileSync(journal, text);
      refused(await cli('apply', '-f', DEFAULTS, '-c', 'all-balanced', ...box), /^migpool: the apply journal .*apply-journal\.json is damaged; check the GPUs with 'migpool status', then delete it$/);
      expect(readFileSync(join(stateDir, 'simulated-machine.json'), 'utf8')).toBe(machine);
    }
  });
});

describe('burst-plan network flags', () => {
  it('refuses a bandwidth or latency that overflows the cost model (--bandwidth 1e-308 printed "Infinity" ms)', async () => {
    const plan = (...flags: string[]) => cli('burst-plan', '--model', 'vgg16', '--gpus', '8', '--global-batch', '256', ...flags);
    refused(await plan('--bandwidth', '1e-308'), /^migpool: --bandwidth must be a number of at least 0\.001, got '1e-308'$/);
    refused(await plan('--bandwidth', '1e308'), /^migpool: --bandwidth must be at most 100000, got '1e308'$/);
    refused(await plan('--latency', '1e308'), /^migpool: --latency must be at most 1000000, got '1e308'$/);
    const slow = await plan('--bandwidth', '0.001');
    expect(slow.code).toBe(0);
    expect(slow.out).not.toMatch(/Infinity|NaN/);
  });
});

describe('flags that did nothing', () => {
  it('bench --simulate with --command or --simulate-gpus is refused, not a model answer that ran nothing', async () => {
    const bench = (...flags: string[]) => cli('bench', '--simulate', '--gpu', 'A100-SXM4-40GB', '--workload', 'small', ...flags);
    refused(await bench('--command', 'python train.py'), /^migpool: --command runs a real program and --simulate runs nothing: give one of them/);
    refused(await bench('--simulate-gpus', '1xA100-SXM4-40GB'), /^migpool: --simulate-gpus is for a real run of --command on a simulated machine; --simulate answers from the model: give one of them$/);
    expect((await bench('--configs', '1xfull')).code).toBe(0);
  });

  it('workloads --workload without a service store is refused, not ignored (it printed the built-in fit and exit 0)', async () => {
    refused(await cli('workloads', '--fit', '--workload', 'mine.yaml'), /^migpool: --workload mine\.yaml goes with --fit and --data-dir or --database \(what a service learned of it\): migpool workloads --fit --data-dir DIR --workload FILE\.yaml$/);
  });
});

describe('two applies at once on one machine', () => {
  it('the second is refused while the first runs (both had reported success, and the first layout was lost)', { timeout: 30_000 }, async () => {
    const stateDir = mkdtempSync(join(dir, 'state-'));
    const box = ['--simulate', '2xA100-SXM4-40GB', '--state-dir', stateDir];
    const hooks = join(dir, 'slow-hooks.yaml');
    writeFileSync(hooks, 'version: v1\nhooks:\n  pre-apply-config:\n    - workdir: /tmp\n      command: /bin/sleep\n      args: ["2"]\n');
    expect((await cli('sim', 'reset', ...box)).code).toBe(0);
    const first = cli('apply', '-f', DEFAULTS, '-c', 'all-1g.5gb', '-k', hooks, ...box);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const second = await cli('apply', '-f', DEFAULTS, '-c', 'all-3g.20gb', ...box);
    expect(second.code).toBe(3);
    expect(second.err).toBe(`migpool: another apply or restore is changing the GPUs of ${stateDir}; wait for it to end, then run this again\n`);
    expect((await cli('restore', '-f', join(dir, 'no-such-checkpoint.json'), ...box)).code).toBe(3);
    expect((await first).code).toBe(0);
    expect((await cli('assert', '-f', DEFAULTS, '-c', 'all-1g.5gb', ...box)).code).toBe(0);
    expect((await cli('apply', '-f', DEFAULTS, '-c', 'all-3g.20gb', ...box)).code).toBe(0);
    expect((await cli('assert', '-f', DEFAULTS, '-c', 'all-3g.20gb', ...box)).code).toBe(0);
  });
});

describe('restore stopped part way by a failing GPU', () => {
  it('says to run restore (not apply) again, and running it again finishes', async () => {
    const stateDir = mkdtempSync(join(dir, 'state-'));
    const box = ['--simulate', '2xA100-SXM4-40GB', '--state-dir', stateDir];
    const checkpoint = join(dir, 'balanced.json');
    expect((await cli('sim', 'reset', ...box)).code).toBe(0);
    expect((await cli('apply', '-f', DEFAULTS, '-c', 'all-balanced', ...box)).code).toBe(0);
    expect((await cli('checkpoint', '-f', checkpoint, ...box)).code).toBe(0);
    expect((await cli('apply', '-f', DEFAULTS, '-c', 'all-disabled', ...box)).code).toBe(0);
    const file = join(stateDir, 'simulated-machine.json');
    const state = JSON.parse(readFileSync(file, 'utf8')) as { faults: unknown[] };
    state.faults.push({ operation: 'createGpuInstance', gpu: 1, kind: 'insufficient-resources' });
    writeFileSync(file, JSON.stringify(state));
    const failed = await cli('restore', '-f', checkpoint, ...box);
    expect(failed.code).toBe(3);
    expect(failed.err).toMatch(/^migpool: GPU 1: create GPU instance: injected insufficient-resources failure; \d+ of \d+ operations done, \d+ not started; run restore again to finish \(journal: .*\)\n$/);
    expect((await cli('restore', '-f', checkpoint, ...box)).code).toBe(0);
    expect((await cli('assert', '-f', DEFAULTS, '-c', 'all-balanced', ...box)).code).toBe(0);
  });
});
