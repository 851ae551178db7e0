import { existsSync, readFileSync } from 'node:fs';
import { parsePolicy } from '../src/sched/registry.js';
import { simulate } from '../src/sim/engine.js';
import { parseFleet } from '../src/sim/fleet.js';
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
    const policy = parsePolicy(name);
    let peak = process.memoryUsage().rss;
    const s = performance.now();
    let result;
    try {
      result = simulate({
        fleet,
        jobs,
        policy,
        seed: 1,
        onProgress: () => {
          peak = Math.max(peak, process.memoryUsage().rss);
        },
      });
    } catch (e) {
      lines.push(`  ${name.padEnd(38)} FAILED: ${(e as Error).message}`);
      continue;
    }
    const seconds = (performance.now() - s) / 1000;
    peak = Math.max(peak, process.memoryUsage().rss);
    const verdict = seconds < TARGET_SECONDS ? 'PASS' : 'FAIL';
    lines.push(
      `  ${name.padEnd(38)} ${seconds.toFixed(2).padStart(8)} ${String(result.events).padStart(8)} ${Math.round(result.events / seconds).toString().padStart(10)} ${(peak / 2 ** 20).toFixed(0).padStart(12)} ${`${result.metrics.completed}/${result.metrics.jobs}`.padStart(10)}  under ${TARGET_SECONDS} s -> ${verdict}`,
    );
  }
  return lines;
}
