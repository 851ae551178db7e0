import { loadTrace, type LoadedTrace } from '../src/cli/commands/simulate.js';
import { builtInScalingModel } from '../src/cli/package-data.js';
import { parsePolicy } from '../src/sched/registry.js';
import { figuresOf, type RunFigures } from '../src/sim/compare.js';
import { simulate } from '../src/sim/engine.js';
import { parseFleet } from '../src/sim/fleet.js';
import { parseInfoMode } from '../src/sim/info.js';
import { DEFAULT_MIX_SPEC, parseMix } from '../src/sim/traces/index.js';
import type { MatrixTrace } from './compare-matrix.js';

/** One simulation of the matrix. */
export interface RunTask {
  readonly id: number;
  readonly trace: MatrixTrace;
  readonly policy: string;
  /** The information model the simulator runs under. */
  readonly info: string;
  readonly seed: number;
  readonly preemptionCostSeconds: number;
}

/** The timeline is not reported: one sample a simulated day keeps memory small. */
const SAMPLE_EVERY_SECONDS = 86_400;

/** Traces read so far by this thread, by trace key and seed (a seed draws the workloads). */
const loaded = new Map<string, LoadedTrace>();

/**
 * Runs one task as `migpool simulate --trace T --fleet F [--limit] [--arrival-rate] --policies P
 * --info I --seed S --preemption-cost C` does (the same trace loader and simulator), and times it.
 */
export function runTask(t: RunTask): RunFigures {
  const fleet = parseFleet(t.trace.fleet);
  const key = `${t.trace.key}|${t.seed}`;
  let trace = loaded.get(key);
  if (!trace) {
    // Keep one seed's traces at a time: the 82k-job Philly trace is large.
    for (const k of loaded.keys()) if (!k.endsWith(`|${t.seed}`)) loaded.delete(k);
    trace = loadTrace({ trace: t.trace.trace, ...(t.trace.arrivalRate === undefined ? {} : { arrivalRate: String(t.trace.arrivalRate) }) }, fleet, parseMix(DEFAULT_MIX_SPEC), t.seed, t.trace.limit);
    loaded.set(key, trace);
  }
  const scaling = trace.jobs.some((j) => j.strongScaling !== undefined) ? builtInScalingModel() : undefined;
  const start = performance.now();
  const result = simulate({
    fleet,
    jobs: trace.jobs,
    policy: parsePolicy(t.policy),
    seed: t.seed,
    info: { mode: parseInfoMode(t.info), seed: t.seed },
    preemptionCostSeconds: t.preemptionCostSeconds,
    sampleEverySeconds: SAMPLE_EVERY_SECONDS,
    ...(scaling ? { scaling } : {}),
  });
  return figuresOf(result, (performance.now() - start) / 1000);
}
