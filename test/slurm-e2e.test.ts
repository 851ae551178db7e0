import { execFileSync, spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ExitReport } from '../src/exec/executor.js';
import { createSlurmExecutor } from '../src/exec/slurm-executor.js';
import { parseScontrolNodes } from '../src/slurm/parse.js';
import { BIN } from './run-cli.js';

/**
 * Against a real Slurm (Debian's 22.05, started by .ci/slurm.sh, which sets MIGPOOL_TEST_SLURM=1
 * and SLURM_CONF): jobs submitted through the Slurm executor and through `migpool serve --executor
 * slurm` run, end with their exit codes and logs, and are cancelled; `migpool slurm apply`
 * re-partitions the idle (simulated) node and Slurm then offers the new GRES.
 */
const enabled = process.env['MIGPOOL_TEST_SLURM'] === '1' && process.env['SLURM_CONF'] !== undefined;
const slurmDir = process.env['MIGPOOL_TEST_SLURM_DIR'] ?? '/tmp/migpool-slurm';
const ROOT = resolve(import.meta.dirname, '..');
const RESTART = join(ROOT, '.ci', 'slurm-restart.sh');
if (!enabled) console.warn('slurm-e2e: skipped: no Slurm (run .ci/slurm.sh and eval its output to run these tests)');

function sh(file: string, ...args: string[]): string {
  return execFileSync(file, args, { encoding: 'utf8' });
}

function node(): { gres: string; state: string } {
  const [n] = parseScontrolNodes(sh('scontrol', 'show', 'node', '-o', '-d'));
  return { gres: n!.gres.map((g) => `${g.type ?? ''}:${g.count}`).join(','), state: n!.state };
}

async function waitFor<T>(what: string, fn: () => T | null | Promise<T | null>, ms = 60_000): Promise<T> {
  const t0 = Date.now();
  for (;;) {
    const v = await fn();
    if (v !== null) return v;
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

function runCli(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; out: string; err: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('close', (code) => done({ code: code ?? -1, out, err }));
  });
}

