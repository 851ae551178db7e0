import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { executePlans, planAll } from '../control/apply.js';
import type { JournalFile } from '../control/journal.js';
import { readCurrentState } from '../control/state-reader.js';
import { MigpoolError } from '../errors.js';
import type { GpuPort } from '../gpu/port.js';
import { ciProfilesOf } from '../mig/compute-instances.js';
import type { DesiredGpu } from '../partition/state.js';
import type { BenchConfig } from './configs.js';
import { parseProgressLine, steadyThroughput, type TimedReport } from '../jobs/progress-protocol.js';

/** How the real bench runs; defaults in brackets. */
export interface RunnerOptions {
  readonly port: GpuPort;
  /** Which GPU to benchmark on [0]. */
  readonly gpuIndex: number;
  /** The workload's program and arguments. */
  readonly command: readonly string[];
  readonly cwd?: string;
  readonly env?: NodeJS.ProcessEnv;
  /** Seconds of each job's output ignored before measuring [5]. */
  readonly warmupSeconds: number;
  /** Seconds measured after the warm-up [20]. */
  readonly measureSeconds: number;
  readonly journal: JournalFile;
  /**
   * How MPS configs get their server: start `nvidia-cuda-mps-control` (real GPUs), or only set
   * CUDA_MPS_PIPE_DIRECTORY for the clients (simulated GPUs).
   */
  readonly startMps: (pipeDir: string) => Promise<() => Promise<void>>;
  /** Tells the device layer a job runs on an instance (the simulator shows it in status). */
  readonly registerJob?: (pid: number, device: JobDevice) => () => void;
  /** Progress of the current config, 0..1. */
  readonly onProgress?: (fraction: number) => void;
  /** Aborts the run (Ctrl-C): every child is stopped. */
  readonly signal?: AbortSignal;
}

/** Where one job runs. */
export interface JobDevice {
  readonly uuid: string;
  readonly gpuInstanceId: number | null;
  readonly computeInstanceId: number | null;
}

/** What one config measured. */
export interface MeasuredConfig {
  readonly name: string;
  readonly jobs: number;
  /** Steady-state samples per second of each job. */
  readonly perJob: readonly number[];
  readonly samplesPerSecond: number;
  readonly datasetSize: number | null;
  /**
   * Largest GPU memory any one job used, MiB, as the driver reports it per process (nvidia-smi's
   * per-process memory: the CUDA context included); null when the driver showed none of them.
   */
  readonly peakMemoryMiB: number | null;
}

/** Seconds between reads of per-process GPU memory while jobs run. */
const MEMORY_POLL_SECONDS = 1;

/** Puts the GPU in the layout a config needs (MIG off, or N instances of a profile). */
async function prepareGpu(config: BenchConfig, opts: RunnerOptions): Promise<JobDevice[]> {
  const found = await readCurrentState(opts.port);
  const gpu = found.find((g) => g.info.index === opts.gpuIndex);
  if (!gpu) throw new MigpoolError('BAD_INPUT', `no GPU ${opts.gpuIndex} on this machine (it has ${found.length})`);
  let desired: DesiredGpu;
  if (config.kind === 'mig') {
    const ci = ciProfilesOf(config.profile).find((c) => c.isDefault);
    if (!ci) throw new MigpoolError('RUNTIME', `no default compute instance for ${config.profile.name}`);
    desired = { migEnabled: true, groups: Array.from({ length: config.jobs }, () => ({ gi: config.profile, cis: [ci] })) };
  } else {
    desired = { migEnabled: false, groups: [] };
  }
  const { plans, refusals } = planAll(found, new Map([[opts.gpuIndex, desired]]), {});
  if (refusals.length > 0) throw new MigpoolError('DEVICE', `cannot set up ${config.name}: ${refusals.join('; ')}`);
  await executePlans(opts.port, plans, `bench ${config.name}`, opts.journal);
  if (config.kind !== 'mig') {
    const info = (await opts.port.listGpus()).find((g) => g.index === opts.gpuIndex);
    return Array.from({ length: config.jobs }, () => ({ uuid: info?.uuid ?? '', gpuInstanceId: null, computeInstanceId: null }));
  }
  const gis = (await opts.port.listGpuInstances(opts.gpuIndex)).filter((g) => g.profile === config.profile.name);
  const cis = await opts.port.listComputeInstances(opts.gpuIndex);
  return gis.map((g) => {
    const ci = cis.find((c) => c.gpuInstanceId === g.id);
    return { uuid: ci?.uuid ?? '', gpuInstanceId: g.id, computeInstanceId: ci?.id ?? null };
  });
}

