import { join } from 'node:path';
import type { Command } from 'commander';
import cliProgress from 'cli-progress';
import { defaultConfigs, parseBenchConfigs, type BenchConfig } from '../../bench/configs.js';
import { benchPlotSvg } from '../../bench/plot.js';
import { measuredResults, predictConfigs, type ConfigResult } from '../../bench/results.js';
import { runConfig, type MeasuredConfig } from '../../bench/runner.js';
import { JournalFile } from '../../control/journal.js';
import { modelOfGpu } from '../../control/state-reader.js';
import { badInput, MigpoolError } from '../../errors.js';
import { decimalValue } from '../../decimal-number.js';
import { splitCommandLine } from '../../exec/argv.js';
import { startMpsDaemon } from '../../exec/mps.js';
import { STATE_ENV } from '../../gpu/fake-nvidia-smi/main.js';
import { FileSimulatedGpuPort } from '../../gpu/simulated/file-port.js';
import { resolveGpuModel } from '../../mig/catalog/index.js';
import type { GpuModel } from '../../mig/types.js';
import { workloadFromPoints, workloadToYaml, type MeasuredPoint, type YamlPoint } from '../../perf/user-workload.js';
import type { SharingPoint } from '../../perf/types.js';
import { openGpuPort, simulatorStatePath, stateDirOf } from '../device.js';
import { writeJson, writeUserFile, type Io } from '../io.js';
import { loadWorkload } from '../workload-file.js';
import { renderTable } from '../table.js';

interface BenchOptions {
  gpu?: string;
  workload?: string;
  command?: string;
  configs?: string;
  simulate?: boolean;
  simulateGpus?: string;
  stateDir?: string;
  gpuIndex: string;
  warmup: string;
  duration: string;
  batchSize?: string;
  datasetSize?: string;
  json?: boolean;
  plot?: string;
  out?: string;
}

function positive(value: string, flag: string): number {
  const n = decimalValue(value);
  if (!Number.isFinite(n) || n <= 0) throw badInput(`${flag} must be a positive number, got '${value}'`);
  return n;
}

function fmt(v: number | null, digits: number): string {
  return v === null ? '-' : v.toFixed(digits);
}

function renderResults(gpu: string, workload: string, mode: string, results: readonly ConfigResult[]): string {
  const rows = results.map((r) => [r.name, String(r.jobs), r.fits === 'unknown' ? '?' : r.fits ? 'yes' : 'no', fmt(r.epochSeconds, 1), fmt(r.samplesPerSecond, 0), r.speedup === null ? '-' : `${r.speedup.toFixed(2)}x`]);
  return `${workload} on ${gpu} (${mode})\n${renderTable(['CONFIG', 'JOBS', 'FITS', 'EPOCH s/JOB', 'SAMPLES/s', 'SPEEDUP'], rows)}`;
}

/** `migpool bench`: each workload on each slice, alone and packed, predicted or measured. */
export function registerBench(program: Command, io: Io): void {
  program
    .command('bench')
    .description('how fast a training job runs on each MIG slice, alone and packed: predicted (--simulate) or measured')
    .option('--gpu <model>', 'GPU model (required with --simulate; checked against the device otherwise)')
    .option('--workload <name|file.yaml>', "built-in workload (small, medium, large, bert-base-squad, ...; see 'migpool workloads') or a YAML file written by --out")
    .option('--command <cmd>', 'program to benchmark, one copy per instance, speaking the progress protocol (examples/train_mig.py)')
    .option('--configs <list>', 'comma-separated: 1xfull, NxPROFILE (7x1g.5gb), NxTIMESLICE, NxMPS, NxSERIAL (default: 1xfull, each profile, each packing)')
    .option('--simulate', 'answer from the performance model, run nothing')
    .option('--simulate-gpus <spec>', 'run for real, on a simulated machine (e.g. 1xA100-SXM4-40GB) instead of nvidia-smi')
    .option('--state-dir <dir>', 'where the simulated machine and the apply journal are kept')
    .option('--gpu-index <n>', 'GPU to benchmark on', '0')
    .option('--warmup <seconds>', 'output ignored at the start of each job', '5')
    .option('--duration <seconds>', 'measured time after the warm-up', '20')
    .option('--batch-size <n>', 'samples per iteration of --command (for --out)')
    .option('--dataset-size <n>', 'samples per epoch of --command (when it does not say)')
    .option('--json', 'print JSON')
    .option('--plot <file.svg>', 'draw time per epoch and speedup per config as SVG')
    .option('--out <workload.yaml>', 'write the measured workload for the performance model')
    .action(async (opts: BenchOptions) => {
      if (opts.simulate) return benchSimulated(opts, io);
      return benchReal(opts, io);
    });
}