describe.skipIf(!enabled)('Slurm end to end', () => {
  let dir: string;
  const saved: { path: string; copy: string }[] = [];

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'migpool-slurm-e2e-'));
    for (const name of ['slurm.conf', 'gres.conf']) {
      const path = join(slurmDir, 'etc', name);
      copyFileSync(path, join(dir, `${name}.orig`));
      saved.push({ path, copy: join(dir, `${name}.orig`) });
    }
    sh('scontrol', 'update', 'partitionname=debug', 'state=up');
  });

  afterAll(() => {
    // Leave Slurm as .ci/slurm.sh made it, even after a failure.
    try {
      execFileSync('scancel', ['--name', 'migpool-e2e-demand']);
    } catch {
      // nothing to cancel
    }
    for (const s of saved) copyFileSync(s.copy, s.path);
    execFileSync(RESTART, ['slurmd']);
    execFileSync(RESTART, ['slurmctld']);
    try {
      execFileSync('scontrol', ['update', 'partitionname=debug', 'state=up']);
      execFileSync('scontrol', ['update', 'nodename=' + sh('hostname', '-s').trim(), 'state=resume'], { stdio: 'ignore' });
    } catch {
      // already up and not drained
    }
    for (let i = 0; i < 100 && !/^IDLE$/.test(node().state); i += 1) execFileSync('sleep', ['0.2']);
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it('the executor submits typed GRES jobs: exit codes, logs, the device Slurm allocated, cancel, adopt', async () => {
    const ex = createSlurmExecutor({ pollMs: 300 });
    const ends = new Map<string, ExitReport>();
    ex.onExit((r) => ends.set(r.jobId, r));
    const base = { attempt: 1, env: { GREETING: "it's fine; $HOME stays literal" }, devices: [], maxRuntimeSeconds: 120 };
    const ok = await ex.launch({
      ...base,
      jobId: 'e2e-exit3',
      command: ['sh', '-c', 'echo "$GREETING" "$1"; echo "dev=$CUDA_VISIBLE_DEVICES job=$MIGPOOL_JOB_ID"; echo oops >&2; exit 3', 'sh', 'a b'],
      workdir: dir,
      dir: join(dir, 'a1'),
      gres: { type: '1g.5gb', count: 1 },
    });
    expect(ok.slurmJobId).toMatch(/^\d+$/);
    const long = await ex.launch({ ...base, jobId: 'e2e-cancel', command: ['sleep', '300'], workdir: dir, dir: join(dir, 'c1'), gres: { type: '2g.10gb', count: 1 } });
    await waitFor('the long job to run', () => (/RUNNING/.test(sh('squeue', '-h', '-j', long.slurmJobId!, '-o', '%T')) ? true : null));
    // A second executor (a restarted service) adopts the running job.
    const again = createSlurmExecutor({ pollMs: 300 });
    expect(await again.adopt('e2e-cancel', 1, long)).toBe('running');
    await again.close();
    await ex.cancel('e2e-cancel');
    const exit3 = await waitFor('the first job to end', () => ends.get('e2e-exit3') ?? null);
    expect(exit3).toMatchObject({ exitCode: 3, reason: 'exited', attempt: 1 });
    const out = readFileSync(ex.logPaths(ok).stdout, 'utf8');
    expect(out).toContain("it's fine; $HOME stays literal a b");
    expect(out).toMatch(/^dev=\d+ job=e2e-exit3$/m);
    expect(readFileSync(ex.logPaths(ok).stderr, 'utf8')).toContain('oops');
    expect(await waitFor('the cancel', () => ends.get('e2e-cancel') ?? null)).toMatchObject({ reason: 'cancelled', exitCode: null });
    // After the end, adopt reports how it ended (from squeue's record of finished jobs).
    const later = createSlurmExecutor();
    expect(await later.adopt('e2e-exit3', 1, ok)).toMatchObject({ exitCode: 3, reason: 'exited' });
    await later.close();
    await ex.close();
  }, 120_000);

  it('migpool serve --executor slurm runs jobs through Slurm and cancels them', async () => {
    const data = join(dir, 'serve');
    const proc = spawn(process.execPath, [BIN, 'serve', '--data-dir', data, '--listen', '127.0.0.1:0', '--simulate', '1xA100-SXM4-40GB', '--policy', 'exclusive', '--executor', 'slurm', '--poll-ms', '300'], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    proc.stderr.on('data', (d: Buffer) => (err += d.toString()));
    try {
      await waitFor(`migpool serve to start (${err})`, () => (existsSync(join(data, 'server.json')) ? true : null), 30_000);
      const { url } = JSON.parse(readFileSync(join(data, 'server.json'), 'utf8')) as { url: string };
      const token = readFileSync(join(data, 'token'), 'utf8').trim();
      const post = async (path: string, body: unknown) =>
        (await (await fetch(`${url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })).json()) as { id: string };
      const get = async (id: string) => (await (await fetch(`${url}/v1/jobs/${id}`, { headers: { authorization: `Bearer ${token}` } })).json()) as { state: string; exitCode: number | null; reason: string | null };
      const done = await post('/v1/jobs', { name: 'hello', command: ['sh', '-c', 'echo hello from slurm job $SLURM_JOB_ID'], resources: { gpus: 1 } });
      const fin = await waitFor('the job to succeed', async () => {
        const j = await get(done.id);
        return ['succeeded', 'failed', 'cancelled'].includes(j.state) ? j : null;
      });
      expect(fin).toMatchObject({ state: 'succeeded', exitCode: 0 });
      const logs = (await (await fetch(`${url}/v1/jobs/${done.id}/logs`, { headers: { authorization: `Bearer ${token}` } })).text());
      expect(logs).toMatch(/hello from slurm job \d+/);
      const slow = await post('/v1/jobs', { name: 'slow', command: ['sleep', '300'], resources: { gpus: 1 } });
      await waitFor('the slow job to run', async () => ((await get(slow.id)).state === 'running' ? true : null));
      await post(`/v1/jobs/${slow.id}/cancel`, {});
      const cancelled = await waitFor('the cancel', async () => {
        const j = await get(slow.id);
        return j.state === 'cancelled' ? j : null;
      });
      expect(cancelled.state).toBe('cancelled');
      expect(sh('squeue', '-h', '--name', `migpool-${slow.id}`, '-t', 'PENDING,RUNNING')).toBe('');
    } finally {
      proc.kill('SIGTERM');
      await new Promise((r) => proc.once('exit', r));
    }
  }, 120_000);

  it('migpool slurm apply re-partitions the idle node for the waiting jobs, and Slurm offers the new GRES', async () => {
    const host = sh('hostname', '-s').trim();
    const state = join(dir, 'gpu-state');
    const site = join(dir, 'nodes.yaml');
    writeFileSync(
      site,
      [
        'defaults:',
        '  remote: []',
        `  migpool: [${JSON.stringify(process.execPath)}, ${JSON.stringify(BIN)}]`,
        `  gresConf: ${join(slurmDir, 'etc', 'gres.conf')}`,
        `  devices: ${join(slurmDir, 'dev', 'nvidia{n}')}`,
        `  restartSlurmd: [${JSON.stringify(RESTART)}, slurmd]`,
        `  restartController: [${JSON.stringify(RESTART)}, slurmctld]`,
        'nodes:',
        `  ${host}: {gpu: A100-SXM4-40GB, count: 1}`,
        '',
      ].join('\n'),
    );
    const env = { MIGPOOL_SIMULATE: '1xA100-SXM4-40GB', MIGPOOL_STATE_DIR: state };
    expect(node().gres).toBe('2g.10gb:1,1g.5gb:3');
    // Seven 1g.5gb jobs wait (the partition is down, so none starts on the node as it is).
    sh('scontrol', 'update', 'partitionname=debug', 'state=down');
    const ids = Array.from({ length: 7 }, () => sh('sbatch', '--parsable', '--gres=gpu:1g.5gb:1', '-J', 'migpool-e2e-demand', '-o', '/dev/null', '--wrap', 'exit 0').trim());
    const plan = await runCli(['slurm', 'plan', '--nodes', site, '--json'], env);
    expect(plan.code, plan.err).toBe(0);
    const planned = JSON.parse(plan.out) as { demand: Record<string, number>; nodes: { name: string; changed: boolean; planned: unknown[] }[] };
    expect(planned.demand).toEqual({ '1g.5gb': 7 });
    expect(planned.nodes[0]).toMatchObject({ name: host, changed: true });

    const dry = await runCli(['slurm', 'apply', '--nodes', site, '--dry-run'], env);
    expect(dry.code, dry.err).toBe(0);
    expect(dry.out).toContain(`scontrol update nodename=${host} state=drain reason=migpool-repartition`);
    expect(node().gres).toBe('2g.10gb:1,1g.5gb:3');

    const t0 = Date.now();
    const applied = await runCli(['slurm', 'apply', '--nodes', site, '--json'], env);
    const seconds = (Date.now() - t0) / 1000;
    expect(applied.code, applied.err + applied.out).toBe(0);
    console.info(`slurm-e2e: slurm apply took ${seconds.toFixed(1)} s (drain, re-partition, restart slurmd and slurmctld, resume)`);
    expect(node().gres).toBe('1g.5gb:7');
    expect(node().state).not.toMatch(/DRAIN/);
    expect(readFileSync(join(slurmDir, 'etc', 'gres.conf'), 'utf8').match(/Type=1g\.5gb/g)).toHaveLength(7);
    const status = JSON.parse((await runCli(['status', '--json'], env)).out) as { gpus: { gpuInstances: { profile: string }[] }[] };
    expect(status.gpus[0]!.gpuInstances.map((i) => i.profile)).toEqual(Array(7).fill('1g.5gb'));
    // The waiting jobs now run on the new slices and complete.
    sh('scontrol', 'update', 'partitionname=debug', 'state=up');
    await waitFor('the demand jobs to finish', () => (sh('squeue', '-h', '-j', ids.join(','), '-t', 'PENDING,RUNNING') === '' ? true : null), 90_000);
    const ended = sh('squeue', '-h', '--states=all', '-j', ids.join(','), '-o', '%T').trim().split('\n');
    expect(ended).toEqual(Array(7).fill('COMPLETED'));
  }, 240_000);
});
