import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { ACTIVATION_BYTES, DEFAULT_AMPLIFICATION, DEFAULT_NETWORK, PARAM_BYTES } from '../../burst/cost.js';
import { COST_MODELS, resolveCostModel } from '../../burst/cost-models.js';
import { DEEPPOOL_ELEMENT_BYTES } from '../../burst/deeppool-cost.js';
import { BUILT_IN_MODELS, modelFromDeepPoolProfile } from '../../burst/models.js';
import { DEFAULT_PIECE_MS, DEFAULT_SLOWDOWN_BOUND, DEFAULT_SWITCH_MS, multiplex, type MultiplexOptions } from '../../burst/multiplex.js';
import { PLAN_FORMAT_VERSION, runtimeLayers } from '../../burst/plan-json.js';
import { planBurst, planDataParallel, singleGpuMs } from '../../burst/planner.js';
import { parseProfileJson } from '../../burst/profile-json.js';
import { createScalingModel } from '../../burst/scaling.js';
import type { ModelGraph, Network, Plan, PlanRequest, SplitSet } from '../../burst/types.js';
import { badInput } from '../../errors.js';
import { decimalValue } from '../../decimal-number.js';
import { resolveWorkload } from '../../perf/workloads.js';
import { deeppoolPolicy } from '../../sched/policies/deeppool.js';
import { dpPolicy } from '../../sched/policies/dp.js';
import type { ScalingModel } from '../../sched/types.js';
import type { TraceJob } from '../../sim/types.js';
import { simulate } from '../../sim/engine.js';
import { parseFleet } from '../../sim/fleet.js';
import { writeJson, type Io } from '../io.js';
import { loadBuiltInModel } from '../package-data.js';
import { renderTable } from '../table.js';

/** A model from `--profile FILE`: migpool's JSON (see profile-json.ts) or a DeepPool per-layer profile. */
function loadProfile(file: string): ModelGraph {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw badInput(`cannot read --profile '${file}': ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}; give a readable JSON or DeepPool profile file`);
  }
  return text.trimStart().startsWith('{') ? parseProfileJson(text, file) : modelFromDeepPoolProfile(text, file, file);
}

function wholeNumber(value: string, flag: string, min: number): number {
  if (!/^\d+$/.test(value.trim()) || Number(value) < min) throw badInput(`${flag} must be a whole number of at least ${min}, got '${value}'`);
  return Number(value);
}

function number(value: string, flag: string, min: number, strict = false, max = Infinity): number {
  const n = decimalValue(value);
  if (!Number.isFinite(n) || n < min || (strict && n === min)) throw badInput(`${flag} must be a number ${strict ? 'above' : 'of at least'} ${min}, got '${value}'`);
  if (n > max) throw badInput(`${flag} must be at most ${max}, got '${value}'`);
  return n;
}

/**
 * Bounds of the network flags, past which the cost model's times overflow (--bandwidth 1e-308
 * printed a data-parallel iteration of "Infinity" ms). 0.001 GB/s (1 MB/s) is slower than any
 * network a GPU cluster uses; 100,000 GB/s is 50 times NVLink 5's 1,800 GB/s per GPU (NVIDIA's
 * Blackwell datasheet). A latency of 1 s per transfer is beyond any interconnect.
 */
const MIN_BANDWIDTH_GBPS = 0.001;
const MAX_BANDWIDTH_GBPS = 100_000;
const MAX_LATENCY_US = 1_000_000;

function list(value: string, flag: string): string[] {
  const items = value.split(',').map((s) => s.trim());
  if (items.some((s) => s === '')) throw badInput(`${flag} has an empty entry: write e.g. ${flag === '--gpus' ? '8,64,1024' : 'vgg16,wrn,inception'}`);
  return items;
}

interface NetworkFlags {
  amplification?: string;
  bandwidth?: string;
  latency?: string;
}

function networkOf(opts: NetworkFlags): { amplification: number; network: Network } {
  return {
    amplification: opts.amplification === undefined ? DEFAULT_AMPLIFICATION : number(opts.amplification, '--amplification', 1),
    network: {
      bandwidthGBps: opts.bandwidth === undefined ? DEFAULT_NETWORK.bandwidthGBps : number(opts.bandwidth, '--bandwidth', MIN_BANDWIDTH_GBPS, false, MAX_BANDWIDTH_GBPS),
      latencyUs: opts.latency === undefined ? DEFAULT_NETWORK.latencyUs : number(opts.latency, '--latency', 0, false, MAX_LATENCY_US),
    },
  };
}

