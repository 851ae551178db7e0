import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { startPool } from '../src/cli/pool.js';
import { PoolServiceImpl } from '../src/control/service.js';
import { createLocalExecutor } from '../src/exec/local-executor.js';
import { SimulatedGpuPort } from '../src/gpu/simulated/driver.js';
import { SimulatedMachine } from '../src/gpu/simulated/machine.js';
import { parseSimulateSpec } from '../src/gpu/simulated/spec.js';
import { parsePolicy } from '../src/sched/registry.js';
import { buildServer } from '../src/server/app.js';
import { MAPPING_FILE_NAME, startJobMapping, type JobMappingWriter } from '../src/server/dcgm-job-mapping.js';
import { openSqliteStore } from '../src/store/sqlite.js';
import type { JobRecord, Store } from '../src/store/types.js';
import { promqlNames, servedNames } from './promql-names.js';
import { cli } from './run-cli.js';

/**
 * What the shipped monitoring (deploy/grafana, deploy/prometheus) and the dcgm-exporter job mapping
 * give on a real service over simulated GPUs: the mapping files name the MIG instances the jobs
 * hold exactly as /metrics labels them, and every query of the dashboard and the alert rules names
 * series that migpool or dcgm-exporter serves.
 */

/**
 * Series dcgm-exporter serves by default: the fields of its etc/default-counters.csv (NVIDIA/dcgm-exporter,
 * release 4.5.3-4.8.2, unchanged on main as of May 2026).
 */
const DCGM_DEFAULT_FIELDS = [
  'DCGM_FI_DEV_SM_CLOCK', 'DCGM_FI_DEV_MEM_CLOCK', 'DCGM_FI_DEV_MEMORY_TEMP', 'DCGM_FI_DEV_GPU_TEMP', 'DCGM_FI_DEV_POWER_USAGE',
  'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION', 'DCGM_FI_DEV_PCIE_REPLAY_COUNTER', 'DCGM_FI_DEV_GPU_UTIL', 'DCGM_FI_DEV_MEM_COPY_UTIL',
  'DCGM_FI_DEV_ENC_UTIL', 'DCGM_FI_DEV_DEC_UTIL', 'DCGM_FI_DEV_XID_ERRORS', 'DCGM_FI_DEV_FB_FREE', 'DCGM_FI_DEV_FB_USED',
  'DCGM_FI_DEV_FB_RESERVED', 'DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL', 'DCGM_FI_DEV_VGPU_LICENSE_STATUS',
  'DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS', 'DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS', 'DCGM_FI_DEV_ROW_REMAP_FAILURE',
  'DCGM_FI_DRIVER_VERSION', 'DCGM_FI_PROF_GR_ENGINE_ACTIVE', 'DCGM_FI_PROF_PIPE_TENSOR_ACTIVE', 'DCGM_FI_PROF_DRAM_ACTIVE',
  'DCGM_FI_PROF_PCIE_TX_BYTES', 'DCGM_FI_PROF_PCIE_RX_BYTES',
];
/**
 * The labels of dcgm-exporter's GPU series (internal/pkg/rendermetrics/render_metrics.go, release
 * 4.5.3-4.8.2) and the one its HPC job mapping adds (internal/pkg/transformation/const.go).
 */
const DCGM_LABELS = ['gpu', 'UUID', 'pci_bus_id', 'device', 'modelName', 'GPU_I_PROFILE', 'GPU_I_ID', 'Hostname', 'hpc_job'];
/** Series and labels Prometheus itself adds to every target (prometheus.io/docs/concepts/jobs_instances). */
const PROMETHEUS_SERIES = ['up'];
const PROMETHEUS_LABELS = ['job', 'instance'];

const node = process.execPath;
const TOKEN = 'b'.repeat(64);
let dir: string;
let store: Store;
let service: PoolServiceImpl;
let app: FastifyInstance;
let mapping: JobMappingWriter;
let mapDir: string;

async function until(id: string, states: readonly string[], timeoutMs = 15_000): Promise<JobRecord> {
  const t0 = Date.now();
  for (;;) {
    const j = await service.getJob(id);
    if (j && states.includes(j.state)) return j;
    if (Date.now() - t0 > timeoutMs) throw new Error(`job ${id} is ${j?.state ?? 'missing'}, not ${states.join('|')}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

async function scrape(): Promise<string> {
  const res = await app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${TOKEN}` } });
  expect(res.statusCode).toBe(200);
  return res.body;
}