function finish(opts: BenchOptions, io: Io, gpu: string, workload: string, mode: string, results: ConfigResult[], extra: Record<string, unknown>): void {
  if (opts.plot) writeUserFile(opts.plot, benchPlotSvg(`${workload} on ${gpu}: ${mode}`, results), '--plot');
  if (opts.json) {
    writeJson(io, {
      gpu,
      workload,
      mode,
      configs: results.map((r) => ({ name: r.name, jobs: r.jobs, fits: r.fits, epochSeconds: r.epochSeconds, samplesPerSecond: r.samplesPerSecond, speedup: r.speedup })),
      ...extra,
    });
    return;
  }
  io.out(renderResults(gpu, workload, mode, results));
  if (opts.plot) io.out(`plot: ${opts.plot}`);
}

function benchSimulated(opts: BenchOptions, io: Io): void {
  if (!opts.gpu) throw badInput('--simulate needs --gpu MODEL, e.g. --gpu A100-SXM4-40GB');
  if (!opts.workload) throw badInput(`--simulate needs --workload NAME or --workload FILE.yaml, e.g. --workload small (--command runs a real program; drop --simulate for that)`);
  if (opts.out) throw badInput('--out writes measured points; it needs a real run, not --simulate');
  // These run a program; --simulate answers from the model and ran nothing, silently.
  if (opts.command !== undefined) throw badInput('--command runs a real program and --simulate runs nothing: give one of them (--simulate-gpus runs the program on a simulated machine)');
  if (opts.simulateGpus !== undefined) throw badInput('--simulate-gpus is for a real run of --command on a simulated machine; --simulate answers from the model: give one of them');
  const model = resolveGpuModel(opts.gpu);
  const workload = loadWorkload(opts.workload);
  const configs = opts.configs ? parseBenchConfigs(opts.configs, model) : defaultConfigs(model);
  const { results, caveats } = predictConfigs(workload, model, configs);
  finish(opts, io, model.name, workload.name, 'predicted by the performance model', results, { caveats, source: workload.source });
  if (!opts.json) for (const c of caveats) io.err(`note: ${c}`);
}

