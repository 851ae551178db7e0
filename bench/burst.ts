import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { DEFAULT_NETWORK } from '../src/burst/cost.js';
import { BUILT_IN_MODELS, builtInModel } from '../src/burst/models.js';
import { planBurst, planDataParallel } from '../src/burst/planner.js';
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
 * beside `migpool --version` (process start and loading the CLI alone).
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
  return lines;
}
