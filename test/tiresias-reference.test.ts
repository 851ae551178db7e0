import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createRandom } from '../src/random.js';
import { tiresiasPolicy } from '../src/sched/policies/tiresias.js';
import { simulate } from '../src/sim/engine.js';
import { parseFleet } from '../src/sim/fleet.js';
import { readPhillyTrace } from '../src/sim/traces/philly.js';

/**
 * The reference: SymbioticLab/Tiresias @ 959f9b0, simulator/run_sim.py `--schedule=dlas-gpu
 * --scheme=count` on the first 10,000 jobs of data/traces/philly/philly.csv by submission time
 * (submit time = timestamp minus the first one, duration and num_gpus as given) on 64 nodes x 8
 * GPUs: average JCT 30,751 s (issue 15; reproduced, 30,751.4 s, by a transcription of that loop).
 */
const REFERENCE_AVG_JCT_SECONDS = 30751;

describe('tiresias against the reference simulator', () => {
  it('gives the reference average JCT within 3% on Philly 10k jobs, 512 GPUs', () => {
    const text = readFileSync(new URL('../data/traces/philly/philly.csv', import.meta.url), 'utf8');
    const { jobs } = readPhillyTrace(text, { random: createRandom(1), limit: 10000 });
    const r = simulate({ fleet: parseFleet('512xA100-SXM4-40GB'), jobs, policy: tiresiasPolicy(), seed: 1 });
    expect(r.metrics.completed).toBe(10000);
    expect(Math.abs(r.metrics.avgJctSeconds / REFERENCE_AVG_JCT_SECONDS - 1)).toBeLessThan(0.03);
  }, 120_000);
});