interface MultiplexFlags {
  slowdown?: string;
  pieceMs?: string;
  switchMs?: string;
}

function multiplexOf(opts: MultiplexFlags): MultiplexOptions {
  return {
    slowdownBound: opts.slowdown === undefined ? DEFAULT_SLOWDOWN_BOUND : number(opts.slowdown, '--slowdown', 1),
    pieceMs: opts.pieceMs === undefined ? DEFAULT_PIECE_MS : number(opts.pieceMs, '--piece-ms', 0),
    switchMs: opts.switchMs === undefined ? DEFAULT_SWITCH_MS : number(opts.switchMs, '--switch-ms', 0),
  };
}

const ms = (v: number): string => v.toFixed(2);

interface PlanOptions extends NetworkFlags, MultiplexFlags {
  model?: string;
  profile?: string;
  gpus: string;
  globalBatch: string;
  costModel?: string;
  splits?: string;
  json?: boolean;
}

/**
 * The `--json` shape of burst-plan (README, "How a plan reaches a runtime"): the request, the
 * data-parallel baseline, and the burst plan per layer for a runtime (plan-json.ts); a layer's ms
 * includes its input transfers, so they add up to iterationMs.
 */
export function burstPlanJson(model: ModelGraph, req: PlanRequest, dp: Plan, burst: Plan): unknown {
  return {
    format: PLAN_FORMAT_VERSION,
    model: model.name,
    gpus: req.gpus,
    globalBatch: req.globalBatch,
    amplification: req.amplification,
    network: req.network,
    costModel: req.costModel ?? 'migpool',
    splits: req.splits ?? 'migpool',
    dataParallel: { iterationMs: dp.iterationMs, gpuMs: dp.gpuMs },
    burst: { iterationMs: burst.iterationMs, gpuMs: burst.gpuMs, layers: runtimeLayers(model, burst, req) },
  };
}

