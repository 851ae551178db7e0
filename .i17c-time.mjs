import { readFileSync } from 'node:fs';
import { readPhillyTrace, parseMix, DEFAULT_MIX_SPEC } from './dist/src/sim/traces/index.js';
import { createRandom } from './dist/src/random.js';
import { simulate } from './dist/src/sim/engine.js';
import { parseFleet } from './dist/src/sim/fleet.js';
import { parsePolicy } from './dist/src/sched/registry.js';
let t=performance.now();
const tr = readPhillyTrace(readFileSync('data/traces/philly/philly.csv','utf8'), {random:createRandom(1), mix: parseMix(DEFAULT_MIX_SPEC), file:'p', limit: Number(process.argv[3]||20000)});
console.log('parse', (performance.now()-t)/1000, tr.jobs.length);
for (const p of process.argv[2].split(',')) { for (const mode of ['noisy','none']) {
t=performance.now();
const r = simulate({fleet: parseFleet(process.argv[4]||'256xA100-SXM4-40GB'), jobs: tr.jobs, policy: parsePolicy(p), seed:1, info:{mode, seed:1}, preemptionCostSeconds:60});
console.log(p, mode, ((performance.now()-t)/1000).toFixed(1), 's', (r.metrics.avgJctSeconds/3600).toFixed(2), r.slowdown.p99.toFixed(1), r.events);
}}
