import type { Highs } from 'highs';
import { MigpoolError } from '../../errors.js';
import { LinearProgram, solveProgram } from '../../optimize/highs.js';

/** A job as Gavel's allocation sees it: GPUs per run (its scale factor) and its speed on each GPU type. */
export interface FairShareJob {
  readonly gpus: number;
  /** Throughput on one GPU of each type (full-GPU seconds of work per second); 0 where it cannot run. */
  readonly speeds: readonly number[];
  /**
   * Its priority weight [1]: the max-min is over normalised throughput divided by the weight, so a
   * job of weight 2 gets twice the share of one of weight 1 (Gavel's `priority_weights`; fair
   * share gives a user's weight divided among their jobs).
   */
  readonly weight?: number;
}

/**
 * Gavel's heterogeneity-aware max-min fairness (Narayanan et al., "Heterogeneity-Aware Cluster
 * Scheduling Policies for Deep Learning Workloads", OSDI 2020, section 4.1 "LAS"; its code,
 * stanford-futuredata/gavel @ c4fa400, scheduler/policies/max_min_fairness.py
 * `MaxMinFairnessPolicyWithPerf`, with priority weights 1): the share of time `x[j][k]` each job
 * should run on each GPU type, maximising the least normalised throughput
 *
 *   min_j  gpus_j * sum_k speed_jk x_jk / prop_j,   prop_j = sum_k speed_jk N_k / N
 *
 * (prop_j: the job's throughput under the proportional allocation, time on each type in
 * proportion to its GPUs, scheduler/policies/proportional.py), subject to x >= 0,
 * sum_k x_jk <= 1 (a job runs on one type at a time) and sum_j gpus_j x_jk <= N_k (GPUs of each type).
 *
 * Gavel's LP fixes only the least share; what the other jobs get is whatever the solver returns.
 * Here it is made definite: on one GPU type the LP's water-filling solution (every job's share
 * gpus_j x_j = min(gpus_j, t) at the highest level t the GPUs hold; Gavel's
 * max_min_fairness_water_filling.py gives the same), computed in closed form; on several types a
 * second LP keeps every job at the least share found and maximises the sum of normalised
 * throughputs. Jobs that want more GPUs of a type than it has get no time on it. Identical jobs
 * (same GPUs and speeds) get identical shares: the LPs are solved per class of identical jobs.
 *
 * @param workers GPUs of each type
 * @param highs the HiGHS runtime, needed only when `workers` has several types
 * @returns x[j][k] for each job and type
 * @throws MigpoolError RUNTIME when several types are given without HiGHS, or HiGHS fails
 */
export function maxMinFairShares(jobs: readonly FairShareJob[], workers: readonly number[], highs?: Highs): number[][] {
  const types = workers.length;
  const usable = (j: FairShareJob, k: number): boolean => (j.speeds[k] ?? 0) > 0 && j.gpus <= (workers[k] ?? 0);
  if (types === 1) return waterFill(jobs, workers[0] as number, usable);
  if (!jobs.some((j) => workers.some((_, k) => usable(j, k)))) return jobs.map(() => workers.map(() => 0));
  if (!highs) throw new MigpoolError('RUNTIME', 'gavel on a fleet of several GPU models needs the HiGHS solver (load it with loadHighs() in src/exec/highs.ts and pass it to the policy)');
  return heterogeneous(jobs, workers, usable, highs);
}

function waterFill(jobs: readonly FairShareJob[], n: number, usable: (j: FairShareJob, k: number) => boolean): number[][] {
  const weightOf = (j: FairShareJob): number => j.weight ?? 1;
  const sizes = jobs
    .filter((j) => usable(j, 0))
    .map((j) => ({ g: j.gpus, w: weightOf(j) }))
    .sort((a, b) => a.g / a.w - b.g / b.w);
  // Highest t with sum_j min(gpus_j, w_j t) <= n: jobs with gpus_j <= w_j t run all the time.
  let rest = n;
  let weights = sizes.reduce((s, x) => s + x.w, 0);
  let level = Number.POSITIVE_INFINITY;
  for (const { g, w } of sizes) {
    if ((g / w) * weights > rest) {
      level = rest / weights;
      break;
    }
    rest -= g;
    weights -= w;
  }
  return jobs.map((j) => [usable(j, 0) ? Math.min(1, (weightOf(j) * level) / j.gpus) : 0]);
}

function heterogeneous(jobs: readonly FairShareJob[], workers: readonly number[], usable: (j: FairShareJob, k: number) => boolean, highs: Highs): number[][] {
  const total = workers.reduce((s, w) => s + w, 0);
  const classes = new Map<string, { job: FairShareJob; count: number }>();
  const classOf = jobs.map((j) => {
    const key = `${j.gpus}|${j.weight ?? 1}|${j.speeds.join(',')}`;
    const c = classes.get(key);
    if (c) c.count++;
    else classes.set(key, { job: j, count: 1 });
    return key;
  });
  const list = [...classes.entries()];
  const build = (least: number | null): { lp: LinearProgram; cols: number[][] } => {
    const lp = new LinearProgram();
    const runOnce = list.map(() => lp.addRow(0, 1));
    const capacity = workers.map((w) => lp.addRow(0, w));
    const share = list.map(([, { job }]) => lp.addRow(least !== null && workers.some((_, k) => usable(job, k)) ? least : 0, Number.POSITIVE_INFINITY));
    const cols = list.map(([, { job, count }], c) => {
      const prop = job.speeds.reduce((s, v, k) => s + v * (workers[k] as number), 0) / total;
      return workers.map((_, k) => {
        const ok = usable(job, k) && prop > 0;
        const norm = ok ? (job.gpus * (job.speeds[k] as number)) / prop : 0;
        return lp.addColumn(least === null ? 0 : count * norm, 0, ok ? 1 : 0, false, [
          { row: runOnce[c] as number, value: 1 },
          { row: capacity[k] as number, value: count * job.gpus },
          { row: share[c] as number, value: norm / (job.weight ?? 1) },
        ]);
      });
    });
    if (least === null) {
      // max t: share_c - t >= 0 for every class that can run somewhere.
      const rows = list.map(([, { job }], c) => (workers.some((_, k) => usable(job, k)) ? { row: share[c] as number, value: -1 } : null)).filter((e) => e !== null);
      lp.addColumn(1, 0, Number.POSITIVE_INFINITY, false, rows);
    }
    return { lp, cols };
  };
  const first = build(null);
  const one = solveProgram(highs, first.lp, { mip: false });
  if (one.status !== 'optimal' || !one.values) throw new MigpoolError('RUNTIME', `gavel: HiGHS could not solve the max-min fairness LP (${one.status})`);
  const least = one.values[first.lp.columns - 1] as number;
  const second = build(least * (1 - 1e-9));
  const two = solveProgram(highs, second.lp, { mip: false });
  const values = two.status === 'optimal' && two.values ? two.values : one.values;
  const cols = two.status === 'optimal' && two.values ? second.cols : first.cols;
  const byClass = new Map(list.map(([key], c) => [key, (cols[c] as number[]).map((col) => Math.min(1, Math.max(0, values[col] as number)))]));
  return classOf.map((key) => [...(byClass.get(key) as number[])]);
}
