import { it } from 'vitest';
import { resolveWorkload } from '../../perf/workloads.js';
import { simulate } from '../../sim/engine.js';
import { parseFleet } from '../../sim/fleet.js';
import type { TraceJob } from '../../sim/types.js';
import type { Policy } from '../types.js';
import { migpoolPolicy } from './migpool.js';
import { tiresiasPolicy } from './tiresias.js';
const large = resolveWorkload('large');
it('dbg', () => {
  const job = (id: string, arrival: number, work: number, over: Partial<TraceJob> = {}): TraceJob => ({ id, workload: large, gpus: 1, priority: 'foreground', arrival, work, memoryGiB: null, profile: null, ...over });
  const smalls = Array.from({ length: 400 }, (_, i) => job(`s${i}`, 60 * i, 4 * 3600));
  const inner = process.env.T ? tiresiasPolicy() : migpoolPolicy({ ageMinSeconds: 6 * 3600 });
  let n = 0;
  let tt = 0; const policy: Policy = { name: "m", decide(v, c) { const t0 = performance.now(); const d = inner.decide(v, c); tt += performance.now() - t0; if (n++ % 20000 === 0) console.log(v.now, JSON.stringify(d).slice(0,200), v.queue.length, v.running.size); if (n > 300000) throw new Error('loop'); return d; }, wakeAt: (v) => inner.wakeAt!(v) };
  const t1 = performance.now(); simulate({ fleet: parseFleet('4xA100-SXM4-40GB'), jobs: [...smalls, job('big', 30, 3600, { gpus: 4 })], policy, seed: 1, preemptionCostSeconds: 60 }); console.log("rounds", n, "decide ms", tt, "total", performance.now() - t1);
}, 60000);