interface RunningJob {
  readonly child: ChildProcess;
  readonly reports: TimedReport[];
  datasetSize: number | null;
  exited: { code: number | null; signal: NodeJS.Signals | null } | null;
  lastErr: string;
  unregister: () => void;
  readonly device: JobDevice;
  peakMemoryMiB: number | null;
}

function startJob(device: JobDevice, index: number, config: BenchConfig, opts: RunnerOptions, extraEnv: NodeJS.ProcessEnv): RunningJob {
  const [program, ...args] = opts.command;
  if (!program) throw new MigpoolError('BAD_INPUT', '--command is empty');
  const child = spawn(program, args, {
    cwd: opts.cwd,
    env: { ...(opts.env ?? process.env), ...extraEnv, CUDA_VISIBLE_DEVICES: device.uuid, MIGPOOL_BENCH_JOB: String(index), MIGPOOL_BENCH_CONFIG: config.name },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const started = performance.now();
  const job: RunningJob = { child, reports: [], datasetSize: null, exited: null, lastErr: '', unregister: () => undefined, device, peakMemoryMiB: null };
  createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
    const report = parseProgressLine(line);
    if (!report) return;
    job.reports.push({ at: (performance.now() - started) / 1000, samples: report.samples });
    if (report.datasetSize) job.datasetSize = report.datasetSize;
  });
  createInterface({ input: child.stderr as NodeJS.ReadableStream }).on('line', (line) => {
    if (line.trim()) job.lastErr = line.trim();
  });
  child.on('exit', (code, signal) => {
    job.exited = { code, signal };
  });
  child.on('error', (e) => {
    job.exited = { code: 127, signal: null };
    job.lastErr = e.message;
  });
  if (child.pid !== undefined && opts.registerJob) job.unregister = opts.registerJob(child.pid, device);
  return job;
}

