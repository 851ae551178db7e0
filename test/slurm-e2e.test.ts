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
 * and SLURM_CONF): its GPU node gpu01 is declared in an `Include`d nodes file as part of a host list
 * (`NodeName=gpu[01-02]`), with MIG GRES typed as Slurm 22.05's AutoDetect=nvml names them on an
 * A100-SXM4-80GB (`nvidia_a100_3g.39gb`, `nvidia_a100_2g.20gb`, `nvidia_a100_1g.10gb`). Jobs
 * submitted through the Slurm executor and through `migpool serve --executor slurm` run with the
 * types, CPUs and environment asked for, end with their exit codes and logs, and are cancelled;
 * `migpool slurm apply` re-partitions the idle (simulated) node, splits it out of the host list,
 * and Slurm then offers the new GRES.
 */
const enabled = process.env['MIGPOOL_TEST_SLURM'] === '1' && process.env['SLURM_CONF'] !== undefined;
const slurmDir = process.env['MIGPOOL_TEST_SLURM_DIR'] ?? '/tmp/migpool-slurm';
const NODE = process.env['MIGPOOL_TEST_SLURM_NODE'] ?? 'gpu01';
const A100_80 = 'NVIDIA A100-SXM4-80GB';
const ROOT = resolve(import.meta.dirname, '..');
const RESTART = join(ROOT, '.ci', 'slurm-restart.sh');
if (!enabled) console.warn('slurm-e2e: skipped: no Slurm (run .ci/slurm.sh and eval its output to run these tests)');

function sh(file: string, ...args: string[]): string {
  return execFileSync(file, args, { encoding: 'utf8' });
}