/** The mapping directory as dcgm-exporter reads it: file name to job ids. */
function mappingFiles(): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const name of readdirSync(mapDir).filter((n) => MAPPING_FILE_NAME.test(n))) out[name] = readFileSync(join(mapDir, name), 'utf8').split('\n').filter((l) => l !== '');
  return out;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'migpool-monitoring-'));
  mapDir = join(dir, 'dcgm-job-map');
  store = openSqliteStore(join(dir, 'migpool.db'));
  await store.init();
  const machine = SimulatedMachine.create(parseSimulateSpec('1xA100-SXM4-40GB'), 1, '1xA100-SXM4-40GB');
  service = new PoolServiceImpl({ store, executor: createLocalExecutor({ pollMs: 50, graceSeconds: 1 }), gpu: new SimulatedGpuPort(machine), policy: parsePolicy('migpool'), dataDir: dir, tickMs: 100 });
  await service.start();
  mapping = await startJobMapping(service, mapDir);
  app = await buildServer({ service, token: TOKEN, processMetrics: true });
});

afterAll(async () => {
  await app.close();
  for (const j of await service.listJobs({ states: ['running', 'starting', 'queued'] })) await service.cancel(j.id);
  for (let i = 0; i < 100 && (await service.listJobs({ states: ['running', 'starting'] })).length > 0; i++) await new Promise((r) => setTimeout(r, 50));
  await service.idle();
  await mapping.close();
  await service.stop();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("dcgm-exporter's job mapping on a live service", () => {
  it('names each MIG instance a job holds as /metrics labels it, holds its job id, and drops it when the job ends', async () => {
    const long = { command: [node, '-e', 'setTimeout(() => {}, 60000)'], resources: { profile: '1g.5gb' } };
    const jobs = await service.submitMany([
      { ...long, name: 'a' },
      { ...long, name: 'b', preemptible: true },
    ]);
    for (const j of jobs) await until(j.id, ['running']);
    await mapping.sync();
    const files = mappingFiles();
    const text = await scrape();
    // Each file <gpu>.<GI id> holds one job, and /metrics shows that instance allocated and that job's owner.
    expect(Object.values(files).flat().sort()).toEqual(jobs.map((j) => j.id).sort());
    for (const [name, ids] of Object.entries(files)) {
      const [gpu, gi] = name.split('.');
      expect(gi).toBeDefined();
      expect(text).toMatch(new RegExp(`^migpool_gpu_instance_allocated\\{gpu="${gpu}",UUID="GPU-[^"]+",modelName="NVIDIA A100-SXM4-40GB",Hostname="[^"]+",GPU_I_ID="${gi}",GPU_I_PROFILE="1g.5gb"\\} 1$`, 'm'));
      expect(text).toMatch(new RegExp(`^migpool_running_job_info\\{hpc_job="${ids[0]}",user="default",priority="foreground",Hostname="[^"]+"\\} 1$`, 'm'));
    }
    // The GI ids are the GPU's own (nvidia-smi's GI ID).
    const gpus = await service.gpus();
    const held = gpus[0]!.instances.filter((i) => i.job !== null).map((i) => `0.${i.gpuInstanceId}`);
    expect(Object.keys(files).sort()).toEqual(held.sort());

    // A preempted job leaves its slice: the mapping follows it back to the queue and onto a slice again.
    await service.preempt(jobs[1]!.id);
    await until(jobs[1]!.id, ['queued', 'starting', 'running']);
    await until(jobs[1]!.id, ['running']);
    await service.cancel(jobs[0]!.id);
    await until(jobs[0]!.id, ['cancelled']);
    await service.idle();
    await mapping.sync();
    const after = mappingFiles();
    expect(Object.values(after).flat()).toEqual([jobs[1]!.id]);
    const finished = await scrape();
    expect(finished).toContain('migpool_jobs_finished_total{outcome="cancelled",priority="foreground",user="default"} 1');
    // Two jobs started: the preempted one's second start is no queue wait of its own.
    expect(finished).toMatch(/^migpool_queue_wait_seconds_count\{priority="foreground",user="default"\} 2$/m);
    expect(finished).toMatch(/^migpool_scheduling_pass_seconds_count [1-9]\d*$/m);
    await service.cancel(jobs[1]!.id);
    await until(jobs[1]!.id, ['cancelled']);
    await mapping.sync();
    expect(mappingFiles()).toEqual({});
  });
});

describe('the shipped Grafana dashboard and Prometheus alert rules', () => {
  const dashboard = JSON.parse(readFileSync('deploy/grafana/migpool-dashboard.json', 'utf8')) as {
    title: string;
    uid: string;
    panels: { title: string; type: string; targets?: { expr: string; refId: string }[]; panels?: unknown[] }[];
    templating: { list: { name: string; type: string; query?: unknown }[] };
  };
  const rules = parseYaml(readFileSync('deploy/prometheus/migpool-alerts.yml', 'utf8')) as {
    groups: { name: string; rules: { alert?: string; expr: string; for?: string; labels?: Record<string, string>; annotations?: Record<string, string> }[] }[];
  };

  /** Every PromQL expression shipped, with where it comes from. */
  function expressions(): { where: string; expr: string }[] {
    const out: { where: string; expr: string }[] = [];
    for (const p of dashboard.panels) for (const t of p.targets ?? []) out.push({ where: `dashboard panel '${p.title}' ${t.refId}`, expr: t.expr });
    for (const v of dashboard.templating.list) {
      if (v.type !== 'query') continue;
      // Grafana's label_values(SELECTOR, LABEL): the selector is PromQL, the label a label.
      const q = typeof v.query === 'string' ? v.query : (v.query as { query: string }).query;
      const m = /^label_values\((.*),\s*(\w+)\)$/.exec(q);
      expect(m, `variable ${v.name}: ${q}`).not.toBeNull();
      out.push({ where: `dashboard variable ${v.name}`, expr: `${m![1]}{${m![2]}=""}` });
    }
    for (const g of rules.groups) for (const r of g.rules) out.push({ where: `alert ${r.alert ?? '?'}`, expr: r.expr });
    return out;
  }

  it('reads the names of a PromQL expression (and so finds a wrong one)', () => {
    const n = promqlNames('histogram_quantile(0.95, sum by (le, user) (rate(migpool_queue_wait_secs_bucket{user=~"a|b"}[5m]))) > 1800 or absent(up{job="x"} offset 1h) * on (hpc_job) group_left (user) foo_info');
    expect([...n.metrics].sort()).toEqual(['foo_info', 'migpool_queue_wait_secs_bucket', 'up']);
    expect([...n.labels].sort()).toEqual(['hpc_job', 'job', 'le', 'user']);
  });

  it('is valid JSON and YAML of the expected shape: panels with queries, alert rules with severity and summary', () => {
    expect(dashboard.uid).toBe('migpool-pool');
    expect(dashboard.panels.length).toBeGreaterThanOrEqual(10);
    for (const p of dashboard.panels) expect(p.targets?.length, p.title).toBeGreaterThan(0);
    expect(rules.groups.flatMap((g) => g.rules.map((r) => r.alert)).sort()).toEqual(['MigpoolDown', 'MigpoolJobsFailing', 'MigpoolQueueWaitHigh', 'MigpoolRepartitionFailing']);
    for (const r of rules.groups.flatMap((g) => g.rules)) {
      expect(['critical', 'warning']).toContain(r.labels?.severity);
      expect(r.annotations?.summary, r.alert).toBeTruthy();
      if (r.for !== undefined) expect(r.for).toMatch(/^\d+[smh]$/);
    }
  });

  it('covers what the issue asks: allocation per GPU and instance, queue, wait quantiles, outcomes by user, pass time, re-partition failures, DCGM utilisation by hpc_job', () => {
    const all = expressions().map((e) => e.expr).join('\n');
    for (const needed of [
      'migpool_gpu_allocation_ratio',
      'migpool_gpu_instance_allocated',
      'migpool_jobs{state="queued"}',
      'histogram_quantile(0.95, sum by (le) (rate(migpool_queue_wait_seconds_bucket',
      'sum by (user) (rate(migpool_jobs_finished_total',
      'sum by (outcome) (rate(migpool_jobs_finished_total',
      'migpool_scheduling_pass_seconds_bucket',
      'migpool_reconfigurations_failed_total',
      'DCGM_FI_DEV_GPU_UTIL{hpc_job!=""}',
      'absent(migpool_build_info)',
    ])
      expect(all).toContain(needed);
  });

  it('names only series and labels that migpool serves (scraped from the live service) or dcgm-exporter serves', async () => {
    // Scraped with a job running, so that every labelled family shows its labels.
    const job = await service.submit({ name: 'scraped', command: [node, '-e', 'setTimeout(() => {}, 60000)'], resources: { profile: '1g.5gb' } });
    await until(job.id, ['running']);
    const served = servedNames(await scrape());
    await service.cancel(job.id);
    await until(job.id, ['cancelled']);
    const metrics = new Set([...served.metrics, ...DCGM_DEFAULT_FIELDS, ...PROMETHEUS_SERIES]);
    const labels = new Set([...served.labels, ...DCGM_LABELS, ...PROMETHEUS_LABELS]);
    const problems: string[] = [];
    for (const { where, expr } of expressions()) {
      const n = promqlNames(expr);
      expect(n.metrics.size, `${where}: ${expr}`).toBeGreaterThan(0);
      for (const m of n.metrics) if (!metrics.has(m)) problems.push(`${where}: no one serves '${m}'`);
      for (const l of n.labels) if (!labels.has(l)) problems.push(`${where}: no series has label '${l}'`);
    }
    expect(problems).toEqual([]);
  });
});

describe('migpool serve (startPool) with --dcgm-job-mapping-dir', () => {
  it('clears stale mapping files at start, and passes every 2 s when idle (not in a loop)', async () => {
    const data = mkdtempSync(join(tmpdir(), 'migpool-monitoring-pool-'));
    const jobmap = join(data, 'jobmap');
    mkdirSync(jobmap);
    writeFileSync(join(jobmap, '0.7'), '41\n');
    const pool = await startPool({ dataDir: data, listen: '127.0.0.1:0', simulate: '1xA100-SXM4-40GB', dcgmJobMappingDir: jobmap });
    try {
      expect(readdirSync(jobmap)).toEqual([]);
      // Passes run at each submission, job end and tick (2 s by default): a second and a half of
      // idling is at most two, where an unset tick made it hundreds.
      const before = (await pool.service.stats()).passMs.length;
      await new Promise((r) => setTimeout(r, 1500));
      expect((await pool.service.stats()).passMs.length - before).toBeLessThanOrEqual(2);
    } finally {
      await pool.close();
      rmSync(data, { recursive: true, force: true });
    }
  });

  it('refuses a mapping directory that is a file (or under one) in one line, exit 2, before starting', async () => {
    const data = mkdtempSync(join(tmpdir(), 'migpool-monitoring-bad-'));
    try {
      writeFileSync(join(data, 'file'), '');
      const r = await cli('serve', '--data-dir', join(data, 'd'), '--listen', '127.0.0.1:0', '--simulate', '1xA100-SXM4-40GB', '--dcgm-job-mapping-dir', join(data, 'file', 'map'));
      expect(r.code).toBe(2);
      expect(r.err.trim().split('\n')).toHaveLength(1);
      expect(r.err).toBe(`migpool: --dcgm-job-mapping-dir '${join(data, 'file', 'map')}': '${join(data, 'file')}' is a file, not a directory; give a directory (the one dcgm-exporter reads with --hpc-job-mapping-dir)\n`);
      // Refused before anything starts: no data dir made, the file untouched.
      expect(existsSync(join(data, 'd'))).toBe(false);
      const itself = await cli('serve', '--data-dir', join(data, 'd'), '--listen', '127.0.0.1:0', '--simulate', '1xA100-SXM4-40GB', '--dcgm-job-mapping-dir', join(data, 'file'));
      expect(itself.code).toBe(2);
      expect(itself.err).toBe(`migpool: --dcgm-job-mapping-dir '${join(data, 'file')}' is a file, not a directory; give a directory (the one dcgm-exporter reads with --hpc-job-mapping-dir)\n`);
      expect(readFileSync(join(data, 'file'), 'utf8')).toBe('');
    } finally {
      rmSync(data, { recursive: true, force: true });
    }
  });
});
