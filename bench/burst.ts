import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { DEFAULT_NETWORK } from '../src/burst/cost.js';
import { BUILT_IN_MODELS, builtInModel } from '../src/burst/models.js';
import { evaluatePlan, planBurst, planDataParallel } from '../src/burst/planner.js';
import type { ModelGraph, PlanRequest } from '../src/burst/types.js';

const GPUS = 1024;
const GLOBAL_BATCH = 1024;
/** "Well under a second" (issue 7): the whole command, and the planner alone, against this. */
const TARGET_MS = 1000;
const RUNS = 9;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? 0;
}

function timeMs(f: () => unknown): number {
  const runs: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t0 = performance.now();
    f();
    runs.push(performance.now() - t0);
  }
  return median(runs);
}

/**
 * The burst planner on 1,024 GPUs (global batch 1,024) for each built-in model: median ms of the
 * exact plan at amplification 2 and at 1e9 (more feasible splits, larger tables), beside the
 * data-parallel baseline's evaluation (one pass over the layers) and the target; then the whole
 * `migpool burst-plan --json` command (process start, reading the profile, planning) per model,
 * beside `migpool --version` (process start and loading the CLI alone); then benchDeepPool.
 */
export function benchBurst(): string[] {
  const dataDir = fileURLToPath(new URL('../../data/deeppool/', import.meta.url));
  if (!existsSync(dataDir)) return [`burst: ${dataDir} not found: skipped`];
  const lines = [`burst-plan: ${GPUS} GPUs, global batch ${GLOBAL_BATCH}, median of ${RUNS} runs, one core`];
  lines.push(`  ${'model'.padEnd(14)} ${'layers'.padStart(6)} ${'DP eval ms'.padStart(11)} ${'burst A=2 ms'.padStart(13)} ${'burst A=1e9 ms'.padStart(15)} ${'command ms'.padStart(11)}  target`);
  const bin = fileURLToPath(new URL('../../bin/migpool.js', import.meta.url));
  const command = (args: string[]): number => {
    if (!existsSync(bin)) return Number.NaN;
    const runs: number[] = [];
    for (let i = 0; i < 5; i++) {
      const t0 = performance.now();
      execFileSync('node', [bin, ...args], { stdio: 'ignore' });
      runs.push(performance.now() - t0);
    }
    return median(runs);
  };
  const startup = command(['--version']);
  for (const m of BUILT_IN_MODELS) {
    const model: ModelGraph = builtInModel(m, readFileSync(`${dataDir}${m.file}`, 'utf8'));
    const req = (amplification: number): PlanRequest => ({ gpus: GPUS, globalBatch: GLOBAL_BATCH, amplification, network: DEFAULT_NETWORK });
    const dp = timeMs(() => planDataParallel(model, req(2)));
    const two = timeMs(() => planBurst(model, req(2)));
    const wide = timeMs(() => planBurst(model, req(1e9)));
    const whole = command(['burst-plan', '--model', m.name, '--gpus', String(GPUS), '--global-batch', String(GLOBAL_BATCH), '--json']);
    const worst = Math.max(two, wide, Number.isNaN(whole) ? 0 : whole);
    lines.push(
      `  ${m.name.padEnd(14)} ${String(model.layers.length).padStart(6)} ${dp.toFixed(3).padStart(11)} ${two.toFixed(2).padStart(13)} ${wide.toFixed(2).padStart(15)} ${Number.isNaN(whole) ? '-'.padStart(11) : whole.toFixed(0).padStart(11)}  under ${TARGET_MS} ms -> ${worst < TARGET_MS ? 'PASS' : 'FAIL'}`,
    );
  }
  lines.push(`  (command ms: the whole process, median of 5; 'migpool --version' alone takes ${Number.isNaN(startup) ? '-' : startup.toFixed(0)} ms)`);
  lines.push(...benchDeepPool());
  return lines;
}