function runPlan(opts: PlanOptions, io: Io): void {
  if ((opts.model === undefined) === (opts.profile === undefined)) throw badInput(`give exactly one of --model (${BUILT_IN_MODELS.map((m) => m.name).join(', ')}) and --profile FILE`);
  const gpus = wholeNumber(opts.gpus, '--gpus', 1);
  const globalBatch = wholeNumber(opts.globalBatch, '--global-batch', 1);
  const { amplification, network } = networkOf(opts);
  const mux = multiplexOf(opts);
  const model = opts.model !== undefined ? loadBuiltInModel(opts.model) : loadProfile(opts.profile as string);
  if (opts.costModel !== undefined && !Object.hasOwn(COST_MODELS, opts.costModel)) throw badInput(`--cost-model must be one of ${Object.keys(COST_MODELS).join(', ')} (deeppool: DeepPool's accounting), got '${opts.costModel}'`);
  const costModel = resolveCostModel(opts.costModel).name;
  if (opts.splits !== undefined && opts.splits !== 'migpool' && opts.splits !== 'deeppool') throw badInput(`--splits must be migpool (powers of two and all the GPUs) or deeppool (powers of two only), got '${opts.splits}'`);
  const splits: SplitSet = opts.splits ?? 'migpool';
  const req: PlanRequest = { gpus, globalBatch, amplification, network, costModel, splits };
  const dp = planDataParallel(model, req);
  const burst = planBurst(model, req);
  if (opts.json) return writeJson(io, burstPlanJson(model, req, dp, burst));
  const t1 = singleGpuMs(model, globalBatch);
  const m = multiplex(burst, gpus, mux);
  io.out(`${model.name} on ${gpus} GPUs, global batch ${globalBatch}, amplification limit ${amplification}, ${network.bandwidthGBps} GB/s, ${network.latencyUs} us${costModel === 'migpool' ? '' : `, ${costModel}'s cost model`}${splits === 'migpool' ? '' : ", DeepPool's splits (powers of two)"}`);
  io.out(`model: ${model.source}`);
  io.out('');
  io.out(
    renderTable(
      ['PLAN', 'ITERATION ms', 'GPU-ms', 'SPEEDUP vs 1 GPU', 'GPU-TIME vs 1 GPU'],
      [
        ['data-parallel', ms(dp.iterationMs), ms(dp.gpuMs), `${(t1 / dp.iterationMs).toFixed(2)}x`, `${(dp.gpuMs / t1).toFixed(2)}x`],
        ['burst', ms(burst.iterationMs), ms(burst.gpuMs), `${(t1 / burst.iterationMs).toFixed(2)}x`, `${(burst.gpuMs / t1).toFixed(2)}x`],
      ],
    ),
  );
  io.out('');
  io.out(renderTable(['LAYER', 'GPUS', 'ms', 'COMPUTE ms', 'SYNC ms', 'INPUT TRANSFER ms'], burst.layers.map((l) => [l.name, String(l.gpus), ms(l.ms + l.transferMs), ms(l.computeMs), ms(l.syncMs), ms(l.transferMs)])));
  io.out('');
  io.out(
    `multiplexing: the burst plan leaves ${(m.idleShare * 100).toFixed(1)}% of its GPUs' time idle; background jobs get ${m.backgroundGpus.toFixed(1)} GPUs' worth of it while the foreground runs at ${m.slowdown.toFixed(3)}x its solo iteration (bound ${mux.slowdownBound}, pieces ${mux.pieceMs} ms, switching ${mux.switchMs} ms per gap)`,
  );
  const accounting =
    costModel === 'migpool'
      ? `parameters fp32 (${PARAM_BYTES} B), activations fp16 (${ACTIVATION_BYTES} B, autocast)`
      : `DeepPool's accounting: ${DEEPPOOL_ELEMENT_BYTES}-byte activations, convolution gradients counted as DeepPool counts them (kernel_size x out_channels values), linear gradients only when split, no ring factor`;
  io.err(`note: ${accounting}; per-GPU batches above the profiled ones are extrapolated linearly; GPU memory is not checked`);
}

interface SimOptions extends NetworkFlags, MultiplexFlags {
  models: string;
  gpus: string;
  globalBatch: string;
  hours: string;
  backgroundMinutes: string;
  seed: string;
  json?: boolean;
}

/** Background jobs per GPU of the scenario: enough to fill every GPU as jobs finish during the run. */
const BACKGROUND_PER_GPU = 4;

/** One row of `burst-sim`. */
export interface BurstSimRow {
  readonly model: string;
  readonly gpus: number;
  readonly dataParallel: { readonly iterationMs: number; readonly gpuMs: number };
  readonly burst: { readonly iterationMs: number; readonly gpuMs: number; readonly slowdown: number; readonly backgroundGpus: number };
  /** Work per second (whole GPUs' worth) over the run, foreground and background, under each policy. */
  readonly throughput: {
    readonly dp: { readonly foreground: number; readonly background: number; readonly total: number };
    readonly deeppool: { readonly foreground: number; readonly background: number; readonly total: number };
    readonly ratio: number;
  };
}

/**
 * DeepPool's comparison in the simulator: on N A100s, one strong-scaled foreground job on all N
 * GPUs (work far beyond the run) and BACKGROUND_PER_GPU x N single-GPU background jobs of
 * `backgroundMinutes` each, all at t=0, for `hours`; `dp` against `deeppool`. Throughput is the
 * work done (seconds alone on one GPU) per second of the run.
 */
export function burstSimRow(model: ModelGraph, scaling: ScalingModel, gpus: number, globalBatch: number, options: { hours: number; backgroundMinutes: number; amplification: number; network: Network; multiplex: MultiplexOptions; seed: number }): BurstSimRow {
  const req: PlanRequest = { gpus, globalBatch, amplification: options.amplification, network: options.network };
  const dp = planDataParallel(model, req);
  const burst = planBurst(model, req);
  const m = multiplex(burst, gpus, options.multiplex);
  const horizon = options.hours * 3600;
  const fgWorkload = resolveWorkload('large');
  const bgWorkload = resolveWorkload('small');
  const jobs: TraceJob[] = [{ id: 'foreground', workload: fgWorkload, gpus, priority: 'foreground', arrival: 0, work: 1e15, memoryGiB: null, profile: null, strongScaling: { model: model.name, globalBatch } }];
  for (let i = 0; i < BACKGROUND_PER_GPU * gpus; i++) {
    jobs.push({ id: `background-${i + 1}`, workload: bgWorkload, gpus: 1, priority: 'background', arrival: 0, work: options.backgroundMinutes * 60, memoryGiB: null, profile: null });
  }
  const fleet = parseFleet(`${gpus}xA100-SXM4-40GB`);
  const rate = (policy: ReturnType<typeof dpPolicy>) => {
    const r = simulate({ fleet, jobs, policy, seed: options.seed, scaling, untilSeconds: horizon });
    const w = r.workDone ?? { foreground: 0, background: 0 };
    return { foreground: w.foreground / horizon, background: w.background / horizon, total: (w.foreground + w.background) / horizon };
  };
  const a = rate(dpPolicy());
  const b = rate(deeppoolPolicy());
  return {
    model: model.name,
    gpus,
    dataParallel: { iterationMs: dp.iterationMs, gpuMs: dp.gpuMs },
    burst: { iterationMs: burst.iterationMs, gpuMs: burst.gpuMs, slowdown: m.slowdown, backgroundGpus: m.backgroundGpus },
    throughput: { dp: a, deeppool: b, ratio: a.total > 0 ? b.total / a.total : Number.NaN },
  };
}

function runSim(opts: SimOptions, io: Io): void {
  const names = list(opts.models, '--models');
  const sizes = list(opts.gpus, '--gpus').map((g) => wholeNumber(g, '--gpus', 1));
  const globalBatch = wholeNumber(opts.globalBatch, '--global-batch', 1);
  const hours = number(opts.hours, '--hours', 0, true);
  const backgroundMinutes = number(opts.backgroundMinutes, '--background-minutes', 0, true);
  const seed = wholeNumber(opts.seed, '--seed', 0);
  const { amplification, network } = networkOf(opts);
  const mux = multiplexOf(opts);
  const tooSmall = sizes.find((g) => g > globalBatch);
  if (tooSmall !== undefined) throw badInput(`--gpus ${tooSmall} is more than --global-batch ${globalBatch}: data parallelism needs a sample per GPU`);
  const models = names.map((n) => loadBuiltInModel(n));
  const scaling = createScalingModel(models, { amplification, network, multiplex: mux });
  const rows: BurstSimRow[] = [];
  for (const model of models) for (const gpus of sizes) rows.push(burstSimRow(model, scaling, gpus, globalBatch, { hours, backgroundMinutes, amplification, network, multiplex: mux, seed }));
  if (opts.json) return writeJson(io, { globalBatch, hours, amplification, network, multiplex: mux, rows });
  io.out(`DeepPool's comparison: one strong-scaled foreground job (global batch ${globalBatch}) on all N A100s plus ${BACKGROUND_PER_GPU}N single-GPU background jobs of ${backgroundMinutes} min, ${hours} h simulated; amplification ${amplification}, ${network.bandwidthGBps} GB/s, ${network.latencyUs} us`);
  io.out(
    renderTable(
      ['MODEL', 'GPUS', 'DP ITER ms', 'DP GPU-ms', 'BURST ITER ms', 'BURST GPU-ms', 'SLOWDOWN', 'dp WORK/s (fg+bg)', 'deeppool WORK/s (fg+bg)', 'deeppool/dp'],
      rows.map((r) => [
        r.model,
        String(r.gpus),
        ms(r.dataParallel.iterationMs),
        ms(r.dataParallel.gpuMs),
        ms(r.burst.iterationMs),
        ms(r.burst.gpuMs),
        `${r.burst.slowdown.toFixed(3)}x`,
        `${r.throughput.dp.total.toFixed(1)} (${r.throughput.dp.foreground.toFixed(1)}+${r.throughput.dp.background.toFixed(1)})`,
        `${r.throughput.deeppool.total.toFixed(1)} (${r.throughput.deeppool.foreground.toFixed(1)}+${r.throughput.deeppool.background.toFixed(1)})`,
        `${r.throughput.ratio.toFixed(2)}x`,
      ]),
    ),
  );
  io.err('note: WORK/s is work done per second in whole GPUs\' worth (a job\'s work is its time alone on one GPU); dp runs the foreground data-parallel and the background only on free GPUs, deeppool runs it burst-parallel and fills its idle GPU time');
}

/** `migpool burst-plan` and `migpool burst-sim`: DeepPool's burst parallelism and multiplexing. */
export function registerBurst(program: Command, io: Io): void {
  const builtIns = BUILT_IN_MODELS.map((m) => [m.name, ...m.aliases].join('|')).join(', ');
  program
    .command('burst-plan')
    .description('plan burst parallelism for a strong-scaled job: per layer, how many GPUs share the global batch; with the data-parallel baseline')
    .option('--model <name>', `a built-in model (DeepPool's A100 profiles): ${builtIns}`)
    .option('--profile <file>', 'a model profile: migpool JSON {"name","layers":[{"name","inputs":[names],"paramBytes","outputBytesPerSample","times":[{"batch","ms"}]}]} (layers in topological order; no "inputs": the layer before) or a DeepPool per-layer profile .txt')
    .requiredOption('--gpus <n>', 'GPUs of the job')
    .requiredOption('--global-batch <b>', 'samples per iteration over all GPUs (at least --gpus)')
    .option('--amplification <a>', `most GPU-time a layer may cost over its time on one GPU (1: no extra GPU-time; large: fastest plan; default ${DEFAULT_AMPLIFICATION}, DeepPool's)`)
    .option('--bandwidth <GBps>', `network bandwidth per GPU, GB/s (default ${DEFAULT_NETWORK.bandwidthGBps}, DeepPool's 8-GPU NVLink A100 figure)`)
    .option('--latency <us>', `latency per transfer, microseconds (default ${DEFAULT_NETWORK.latencyUs})`)
    .option('--slowdown <x>', `multiplexing: most the foreground may slow down (default ${DEFAULT_SLOWDOWN_BOUND})`)
    .option('--piece-ms <ms>', `multiplexing: background piece the foreground may wait for (default ${DEFAULT_PIECE_MS})`)
    .option('--switch-ms <ms>', `multiplexing: background time lost per idle gap (default ${DEFAULT_SWITCH_MS}, an assumption)`)
    .option('--cost-model <name>', `how plans are priced: ${Object.keys(COST_MODELS).join(', ')} (default migpool; deeppool: DeepPool's own accounting, to compare with its planner)`)
    .option('--splits <set>', "GPU counts a layer may use: migpool (powers of two and all the GPUs; default) or deeppool (powers of two only, as DeepPool)")
    .option('--json', 'print JSON for a runtime: {"format","model","gpus","globalBatch","amplification","network","costModel","splits","dataParallel":{"iterationMs","gpuMs"},"burst":{"iterationMs","gpuMs","layers":[{"index","name","kind","inputs","gpus","ranks","samples","ms","computeMs","syncMs","transferMs","gradientBytes"}]}} (README: how a plan reaches a runtime)')
    .action((opts: PlanOptions) => runPlan(opts, io));
  program
    .command('burst-sim')
    .description("simulate DeepPool's comparison: a strong-scaled foreground job on N GPUs plus single-GPU background jobs, policy dp (data-parallel, background waits) against deeppool (burst-parallel, background fills idle GPU time); cluster throughput of each")
    .option('--models <list>', `built-in models, comma-separated: ${builtIns}`, 'vgg16,wrn,inception')
    .option('--gpus <list>', 'cluster sizes, comma-separated', '8,64,1024')
    .option('--global-batch <b>', 'global batch of the foreground job', '1024')
    .option('--hours <h>', 'simulated hours', '1')
    .option('--background-minutes <m>', 'work of each background job, minutes alone on one GPU', '30')
    .option('--seed <n>', 'seed of the policies', '1')
    .option('--amplification <a>', `amplification limit of the burst plans (default ${DEFAULT_AMPLIFICATION})`)
    .option('--bandwidth <GBps>', `network bandwidth per GPU, GB/s (default ${DEFAULT_NETWORK.bandwidthGBps})`)
    .option('--latency <us>', `latency per transfer, microseconds (default ${DEFAULT_NETWORK.latencyUs})`)
    .option('--slowdown <x>', `most the foreground may slow down (default ${DEFAULT_SLOWDOWN_BOUND})`)
    .option('--piece-ms <ms>', `background piece the foreground may wait for (default ${DEFAULT_PIECE_MS})`)
    .option('--switch-ms <ms>', `background time lost per idle gap (default ${DEFAULT_SWITCH_MS}, an assumption)`)
    .option('--json', 'print JSON: {"globalBatch","hours",...,"rows":[{"model","gpus","dataParallel","burst","throughput":{"dp","deeppool","ratio"}}]}')
    .action((opts: SimOptions) => runSim(opts, io));
}