function node(name = NODE): { gres: string; state: string } {
  const [n] = parseScontrolNodes(sh('scontrol', 'show', 'node', '-o', '-d', name));
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
    for (const name of ['slurm.conf', 'nodes.conf', 'gres.conf']) {
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
      execFileSync('scontrol', ['update', `nodename=${NODE}`, 'state=resume'], { stdio: 'ignore' });
    } catch {
      // already up and not drained
    }
    for (let i = 0; i < 100 && !/^IDLE$/.test(node().state); i += 1) execFileSync('sleep', ['0.2']);
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it('the executor submits jobs typed as AutoDetect=nvml names an 80GB part, with CPUs, memory and only their own env: exit codes, logs, the device Slurm allocated, cancel, adopt', async () => {
    // Service variables that must not reach the job, and one CUDA_* that must.
    process.env['MIGPOOL_E2E_SERVICE_SECRET'] = 'leaked';
    process.env['CUDA_E2E_FROM_SERVICE'] = 'kept';
    const ex = createSlurmExecutor({ pollMs: 300, gpuProducts: async () => [A100_80], cpusPerSlice: 1, memPerSliceMiB: 100 });
    const ends = new Map<string, ExitReport>();
    ex.onExit((r) => ends.set(r.jobId, r));
    const base = { attempt: 1, env: { GREETING: "it's fine; $HOME stays literal, commas, too" }, devices: [], maxRuntimeSeconds: 120 };
    const ok = await ex.launch({
      ...base,
      env: { ...base.env, MIGPOOL_SLURM_CPUS: '1' },
      jobId: 'e2e-exit3',
      command: ['sh', '-c', 'echo "$GREETING" "$1"; echo "dev=$CUDA_VISIBLE_DEVICES job=$MIGPOOL_JOB_ID cpus=$SLURM_CPUS_PER_TASK secret=${MIGPOOL_E2E_SERVICE_SECRET:-none} cuda=$CUDA_E2E_FROM_SERVICE"; echo oops >&2; exit 3', 'sh', 'a b'],
      workdir: dir,
      dir: join(dir, 'a1'),
      gres: { type: '3g.40gb', count: 1 },
    });
    expect(ok.slurmJobId).toMatch(/^\d+$/);
    // Slurm 22.05 names the A100-80GB's 3g.40gb nvidia_a100_3g.39gb (39.25 GiB rounded).
    expect(sh('scontrol', 'show', 'job', '-o', ok.slurmJobId!)).toMatch(/TresPerNode=(gres:)?gpu:nvidia_a100_3g\.39gb:1/);
    const long = await ex.launch({ ...base, jobId: 'e2e-cancel', command: ['sleep', '300'], workdir: dir, dir: join(dir, 'c1'), gres: { type: '2g.20gb', count: 1 } });
    const longJob = sh('scontrol', 'show', 'job', '-o', long.slurmJobId!);
    expect(longJob).toMatch(/NumCPUs=2\b/);
    expect(longJob).toMatch(/MinMemoryNode=200M/);
    await waitFor('the long job to run', () => (/RUNNING/.test(sh('squeue', '-h', '-j', long.slurmJobId!, '-o', '%T')) ? true : null));
    // A second executor (a restarted service) adopts the running job.
    const again = createSlurmExecutor({ pollMs: 300 });
    expect(await again.adopt('e2e-cancel', 1, long)).toBe('running');
    await again.close();
    await ex.cancel('e2e-cancel');
    const exit3 = await waitFor('the first job to end', () => ends.get('e2e-exit3') ?? null);
    expect(exit3).toMatchObject({ exitCode: 3, reason: 'exited', attempt: 1 });
    const out = readFileSync(ex.logPaths(ok).stdout, 'utf8');
    expect(out).toContain("it's fine; $HOME stays literal, commas, too a b");
    expect(out).toMatch(/^dev=\d+ job=e2e-exit3 cpus=1 secret=none cuda=kept$/m);
    expect(readFileSync(ex.logPaths(ok).stderr, 'utf8')).toContain('oops');
    expect(await waitFor('the cancel', () => ends.get('e2e-cancel') ?? null)).toMatchObject({ reason: 'cancelled', exitCode: null });
    // After the end, adopt reports how it ended (from squeue's record of finished jobs).
    const later = createSlurmExecutor();
    expect(await later.adopt('e2e-exit3', 1, ok)).toMatchObject({ exitCode: 3, reason: 'exited' });
    await later.close();
    await ex.close();
    delete process.env['MIGPOOL_E2E_SERVICE_SECRET'];
    delete process.env['CUDA_E2E_FROM_SERVICE'];
  }, 120_000);

  it('migpool serve --executor slurm runs jobs through Slurm and cancels them', async () => {
    const data = join(dir, 'serve');
    const proc = spawn(process.execPath, [BIN, 'serve', '--data-dir', data, '--listen', '127.0.0.1:0', '--simulate', '1xA100-SXM4-80GB', '--policy', 'exclusive', '--executor', 'slurm', '--poll-ms', '300', '--slurm-cpus-per-slice', '1', '--slurm-mem-per-slice', '100'], {
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
      // A whole GPU counts 7 slices (7 CPUs here): the job asks for 1 itself, as the 2-CPU node has no more.
      const oneCpu = { MIGPOOL_SLURM_CPUS: '1' };
      const done = await post('/v1/jobs', { name: 'hello', command: ['sh', '-c', 'echo hello from slurm job $SLURM_JOB_ID'], resources: { gpus: 1 }, env: oneCpu });
      const fin = await waitFor('the job to succeed', async () => {
        const j = await get(done.id);
        return ['succeeded', 'failed', 'cancelled'].includes(j.state) ? j : null;
      });
      expect(fin).toMatchObject({ state: 'succeeded', exitCode: 0 });
      const logs = (await (await fetch(`${url}/v1/jobs/${done.id}/logs`, { headers: { authorization: `Bearer ${token}` } })).text());
      expect(logs).toMatch(/hello from slurm job \d+/);
      const slow = await post('/v1/jobs', { name: 'slow', command: ['sleep', '300'], resources: { gpus: 1 }, env: oneCpu });
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

  it('migpool slurm apply re-partitions the idle node of a host list in an Included file for the waiting jobs, and Slurm offers the new GRES', async () => {
    const host = NODE;
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
        `  ${host}: {gpu: A100-SXM4-80GB, count: 1}`,
        '',
      ].join('\n'),
    );
    const env = { MIGPOOL_SIMULATE: '1xA100-SXM4-80GB', MIGPOOL_STATE_DIR: state };
    const initial = 'nvidia_a100_3g.39gb:1,nvidia_a100_2g.20gb:1,nvidia_a100_1g.10gb:2';
    expect(node().gres).toBe(initial);
    // Seven 1g.10gb jobs wait (the partition is down, so none starts on the node as it is).
    sh('scontrol', 'update', 'partitionname=debug', 'state=down');
    const ids = Array.from({ length: 7 }, () => sh('sbatch', '--parsable', '--gres=gpu:nvidia_a100_1g.10gb:1', '-J', 'migpool-e2e-demand', '-o', '/dev/null', '--wrap', 'exit 0').trim());
    const plan = await runCli(['slurm', 'plan', '--nodes', site, '--json'], env);
    expect(plan.code, plan.err).toBe(0);
    const planned = JSON.parse(plan.out) as { demand: Record<string, number>; nodes: { name: string; changed: boolean; planned: unknown[] }[] };
    expect(planned.demand).toEqual({ '1g.10gb': 7 });
    expect(planned.nodes[0]).toMatchObject({ name: host, changed: true });

    const dry = await runCli(['slurm', 'apply', '--nodes', site, '--dry-run'], env);
    expect(dry.code, dry.err).toBe(0);
    expect(dry.out).toContain(`scontrol update nodename=${host} state=drain reason=migpool-repartition`);
    expect(dry.out).toMatch(/Slurm 22\.05\.8: slurmd restarted on the node, then slurmctld restarted if/);
    expect(node().gres).toBe(initial);

    const t0 = Date.now();
    const applied = await runCli(['slurm', 'apply', '--nodes', site, '--json'], env);
    const seconds = (Date.now() - t0) / 1000;
    expect(applied.code, applied.err + applied.out).toBe(0);
    console.info(`slurm-e2e: slurm apply took ${seconds.toFixed(1)} s (drain, re-partition, restart slurmd and slurmctld, resume)`);
    const result = (JSON.parse(applied.out) as { results: { reload: { how: string; why: string } }[] }).results[0]!;
    // Slurm 22.05 takes a changed GPU count (4 -> 7) only at a controller restart.
    expect(result.reload.how).toBe('restart-slurmd+slurmctld');
    expect(result.reload.why).toMatch(/GPU count changes from 4 to 7/);
    expect(node().gres).toBe('nvidia_a100_1g.10gb:7');
    expect(node().state).not.toMatch(/DRAIN/);
    expect(readFileSync(join(slurmDir, 'etc', 'gres.conf'), 'utf8').match(/Type=nvidia_a100_1g\.10gb/g)).toHaveLength(7);
    // gpu01 is split out of the host list in the included file; gpu02 keeps its line and its GRES.
    const nodes = readFileSync(join(slurmDir, 'etc', 'nodes.conf'), 'utf8');
    expect(nodes).toMatch(/^NodeName=gpu02 NodeHostname=migpool-absent-host NodeAddr=127\.0\.0\.1 Port=\d+ .*Gres=gpu:nvidia_a100_3g\.39gb:1,gpu:nvidia_a100_2g\.20gb:1,gpu:nvidia_a100_1g\.10gb:2/m);
    expect(nodes).toMatch(new RegExp(`^NodeName=${host} NodeHostname=\\S+ NodeAddr=127\\.0\\.0\\.1 Port=\\d+ .*Gres=gpu:nvidia_a100_1g\\.10gb:7`, 'm'));
    expect(readFileSync(join(slurmDir, 'etc', 'slurm.conf'), 'utf8')).toContain('Include nodes.conf');
    expect(node('gpu02').gres).toBe(initial);
    const status = JSON.parse((await runCli(['status', '--json'], env)).out) as { gpus: { gpuInstances: { profile: string }[] }[] };
    expect(status.gpus[0]!.gpuInstances.map((i) => i.profile)).toEqual(Array(7).fill('1g.10gb'));
    // The waiting jobs now run on the new slices and complete.
    sh('scontrol', 'update', 'partitionname=debug', 'state=up');
    await waitFor('the demand jobs to finish', () => (sh('squeue', '-h', '-j', ids.join(','), '-t', 'PENDING,RUNNING') === '' ? true : null), 90_000);
    const ended = sh('squeue', '-h', '--states=all', '-j', ids.join(','), '-o', '%T').trim().split('\n');
    expect(ended).toEqual(Array(7).fill('COMPLETED'));
  }, 240_000);
});