async function benchReal(opts: BenchOptions, io: Io): Promise<void> {
  if (!opts.command) throw badInput('a real bench needs --command "PROGRAM ARGS" (see examples/train_mig.py), or --simulate to answer from the model');
  const command = splitCommandLine(opts.command);
  const warmup = positive(opts.warmup, '--warmup');
  const duration = positive(opts.duration, '--duration');
  const gpuIndex = decimalValue(opts.gpuIndex);
  if (!Number.isInteger(gpuIndex) || gpuIndex < 0) throw badInput(`--gpu-index must be a GPU index, got '${opts.gpuIndex}'`);
  const device = { ...(opts.simulateGpus ? { simulate: opts.simulateGpus } : {}), ...(opts.stateDir ? { stateDir: opts.stateDir } : {}) };
  const port = openGpuPort(device);
  const info = (await port.listGpus()).find((g) => g.index === gpuIndex);
  if (!info) throw badInput(`--gpu-index ${gpuIndex}: no such GPU`);
  const found = modelOfGpu(info);
  if (!found) throw new MigpoolError('DEVICE', `GPU ${gpuIndex} (${info.name}) is not a MIG GPU migpool knows`);
  let model: GpuModel = found;
  if (opts.gpu) {
    model = resolveGpuModel(opts.gpu);
    if (model.name !== found.name) throw badInput(`--gpu ${opts.gpu} is ${model.name}, but GPU ${gpuIndex} is ${info.name} (${found.name})`);
  }
  const configs: BenchConfig[] = opts.configs ? parseBenchConfigs(opts.configs, model) : defaultConfigs(model);
  if (!configs.some((c) => c.name === '1xfull')) configs.unshift({ name: '1xfull', kind: 'full', jobs: 1 });
  const simulated = port instanceof FileSimulatedGpuPort ? port : null;
  const env: NodeJS.ProcessEnv = { ...process.env, ...(simulated ? { [STATE_ENV]: simulatorStatePath(device) } : {}) };
  const abort = new AbortController();
  const onSigint = () => abort.abort();
  process.once('SIGINT', onSigint);
  const bar = !opts.json && process.stderr.isTTY ? new cliProgress.SingleBar({ format: 'bench {config} [{bar}] {percentage}% | config {n}/{total}', stream: process.stderr }, cliProgress.Presets.shades_classic) : null;
  const measured: MeasuredConfig[] = [];
  try {
    bar?.start(100, 0, { config: '', n: 0, total: configs.length });
    for (const [i, config] of configs.entries()) {
      measured.push(
        await runConfig(config, {
          port,
          gpuIndex,
          command,
          env,
          warmupSeconds: warmup,
          measureSeconds: duration,
          journal: new JournalFile(join(stateDirOf(device), 'apply-journal.json')),
          startMps: simulated ? async () => async () => undefined : (dir) => startMpsDaemon(dir, env),
          registerJob: simulated
            ? (_pid, d) => {
                const simPid = simulated.update((machine) =>
                  machine.attachProcess(gpuIndex, {
                    ...(d.gpuInstanceId === null ? {} : { gpuInstanceId: d.gpuInstanceId }),
                    ...(d.computeInstanceId === null ? {} : { computeInstanceId: d.computeInstanceId }),
                    name: command[0] ?? 'job',
                  }),
                );
                return () => simulated.update((machine) => machine.detachProcess(simPid));
              }
            : undefined,
          onProgress: (f) => bar?.update(Math.round(((i + f) / configs.length) * 100), { config: config.name, n: i + 1, total: configs.length }),
          signal: abort.signal,
        }),
      );
    }
  } finally {
    bar?.stop();
    process.off('SIGINT', onSigint);
  }
  const datasetSize = opts.datasetSize ? positive(opts.datasetSize, '--dataset-size') : (measured.find((m) => m.datasetSize)?.datasetSize ?? 50_000);
  const results = measuredResults(measured, datasetSize);
  const name = opts.workload ?? command.join(' ');
  if (opts.out) {
    const batch = opts.batchSize ? positive(opts.batchSize, '--batch-size') : 128;
    const points: MeasuredPoint[] = [];
    const yamlPoints: YamlPoint[] = [];
    const sharing: SharingPoint[] = [];
    for (const m of measured) {
      const config = configs.find((c) => c.name === m.name);
      const perJob = m.perJob.reduce((a, b) => a + b, 0) / m.perJob.length;
      const iterationMs = (batch / perJob) * 1000;
      if (config?.kind === 'full') {
        points.push({ resource: { kind: 'full', gpu: model }, iterationMs });
        yamlPoints.push({ gpu: model.name, profile: 'full', iterationMs });
      } else if (config?.kind === 'mig') {
        points.push({ resource: { kind: 'mig', gpu: model, profile: config.profile.name }, iterationMs });
        yamlPoints.push({ gpu: model.name, profile: config.profile.name, iterationMs });
      } else if (config?.kind === 'timeslice' || config?.kind === 'mps') {
        sharing.push({ gpu: model.name, kind: config.kind, jobs: config.jobs, iterationMs });
      }
    }
    // Memory: the largest any job used in any config, as the driver reported it (null: none seen).
    const peaks = measured.map((m) => m.peakMemoryMiB).filter((v): v is number => v !== null);
    const memoryGiB = peaks.length > 0 ? Math.ceil((Math.max(...peaks) / 1024) * 100) / 100 : null;
    const fitted = workloadFromPoints(opts.workload ?? 'my-workload', batch, datasetSize, points, { sharing, memoryGiB });
    writeUserFile(opts.out, workloadToYaml(fitted, yamlPoints), '--out');
  }
  finish(opts, io, model.name, name, simulated ? 'measured on simulated GPUs' : 'measured', results, { warmupSeconds: warmup, measureSeconds: duration });
  if (opts.out && !opts.json) io.out(`workload: ${opts.out}`);
}
