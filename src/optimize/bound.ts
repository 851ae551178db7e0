/**
 * A Lagrangian upper bound for problems whose LP relaxation is too large to solve. Pricing each job
 * of class c at lambda_c >= 0 and dropping "each job at most once" gives, for any prices,
 *
 *   bound(lambda) = sum_c K_c lambda_c + sum_m N_m max_l sum_t count(l,t) max(0, max_c v[c,t] - lambda_c)
 *
 * (every slot takes the best priced job, every GPU its best layout): a valid upper bound. With
 * lambda = 0 it is each GPU's best layout filled with the best job for every slot; with lambda_c the
 * best value of class c it is every job on its best slot. Subgradient steps (Polyak, towards a
 * known objective) lower it towards the LP bound, which is its minimum over lambda.
 */
import type { Compiled } from './compile.js';

export function lagrangianBound(compiled: Compiled, target: number, iterations = 300): number {
  const T = compiled.slotTypes.length;
  const C = compiled.classes.length;
  const lambda = new Float64Array(C);
  const reduced = new Float64Array(T);
  const argmax = new Int32Array(T);
  const usage = new Float64Array(C);
  let best = Infinity;
  let scale = 2;
  for (let it = 0; it < iterations; it++) {
    reduced.fill(0);
    argmax.fill(-1);
    for (let c = 0; c < C; c++) {
      for (let t = 0; t < T; t++) {
        const i = c * T + t;
        if (!compiled.fits[i]) continue;
        const r = (compiled.value[i] ?? 0) - (lambda[c] ?? 0);
        if (r > (reduced[t] ?? 0)) {
          reduced[t] = r;
          argmax[t] = c;
        }
      }
    }
    let bound = 0;
    compiled.classes.forEach((cls, c) => (bound += cls.jobs.length * (lambda[c] ?? 0)));
    usage.fill(0);
    for (const group of compiled.models) {
      let bestOption = 0;
      let bestWorth = -1;
      group.options.forEach((o, l) => {
        const worth = o.counts.reduce((s, k, i) => s + k * (reduced[group.slotTypes[i] ?? 0] ?? 0), 0);
        if (worth > bestWorth) {
          bestWorth = worth;
          bestOption = l;
        }
      });
      bound += group.gpus.length * bestWorth;
      group.options[bestOption]?.counts.forEach((k, i) => {
        const c = argmax[group.slotTypes[i] ?? 0] ?? -1;
        if (c >= 0) usage[c] = (usage[c] ?? 0) + k * group.gpus.length;
      });
    }
    if (bound < best) best = bound;
    else scale *= 0.9;
    let norm = 0;
    const g = new Float64Array(C);
    compiled.classes.forEach((cls, c) => {
      let gc = cls.jobs.length - (usage[c] ?? 0);
      if (gc > 0 && (lambda[c] ?? 0) <= 0) gc = 0;
      g[c] = gc;
      norm += gc * gc;
    });
    if (norm === 0 || best - target <= 1e-9 * Math.max(1, best)) break;
    const step = (scale * (bound - target)) / norm;
    for (let c = 0; c < C; c++) lambda[c] = Math.max(0, (lambda[c] ?? 0) - step * (g[c] ?? 0));
  }
  return best;
}
