import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PoolServiceImpl } from '../src/control/service.js';
import { createLocalExecutor } from '../src/exec/local-executor.js';
import { SimulatedGpuPort } from '../src/gpu/simulated/driver.js';
import { SimulatedMachine } from '../src/gpu/simulated/machine.js';
import { parseSimulateSpec } from '../src/gpu/simulated/spec.js';
import { parsePolicy } from '../src/sched/registry.js';
import { buildServer } from '../src/server/app.js';
import { createMetrics } from '../src/server/metrics.js';
import { openSqliteStore } from '../src/store/sqlite.js';
import type { EventRecord, JobRecord, Store } from '../src/store/types.js';
import { cli } from './run-cli.js';
import { placementText } from '../src/cli/commands/client.js';

/**
 * CUDA MPS in the live service, end to end with fakes: a fake `nvidia-cuda-mps-control` first on
 * PATH records every call (arguments, device, pipe and log directories, stdin), and a fake
 * workload (test/fixtures/mps/fake-mps-workload.mjs) slows a foreground job as much as its
 * background neighbour's thread percentage lets it. The service runs `mps:2`: jobs share a GPU
 * through MPS, two at most.
 */
const WORKLOAD = fileURLToPath(new URL('./fixtures/mps/fake-mps-workload.mjs', import.meta.url));
const node = process.execPath;
const FAKE_CONTROL = `#!/bin/sh
# Fake nvidia-cuda-mps-control: records each call beside itself; -d returns at once as the real daemon does
# (or fails with $FAKE_MPS_FAIL on stderr).
if [ "$1" = "-d" ] && [ -n "$FAKE_MPS_FAIL" ]; then echo "$FAKE_MPS_FAIL" >&2; exit 1; fi
if [ "$1" = "-d" ]; then input=""; else input=$(cat | tr '\\n' ' '); fi
printf '%s|%s|%s|%s|%s\\n' "$*" "$CUDA_VISIBLE_DEVICES" "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY" "$input" >> "$(dirname "$0")/calls.log"
`;

let bin = '';
const savedPath = process.env['PATH'];
const dirs: string[] = [];
const open: { service: PoolServiceImpl; store: Store }[] = [];

beforeAll(() => {
  bin = mkdtempSync(join(tmpdir(), 'migpool-mps-bin-'));
  writeFileSync(join(bin, 'nvidia-cuda-mps-control'), FAKE_CONTROL);
  chmodSync(join(bin, 'nvidia-cuda-mps-control'), 0o755);
  // The service finds nvidia-cuda-mps-control by PATH, as it would the real one.
  process.env['PATH'] = `${bin}${delimiter}${savedPath ?? ''}`;
});

afterAll(() => {
  process.env['PATH'] = savedPath;
  rmSync(bin, { recursive: true, force: true });
});

