import { existsSync, readFileSync } from 'node:fs';
import { parsePolicy } from '../src/sched/registry.js';
import { simulate } from '../src/sim/engine.js';
import { parseFleet } from '../src/sim/fleet.js';
import type { SimulationInput, SimulationResult } from '../src/sim/types.js';
import { createRandom } from '../src/random.js';
import { parsePhillyTrace } from '../src/sim/traces/philly.js';

/** Where the Philly trace may sit: the project's data/ or the shared data folder beside it. */
const PHILLY_PATHS = ['data/traces/philly/philly.csv', '../shared/data/traces/philly/philly.csv'];
const FLEET = '2048xA100-SXM4-40GB';
const POLICIES = ['exclusive', 'timeslice:2', 'mps:2', 'static:7x1g.5gb', 'static:3g.20gb+2g.10gb+1g.5gb+1g.5gb', 'miso', 'migpool'];
const TARGET_SECONDS = 30;

/**
 * Replays the whole Philly trace (82k jobs) on 2,048 A100-40GB through each policy, one after the
 * other on one core: seconds, events per second and peak resident memory, against the 30 s target.
 */
/** One simulation, timed, with the process's peak resident memory over it (MiB); an Error when it failed. */
function measured(input: SimulationInput): { result: SimulationResult; seconds: number; peakMiB: number } | Error {
  (globalThis as { gc?: () => void }).gc?.();
  let peak = process.memoryUsage().rss;
  const s = performance.now();
  try {
    const result = simulate({
      ...input,
      onProgress: () => {
        peak = Math.max(peak, process.memoryUsage().rss);
      },
    });
    return { result, seconds: (performance.now() - s) / 1000, peakMiB: Math.max(peak, process.memoryUsage().rss) / 2 ** 20 };
  } catch (e) {
    return e as Error;
  }
}

/** Issue 15's limits for a policy that sees only estimates: seconds and peak resident memory. */
const HONEST_POLICIES = ['exclusive', 'tiresias', 'migpool'];
const HONEST_TARGET_SECONDS = 10;
const HONEST_TARGET_RSS_MIB = 500;

/**
 * Philly (82k jobs) on 2,048 A100-40GB as policies see it in production (`--info noisy`,
 * `--preemption-cost 60`), beside the same policies with the oracle (`exact`, free preemption:
 * the figures measured before policies lost sight of the true work), in one run: seconds and
 * peak RSS against 10 s and 500 MiB each.
 */
export function benchSimulateHonest(policies: readonly string[] = HONEST_POLICIES): string[] {
  const path = PHILLY_PATHS.find((p) => existsSync(p));
  if (!path) return [`simulate (noisy): Philly trace not found (looked in ${PHILLY_PATHS.join(', ')}): skipped`];
  const jobs = parsePhillyTrace(readFileSync(path, 'utf8'), { random: createRandom(1), file: path });
  const fleet = parseFleet(FLEET);
  const lines = [
    `simulate: Philly (${jobs.length} jobs) on ${FLEET}, --info noisy --preemption-cost 60 beside --info exact --preemption-cost 0 (the earlier setting), each policy alone`,
    `  ${'policy'.padEnd(12)} ${'info'.padEnd(6)} ${'seconds'.padStart(8)} ${'peak RSS MiB'.padStart(13)} ${'avg JCT h'.padStart(10)} ${'completed'.padStart(12)}  target`,
  ];
  for (const name of policies) {
    for (const mode of ['exact', 'noisy'] as const) {
      const m = measured({ fleet, jobs, policy: parsePolicy(name), seed: 1, info: { mode, seed: 1 }, preemptionCostSeconds: mode === 'noisy' ? 60 : 0 });
      if (m instanceof Error) {
        lines.push(`  ${name.padEnd(12)} ${mode.padEnd(6)} FAILED: ${m.message}`);
        continue;
      }
      const { result, seconds, peakMiB } = m;
      const verdict = mode === 'exact' ? '(reference)' : `under ${HONEST_TARGET_SECONDS} s and ${HONEST_TARGET_RSS_MIB} MiB -> ${seconds < HONEST_TARGET_SECONDS && peakMiB < HONEST_TARGET_RSS_MIB ? 'PASS' : 'FAIL'}`;
      lines.push(
        `  ${name.padEnd(12)} ${mode.padEnd(6)} ${seconds.toFixed(2).padStart(8)} ${peakMiB.toFixed(0).padStart(13)} ${(result.metrics.avgJctSeconds / 3600).toFixed(2).padStart(10)} ${`${result.metrics.completed}/${result.metrics.jobs}`.padStart(12)}  ${verdict}`,
      );
    }
  }
  return lines;
}

export function benchSimulate(policies: readonly string[] = POLICIES): string[] {
  const lines: string[] = [];
  const path = PHILLY_PATHS.find((p) => existsSync(p));
  if (!path) return [`simulate: Philly trace not found (looked in ${PHILLY_PATHS.join(', ')}): skipped`];
  const t0 = performance.now();
  const jobs = parsePhillyTrace(readFileSync(path, 'utf8'), { random: createRandom(1), file: path });
  const parseMs = performance.now() - t0;
  const fleet = parseFleet(FLEET);
  lines.push(`simulate: Philly trace (${jobs.length} jobs, read in ${(parseMs / 1000).toFixed(1)} s) on ${FLEET}, one policy at a time`);
  lines.push(`  ${'policy'.padEnd(38)} ${'seconds'.padStart(8)} ${'events'.padStart(8)} ${'events/s'.padStart(10)} ${'peak RSS MB'.padStart(12)} ${'completed'.padStart(10)}  target`);
  for (const name of policies) {
    const m = measured({ fleet, jobs, policy: parsePolicy(name), seed: 1 });
    if (m instanceof Error) {
      lines.push(`  ${name.padEnd(38)} FAILED: ${m.message}`);
      continue;
    }
    const { result, seconds, peakMiB } = m;
    const verdict = seconds < TARGET_SECONDS ? 'PASS' : 'FAIL';
    lines.push(
      `  ${name.padEnd(38)} ${seconds.toFixed(2).padStart(8)} ${String(result.events).padStart(8)} ${Math.round(result.events / seconds).toString().padStart(10)} ${peakMiB.toFixed(0).padStart(12)} ${`${result.metrics.completed}/${result.metrics.jobs}`.padStart(10)}  under ${TARGET_SECONDS} s -> ${verdict}`,
    );
  }
  return lines;
}