/** Stops a job's whole process group: SIGTERM, then SIGKILL after a grace period. */
async function stopJob(job: RunningJob, graceMs = 3000): Promise<void> {
  job.unregister();
  const pid = job.child.pid;
  if (pid === undefined || job.exited) return;
  const kill = (sig: NodeJS.Signals) => {
    try {
      process.kill(-pid, sig);
    } catch {
      // Already gone.
    }
  };
  kill('SIGTERM');
  const deadline = Date.now() + graceMs;
  while (!job.exited && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
  if (!job.exited) kill('SIGKILL');
  while (!job.exited && Date.now() < deadline + 2000) await new Promise((r) => setTimeout(r, 25));
}

/**
 * Seconds a job may take to print its first progress report (start-up: interpreter, CUDA context,
 * data loading) before the bench gives up on it. A stated allowance: warm-up and measurement are
 * counted from each job's first report, so start-up never eats into them.
 */
export const STARTUP_LIMIT_SECONDS = 120;

/** Seconds since start of a job's first progress report, or null before it. */
const firstReportAt = (job: RunningJob): number | null => job.reports[0]?.at ?? null;

/** Runs jobs side by side until each has run warm-up plus measurement past its first report; stops them all whatever happens. */
/**
 * Records each job's GPU memory from the driver's process list: the process with the job's pid, or
 * any process on the job's own MIG instance, or, for a job alone on the whole GPU, any process on it.
 */
async function readMemory(jobs: readonly RunningJob[], opts: RunnerOptions): Promise<void> {
  let processes;
  try {
    processes = (await opts.port.listProcesses()).filter((p) => p.gpu === opts.gpuIndex);
  } catch {
    return; // memory is a by-product of the bench: a failed read leaves it unknown
  }
  for (const job of jobs) {
    const d = job.device;
    const mine = processes.filter(
      (p) =>
        p.pid === job.child.pid ||
        (d.gpuInstanceId !== null && p.gpuInstanceId === d.gpuInstanceId && p.computeInstanceId === d.computeInstanceId) ||
        (d.gpuInstanceId === null && jobs.length === 1 && p.gpuInstanceId === null),
    );
    for (const p of mine) job.peakMemoryMiB = Math.max(job.peakMemoryMiB ?? 0, p.usedMemoryMiB);
  }
}

async function runTogether(jobsOf: () => RunningJob[], seconds: number, opts: RunnerOptions, label: string): Promise<RunningJob[]> {
  const jobs = jobsOf();
  const started = performance.now();
  let lastMemoryRead = -Infinity;
  try {
    for (;;) {
      if ((performance.now() - lastMemoryRead) / 1000 >= MEMORY_POLL_SECONDS) {
        lastMemoryRead = performance.now();
        await readMemory(jobs, opts);
      }
      if (opts.signal?.aborted) throw new MigpoolError('RUNTIME', `bench interrupted during ${label}; every job was stopped`);
      const failed = jobs.find((j) => j.exited);
      if (failed) {
        const how = failed.exited?.signal ? `signal ${failed.exited.signal}` : `exit status ${failed.exited?.code}`;
        throw new MigpoolError('RUNTIME', `${label}: a job ended early (${how})${failed.lastErr ? `: ${failed.lastErr}` : ''}`);
      }
      const elapsed = (performance.now() - started) / 1000;
      const silent = jobs.findIndex((j) => firstReportAt(j) === null);
      if (silent >= 0 && elapsed > STARTUP_LIMIT_SECONDS) {
        throw new MigpoolError('RUNTIME', `${label}: job ${silent} printed no progress report in ${STARTUP_LIMIT_SECONDS}s; does it print {"migpool_samples": N} lines? (see examples/train_mig.py)`);
      }
      const since = silent >= 0 ? 0 : Math.min(...jobs.map((j) => elapsed - (firstReportAt(j) ?? 0)));
      opts.onProgress?.(Math.min(1, since / seconds));
      if (since >= seconds) return jobs;
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    await Promise.all(jobs.map((j) => stopJob(j)));
  }
}

/**
 * Runs one config for real: sets the GPU up through the device layer, starts one process per job
 * with CUDA_VISIBLE_DEVICES set to its MIG device (or GPU), reads the progress protocol, measures
 * steady-state throughput after the warm-up, and stops every child at the end, on error or on
 * abort. Serial configs run their jobs one after another.
 */
export async function runConfig(config: BenchConfig, opts: RunnerOptions): Promise<MeasuredConfig> {
  const devices = await prepareGpu(config, opts);
  if (devices.length < config.jobs || devices.some((d) => !d.uuid)) {
    throw new MigpoolError('DEVICE', `${config.name}: the device layer gave ${devices.filter((d) => d.uuid).length} usable devices for ${config.jobs} jobs`);
  }
  const seconds = opts.warmupSeconds + opts.measureSeconds;
  let stopMps: (() => Promise<void>) | null = null;
  const extraEnv: NodeJS.ProcessEnv = {};
  if (config.kind === 'mps') {
    const pipeDir = `/tmp/migpool-mps-${process.pid}-${config.jobs}`;
    stopMps = await opts.startMps(pipeDir);
    extraEnv['CUDA_MPS_PIPE_DIRECTORY'] = pipeDir;
    extraEnv['CUDA_MPS_LOG_DIRECTORY'] = pipeDir;
  }
  try {
    const finished: RunningJob[] = [];
    if (config.kind === 'serial') {
      for (let i = 0; i < config.jobs; i++) {
        const device = devices[i] as JobDevice;
        finished.push(...(await runTogether(() => [startJob(device, i, config, opts, extraEnv)], seconds, { ...opts, onProgress: (f) => opts.onProgress?.((i + f) / config.jobs) }, `${config.name} job ${i}`)));
      }
    } else {
      finished.push(...(await runTogether(() => devices.slice(0, config.jobs).map((d, i) => startJob(d, i, config, opts, extraEnv)), seconds, opts, config.name)));
    }
    const perJob = finished.map((j, i) => {
      const rate = steadyThroughput(j.reports, (firstReportAt(j) ?? 0) + opts.warmupSeconds);
      if (rate === null) {
        throw new MigpoolError('RUNTIME', `${config.name} job ${i}: fewer than two progress reports after the ${opts.warmupSeconds}s warm-up (counted from its first report); does it print {"migpool_samples": N} lines? (see examples/train_mig.py)`);
      }
      return rate;
    });
    const sum = perJob.reduce((a, b) => a + b, 0);
    return {
      name: config.name,
      jobs: config.jobs,
      perJob,
      samplesPerSecond: config.kind === 'serial' ? sum / perJob.length : sum,
      datasetSize: finished.find((j) => j.datasetSize !== null)?.datasetSize ?? null,
      peakMemoryMiB: finished.reduce<number | null>((m, j) => (j.peakMemoryMiB === null ? m : Math.max(m ?? 0, j.peakMemoryMiB)), null),
    };
  } finally {
    if (stopMps) await stopMps();
  }
}
