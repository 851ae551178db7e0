import { readFileSync } from 'node:fs';
import { it } from 'vitest';
import { simulate } from '../../sim/engine.js';
import { parseFleet } from '../../sim/fleet.js';
import { syntheticTrace, parseMix, DEFAULT_MIX_SPEC, readPhillyTrace, readAlibabaTrace } from '../../sim/traces/index.js';
import { createRandom } from '../../random.js';
import { migpoolPolicy, type MigpoolTuning } from './migpool.js';
import { tiresiasPolicy } from './tiresias.js';
import { exclusivePolicy } from './exclusive.js';
import type { Policy } from '../types.js';

const configs: [string, () => Policy][] = JSON.parse(process.env.EXP ?? '[]').map((c: Partial<MigpoolTuning> | string) =>
  typeof c === 'string' ? [c, () => (c === 'tiresias' ? tiresiasPolicy() : exclusivePolicy())] : [JSON.stringify(c), () => migpoolPolicy(c)],
);
it('exp', () => {
  const trace = process.env.TRACE ?? 'synthetic';
  const fleet = parseFleet(process.env.FLEET ?? '16xA100-SXM4-40GB');
  const mix = parseMix(DEFAULT_MIX_SPEC);
  for (const seed of [1, 2, 3].slice(0, Number(process.env.SEEDS ?? 1))) {
    const random = createRandom(seed);
    const limit = process.env.LIMIT ? { limit: Number(process.env.LIMIT) } : {};
    const jobs =
      trace === 'synthetic'
        ? syntheticTrace({ jobs: 1000, arrivalRatePerHour: 12.5, random, mix })
        : trace === 'philly'
          ? readPhillyTrace(readFileSync('data/traces/philly/philly.csv', 'utf8'), { random, mix, file: 'p', ...limit }).jobs
          : readAlibabaTrace(readFileSync('data/traces/alibaba-v2023/openb_pod_list_default.csv', 'utf8'), { random, mix, gpuModel: fleet.gpus[0]!, file: 'a', ...limit }).jobs;
    for (const [name, mk] of configs) {
      const t0 = Date.now();
      const r = simulate({ fleet, jobs, policy: mk(), seed, preemptionCostSeconds: 60, info: { mode: (process.env.INFO ?? 'noisy') as 'noisy', seed } });
      const x = r as unknown as Record<string, any>;
      console.log(`R ${seed} ${name} avg=${(x.metrics.avgJctSeconds / 3600).toFixed(2)}h mk=${(x.metrics.makespanSeconds / 86400).toFixed(2)}d done=${x.metrics.completed} p99sd=${x.slowdown?.p99?.toFixed(1)} big99=${((x.bigJobs?.p99JctSeconds ?? 0) / 86400).toFixed(2)}d pre=${JSON.stringify(x.preemptions)} ${((Date.now() - t0) / 1000).toFixed(1)}s`);
    }
  }
}, 3600000);