afterEach(async () => {
  for (const { service, store } of open.splice(0)) {
    for (const j of await service.listJobs({ states: ['running', 'starting', 'queued'] })) await service.cancel(j.id);
    for (let i = 0; i < 100 && (await service.listJobs({ states: ['running', 'starting'] })).length > 0; i++) await sleep(50);
    await service.idle();
    await service.stop();
    await store.close();
  }
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  rmSync(join(bin, 'calls.log'), { force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Call {
  args: string;
  device: string;
  pipeDir: string;
  logDir: string;
  stdin: string;
}

function calls(): Call[] {
  const path = join(bin, 'calls.log');
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .trim()
    .split('\n')
    .map((line) => {
      const [args, device, pipeDir, logDir, stdin] = line.split('|') as [string, string, string, string, string];
      return { args, device, pipeDir, logDir, stdin: stdin.trim() };
    });
}

async function start(gpus: number, policy = 'mps:2'): Promise<{ service: PoolServiceImpl; dir: string; shared: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'migpool-mps-'));
  dirs.push(dir);
  const shared = join(dir, 'shared');
  mkdirSync(shared);
  const machine = SimulatedMachine.create(parseSimulateSpec(`${gpus}xA100-SXM4-40GB`), 1, `${gpus}xA100-SXM4-40GB`);
  machines.set(dir, machine);
  return { service: await openService(dir, machine, policy), dir, shared };
}

/** The service again on the same data dir and machine (a restart). */
function reopen(dir: string, policy = 'mps:2'): Promise<PoolServiceImpl> {
  return openService(dir, machines.get(dir)!, policy);
}

const machines = new Map<string, SimulatedMachine>();

async function openService(dir: string, machine: SimulatedMachine, policy: string): Promise<PoolServiceImpl> {
  const store = await openSqliteStore(join(dir, 'migpool.db'));
  await store.init();
  const service = new PoolServiceImpl({
    store,
    executor: createLocalExecutor({ pollMs: 50, graceSeconds: 1 }),
    gpu: new SimulatedGpuPort(machine),
    policy: parsePolicy(policy),
    dataDir: join(dir, 'data'),
    tickMs: 100,
    // Short windows for the test; the defaults (20 s, 10 s) are for real training jobs.
    multiplex: { windowMs: 1000, settleMs: 500 },
  });
  await service.start();
  open.push({ service, store });
  return service;
}

async function until<T>(what: string, f: () => Promise<T | null | undefined | false>, timeoutMs = 20_000): Promise<T> {
  const t0 = Date.now();
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

const inState = (service: PoolServiceImpl, id: string, states: readonly string[]) =>
  until(`job ${id} in ${states.join('|')}`, async () => {
    const j = await service.getJob(id);
    return j && states.includes(j.state) ? j : null;
  });

function envOf(shared: string, job: string, attempt: number): Record<string, string> | null {
  const path = join(shared, `env-${job}-${attempt}.json`);
  return existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as Record<string, string>) : null;
}

const backoffs = async (service: PoolServiceImpl): Promise<EventRecord[]> => (await service.events(0, 10_000)).filter((e) => e.type === 'mps-backoff');

/** A foreground job alone long enough for its speed alone to be measured (settle 0.5 s + window 1 s, with room). */
async function foregroundAlone(service: PoolServiceImpl, shared: string, extra: Record<string, unknown> = {}): Promise<JobRecord> {
  const fg = await service.submit({ name: 'fg', command: [node, WORKLOAD, shared], priority: 'foreground', ...extra });
  await until('its first progress report', async () => ((await service.getJob(fg.id))?.progress?.samples ?? 0) > 0);
  await sleep(2000);
  return fg;
}

function background(shared: string, env: Record<string, string>, total = 0): Record<string, unknown> {
  return { name: 'bg', command: [node, WORKLOAD, shared, String(total)], priority: 'background', preemptible: true, killGracePeriod: '1s', env };
}

describe('MPS multiplexing in the live service', () => {
  it('starts a daemon only for the GPU that has MPS clients, with its own directories and device, gives clients their environment, and quits it when the last one ends', { timeout: 30_000 }, async () => {
    const { service, dir, shared } = await start(2);
    const job = await service.submit({ name: 'alone', command: [node, WORKLOAD, shared, '320'], priority: 'foreground' });
    const done = await inState(service, job.id, ['succeeded', 'failed']);
    expect(done.state).toBe('succeeded');
    expect(done.placement).toMatchObject({ kind: 'gpus', sharing: 'mps', mps: { clientPriority: 0, activeThreadPercentage: null, neighbours: [] } });
    const uuid = done.placement!.devices[0]!;
    const mpsDir = join(dir, 'data', 'mps', uuid);
    const env = envOf(shared, job.id, 1);
    expect(env).toEqual({ CUDA_VISIBLE_DEVICES: uuid, CUDA_MPS_PIPE_DIRECTORY: join(mpsDir, 'pipe'), CUDA_MPS_LOG_DIRECTORY: join(mpsDir, 'log'), CUDA_MPS_CLIENT_PRIORITY: '0' });
    // The daemon quits once the job has ended (the next pass).
    const all = await until('the quit', async () => (calls().length >= 2 ? calls() : null));
    expect(all).toEqual([
      { args: '-d', device: uuid, pipeDir: join(mpsDir, 'pipe'), logDir: join(mpsDir, 'log'), stdin: '' },
      { args: '', device: uuid, pipeDir: join(mpsDir, 'pipe'), logDir: join(mpsDir, 'log'), stdin: 'quit' },
    ]);
    expect((await service.stats()).multiplex?.daemons).toBe(0);
  });

  it('quits its daemons when the service stops; the jobs keep running, as they always do', { timeout: 30_000 }, async () => {
    const { service, shared } = await start(1);
    const job = await service.submit({ name: 'long', command: [node, WORKLOAD, shared], priority: 'foreground' });
    const rec = await inState(service, job.id, ['running']);
    const { store } = open.pop()!;
    await service.stop();
    expect(calls().map((c) => c.args || c.stdin)).toEqual(['-d', 'quit']);
    expect(() => process.kill(rec.process!.pid, 0)).not.toThrow();
    process.kill(-rec.process!.pid, 'SIGKILL');
    await store.close();
  });

  it('after a restart, starts the daemon again for a re-adopted MPS client and quits it when that client ends', { timeout: 30_000 }, async () => {
    const first = await start(1);
    const job = await first.service.submit({ name: 'long', command: [node, WORKLOAD, first.shared, '4000'], priority: 'foreground' });
    await inState(first.service, job.id, ['running']);
    const { store } = open.pop()!;
    await first.service.stop();
    await store.close();
    const again = await reopen(first.dir);
    expect((await again.getJob(job.id))?.state).toBe('running');
    expect(calls().map((c) => c.args || c.stdin)).toEqual(['-d', 'quit', '-d']);
    expect((await inState(again, job.id, ['succeeded', 'failed'])).state).toBe('succeeded');
    await until('the quit', async () => calls().length === 4);
    expect(calls().map((c) => c.args || c.stdin)).toEqual(['-d', 'quit', '-d', 'quit']);
    expect(new Set(calls().map((c) => c.pipeDir)).size).toBe(1);
  });

  it('fails a job whose MPS daemon cannot start, saying why', { timeout: 30_000 }, async () => {
    const { service, shared } = await start(1);
    process.env['FAKE_MPS_FAIL'] = 'An instance of this daemon is already running';
    try {
      const job = await service.submit({ name: 'x', command: [node, WORKLOAD, shared, '96'] });
      const done = await inState(service, job.id, ['failed', 'succeeded']);
      expect(done.state).toBe('failed');
      expect(done.reason).toBe('could not start: nvidia-cuda-mps-control -d failed: An instance of this daemon is already running');
    } finally {
      delete process.env['FAKE_MPS_FAIL'];
    }
  });

  it('starts no daemon under a policy without MPS', { timeout: 30_000 }, async () => {
    const { service, shared } = await start(1, 'exclusive');
    const job = await service.submit({ name: 'plain', command: [node, WORKLOAD, shared, '96'] });
    expect((await inState(service, job.id, ['succeeded', 'failed'])).state).toBe('succeeded');
    expect(envOf(shared, job.id, 1)).not.toHaveProperty('CUDA_MPS_PIPE_DIRECTORY');
    await service.idle();
    expect(calls()).toEqual([]);
  });

  it('backs a background job off (restarted with half its threads) while the foreground runs more than 1.1x slower beside it, and no further once it is within the bound', { timeout: 60_000 }, async () => {
    const { service, shared } = await start(1);
    const fg = await foregroundAlone(service, shared);
    // Impact 0.5 above 30% of the threads: 1.5x at 100%, 1.25x at 50%, none at 25%.
    const bg = await service.submit(background(shared, { FAKE_MPS_IMPACT: '0.5' }));
    const first = await inState(service, bg.id, ['running']);
    expect(first.placement).toMatchObject({ kind: 'gpus', sharing: 'mps', mps: { clientPriority: 1, activeThreadPercentage: null, neighbours: [fg.id] } });
    expect((await service.getJob(fg.id))?.placement).toMatchObject({ mps: { clientPriority: 0, neighbours: [bg.id] } });
    await until('two back-offs', async () => ((await backoffs(service)).length >= 2 ? true : null));
    const third = await until('attempt 3 running', async () => {
      const j = await service.getJob(bg.id);
      return j && j.attempt === 3 && j.state === 'running' ? j : null;
    });
    expect(third.placement).toMatchObject({ mps: { clientPriority: 1, activeThreadPercentage: 25 } });
    // At 25% the foreground keeps its speed: several windows pass without another back-off.
    await sleep(3500);
    const events = await backoffs(service);
    expect(events.map((e) => e.data['activeThreadPercentage'])).toEqual([50, 25]);
    for (const e of events) {
      expect(e.jobId).toBe(bg.id);
      expect(e.data['foreground']).toBe(fg.id);
      expect(e.data['aloneFrom']).toBe('measured');
      expect(e.data['slowdown'] as number).toBeGreaterThan(1.1);
    }
    expect(events[0]!.data['slowdown'] as number).toBeGreaterThan(1.35);
    expect((await service.getJob(bg.id))?.attempt).toBe(3);
    expect(envOf(shared, bg.id, 1)).toMatchObject({ CUDA_MPS_CLIENT_PRIORITY: '1' });
    expect(envOf(shared, bg.id, 1)).not.toHaveProperty('CUDA_MPS_ACTIVE_THREAD_PERCENTAGE');
    expect(envOf(shared, bg.id, 2)).toMatchObject({ CUDA_MPS_CLIENT_PRIORITY: '1', CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: '50' });
    expect(envOf(shared, bg.id, 3)).toMatchObject({ CUDA_MPS_CLIENT_PRIORITY: '1', CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: '25' });
    expect(envOf(shared, fg.id, 1)).not.toHaveProperty('CUDA_MPS_ACTIVE_THREAD_PERCENTAGE');
    const stats = await service.stats();
    expect(stats.multiplex?.backoffs).toBe(2);
    expect(stats.multiplex?.daemons).toBe(1);
    const now = stats.multiplex?.slowdowns.find((s) => s.job === fg.id);
    expect(now?.slowdown).toBeLessThan(1.1);
    const metrics = await createMetrics(service, { processMetrics: false }).scrape();
    expect(metrics).toContain('migpool_mps_backoffs_total 2');
    expect(metrics).toContain('migpool_mps_daemons 1');
    expect(metrics).toMatch(new RegExp(`migpool_mps_foreground_slowdown_ratio\\{job="${fg.id}",gpu="0"\\} [0-9.]+\n`));
    // The API shows the same: the placement with its neighbour, the stats.
    const api = await buildServer({ service, token: 't', processMetrics: false });
    try {
      const headers = { authorization: 'Bearer t' };
      const job = (await api.inject({ method: 'GET', url: `/v1/jobs/${bg.id}`, headers })).json<JobRecord>();
      expect(job.placement).toMatchObject({ sharing: 'mps', mps: { clientPriority: 1, activeThreadPercentage: 25, neighbours: [fg.id] } });
      const s = (await api.inject({ method: 'GET', url: '/v1/stats', headers })).json<{ multiplex: unknown }>();
      expect(s.multiplex).toMatchObject({ backoffs: 2, daemons: 1, slowdowns: [{ job: fg.id, gpu: 0 }] });
    } finally {
      await api.close();
    }
    // One daemon all along: the background job's restarts reuse it.
    expect(calls().filter((c) => c.args === '-d')).toHaveLength(1);
  });

  it('never restarts a background job that may not be moved: the slowdown is reported once per neighbour set', { timeout: 60_000 }, async () => {
    const { service, shared } = await start(1);
    const fg = await foregroundAlone(service, shared);
    const bg = await service.submit({ ...background(shared, { FAKE_MPS_IMPACT: '0.5' }), preemptible: false });
    await inState(service, bg.id, ['running']);
    const reported = await until('the slowdown event', async () => {
      const es = (await service.events(0, 10_000)).filter((e) => e.type === 'mps-slowdown');
      return es.length > 0 ? es : null;
    });
    await sleep(2000);
    expect((await service.events(0, 10_000)).filter((e) => e.type === 'mps-slowdown')).toHaveLength(1);
    expect(reported[0]).toMatchObject({ jobId: bg.id, data: { foreground: fg.id, action: 'none: its spec does not say preemptible: true' } });
    expect(reported[0]!.data['slowdown'] as number).toBeGreaterThan(1.1);
    expect(await backoffs(service)).toEqual([]);
    expect(await service.getJob(bg.id)).toMatchObject({ state: 'running', attempt: 1 });
  });

  it('leaves a background job alone when the foreground keeps within the bound beside it', { timeout: 60_000 }, async () => {
    const { service, shared } = await start(1);
    const fg = await foregroundAlone(service, shared);
    const bg = await service.submit(background(shared, { FAKE_MPS_IMPACT: '0.03' }));
    await inState(service, bg.id, ['running']);
    const measured = await until('a measured slowdown', async () => (await service.stats()).multiplex?.slowdowns.find((s) => s.job === fg.id));
    expect(measured.slowdown).toBeLessThan(1.1);
    await sleep(3000);
    expect(await backoffs(service)).toEqual([]);
    expect((await service.getJob(bg.id))?.attempt).toBe(1);
    expect((await service.getJob(bg.id))?.state).toBe('running');
  });

  it('stops a background job that slows the foreground even at 12% of the threads: it waits for a GPU without a foreground job, then runs; every daemon quits', { timeout: 60_000 }, async () => {
    const { service, shared } = await start(1);
    const fg = await foregroundAlone(service, shared);
    // Impact 2 at any share: 3x at 100%, 2x at 50%, 1.5x at 25%, 1.24x at 12%.
    const bg = await service.submit(background(shared, { FAKE_MPS_IMPACT: '2', FAKE_MPS_FREE_PERCENT: '0' }));
    await until('four back-offs', async () => ((await backoffs(service)).length >= 4 ? true : null), 40_000);
    const events = await backoffs(service);
    expect(events.map((e) => [e.data['activeThreadPercentage'], e.data['stopped']])).toEqual([
      [50, false],
      [25, false],
      [12, false],
      [null, true],
    ]);
    const waiting = await inState(service, bg.id, ['queued']);
    await sleep(1000);
    expect((await service.getJob(bg.id))?.state).toBe('queued');
    expect(waiting.attempt).toBe(4);
    expect((await service.getJob(bg.id))?.pending).toBe("under MPS it slowed a foreground job beyond 1.1x even at 12% of the GPU's threads: waits for a GPU without a foreground job");
    await service.cancel(fg.id);
    const alone = await inState(service, bg.id, ['running']);
    expect(alone.attempt).toBe(5);
    expect(alone.placement).toMatchObject({ sharing: 'mps', mps: { clientPriority: 1, neighbours: [] } });
    await service.cancel(bg.id);
    await inState(service, bg.id, ['cancelled']);
    await until('every daemon quit', async () => ((await service.stats()).multiplex?.daemons === 0 && calls().some((c) => c.stdin === 'quit') ? true : null));
    const all = calls();
    expect(all.map((c) => c.args || c.stdin)).toEqual(['-d', 'quit']);
  });
});

describe('migpool serve --mps-slowdown-bound', () => {
  it('refuses a bound below 1 with the flag named and the fix (exit 2)', async () => {
    const r = await cli('serve', '--mps-slowdown-bound', '0.9', '--data-dir', join(tmpdir(), 'migpool-mps-never-created'));
    expect(r.code).toBe(2);
    expect(r.err.trim()).toBe("migpool: --mps-slowdown-bound '0.9': give a ratio from 1 to 100, e.g. 1.1 (the foreground within 10% of its speed alone)");
  });
});

describe('migpool jobs', () => {
  it('shows an MPS client with its priority, thread limit and neighbours', () => {
    const p = { kind: 'gpus', gpus: [2], sharing: 'mps', devices: ['GPU-x'] } as const;
    expect(placementText({ ...p, mps: { clientPriority: 1, activeThreadPercentage: 50, neighbours: ['7'] } })).toBe('gpu 2 (mps low 50% with 7)');
    expect(placementText({ ...p, mps: { clientPriority: 0, activeThreadPercentage: null, neighbours: [] } })).toBe('gpu 2 (mps)');
  });
});