/**
 * DeepPool's planner's iteration time for VGG16 on 8 A100s, global batch 32, no amplification
 * limit, 266 GB/s and 40 us, as issue 21 reports it (DeepPool's planner, parallelizationPlanner.py
 * @ 7f823f26, on its own vggLayerGpuProfileA100.txt). Cited, not measured here.
 */
const DEEPPOOL_REPORTED_MS = 11.9;

/** GPUs per layer, run-length encoded: `8x19 1x3`. */
function shape(gpus: readonly number[]): string {
  const runs: [number, number][] = [];
  for (const g of gpus) {
    const last = runs[runs.length - 1];
    if (last && last[0] === g) last[1]++;
    else runs.push([g, 1]);
  }
  return runs.map(([g, n]) => `${g}x${n}`).join(' ');
}

/**
 * migpool's planner against DeepPool's on DeepPool's settings: VGG16, 4 samples per GPU, no
 * amplification limit, DeepPool's network. DeepPool's plan is the one found in DeepPool's search
 * space (2^k GPUs per layer) under DeepPool's accounting: both planners are exact on a chain, so
 * this is what DeepPool's planner returns (checked against its reported 11.90 ms, see the last
 * line). Each plan is priced under both accountings. 8 GPUs is the case; on 6 GPUs the
 * search spaces differ (DeepPool uses at most 4 of them).
 */
export function benchDeepPool(): string[] {
  const dataDir = fileURLToPath(new URL('../../data/deeppool/', import.meta.url));
  if (!existsSync(dataDir)) return [`burst vs DeepPool: ${dataDir} not found: skipped`];
  const m = BUILT_IN_MODELS.find((b) => b.name === 'vgg16');
  if (!m) return ['burst vs DeepPool: no vgg16 built in: skipped'];
  const model = builtInModel(m, readFileSync(`${dataDir}${m.file}`, 'utf8'));
  const lines = [`burst-plan against DeepPool's planner: VGG16, 4 samples per GPU, no amplification limit, ${DEFAULT_NETWORK.bandwidthGBps} GB/s, ${DEFAULT_NETWORK.latencyUs} us; ms per iteration`];
  lines.push(`  ${'GPUs'.padStart(4)} ${'batch'.padStart(5)}  ${'DeepPool reported'.padStart(17)}  ${"DeepPool's plan: its costs / migpool's".padStart(39)}  ${"migpool's planner: DeepPool's costs / migpool's".padStart(47)}  plans (GPUs x layers)`);
  for (const gpus of [8, 6]) {
    const base = { gpus, globalBatch: 4 * gpus, amplification: 1e9, network: DEFAULT_NETWORK };
    const price = (choice: number[], costModel: 'migpool' | 'deeppool'): number => evaluatePlan(model, { ...base, costModel }, choice).iterationMs;
    const theirs = planBurst(model, { ...base, splits: 'deeppool', costModel: 'deeppool' }).layers.map((l) => l.gpus);
    const oursUnderTheirs = planBurst(model, { ...base, costModel: 'deeppool' }).layers.map((l) => l.gpus);
    const ours = planBurst(model, base).layers.map((l) => l.gpus);
    const reported = gpus === 8 ? DEEPPOOL_REPORTED_MS.toFixed(2) : '-';
    const a = `${price(theirs, 'deeppool').toFixed(3)} / ${price(theirs, 'migpool').toFixed(3)}`;
    const b = `${price(oursUnderTheirs, 'deeppool').toFixed(3)} / ${price(ours, 'migpool').toFixed(3)}`;
    lines.push(`  ${String(gpus).padStart(4)} ${String(base.globalBatch).padStart(5)}  ${reported.padStart(17)}  ${a.padStart(39)}  ${b.padStart(47)}  DeepPool ${shape(theirs)}; migpool ${shape(oursUnderTheirs)} / ${shape(ours)}`);
  }
  lines.push(`  (DeepPool's 11.90 ms is its plan's 11.851 under its accounting plus 15 ReLU layers its graph adds at 1 us each and its profile cache pricing repeated identical convolutions at their last profiled row, +0.035 ms; before this change migpool's planner found the same 12.219 ms plan under migpool's accounting)`);
  return lines;
}
