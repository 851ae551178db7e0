import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { resolveGpuModel } from '../mig/catalog/index.js';
import { enumerateLayouts, placeProfiles } from '../mig/geometry.js';
import type { GpuModel } from '../mig/types.js';
import { resolveWorkload } from '../perf/workloads.js';
import { buildProblem, FULL_GPU, optimizePacking, type PackingProblem, type PackingResult } from './index.js';
import { randomProblem } from './random-problem.js';
import { loadHighs } from '../exec/highs.js';

const highs = await loadHighs();

const A30 = resolveGpuModel('A30');
const A100 = resolveGpuModel('A100-SXM4-40GB');
const H100 = resolveGpuModel('H100-80GB');

/** Best objective by enumerating every layout of every GPU (maximal or not) and every assignment. */
function bruteForce(problem: PackingProblem): number {
  const options = problem.gpus.map((model) => [[FULL_GPU], ...enumerateLayouts(model).map((l) => l.instances.map((i) => i.profile.name))]);
  const placeAll = problem.placeAll ?? false;
  let best = -Infinity;
  const slots = new Map<string, number>();
  const assign = (j: number, total: number): void => {
    const job = problem.jobs[j];
    if (!job) {
      best = Math.max(best, total);
      return;
    }
    if (!placeAll) assign(j + 1, total);
    for (const [key, left] of slots) {
      if (left === 0) continue;
      const [g, profile] = key.split('|') as [string, string];
      const model = problem.gpus[Number(g)] as GpuModel;
      const speed = job.speeds[model.name]?.[profile] ?? 0;
      if (speed <= 0) continue;
      slots.set(key, left - 1);
      assign(j + 1, total + (job.weight ?? 1) * speed);
      slots.set(key, left);
    }
  };
  const choose = (g: number): void => {
    if (g === problem.gpus.length) return assign(0, 0);
    for (const layout of options[g] ?? []) {
      const added: string[] = [];
      for (const p of layout) {
        const key = `${g}|${p}`;
        slots.set(key, (slots.get(key) ?? 0) + 1);
        added.push(key);
      }
      choose(g + 1);
      for (const key of added) {
        const n = (slots.get(key) ?? 1) - 1;
        if (n === 0) slots.delete(key);
        else slots.set(key, n);
      }
    }
  };
  choose(0);
  return best;
}

/** Checks that layouts are legal, slots used once, speeds and the objective as reported. */
function checkResult(problem: PackingProblem, r: PackingResult): void {
  expect(r.layouts.map((l) => l.gpu)).toEqual(problem.gpus.map((_, g) => g));
  const used = new Set<string>();
  for (const plan of r.layouts) {
    const model = problem.gpus[plan.gpu] as GpuModel;
    if (plan.layout === 'mig-off') continue;
    const profiles = plan.layout.map((s) => model.giProfiles.find((p) => p.name === s.profile));
    expect(profiles.every((p) => p !== undefined)).toBe(true);
    const existing = plan.layout.map((s, i) => {
      const profile = profiles[i]!;
      expect(profile.placements.some((pl) => pl.start === s.start)).toBe(true);
      return { profile, start: s.start, size: profile.placements[0]?.size ?? 0 };
    });
    expect(placeProfiles(model, [], existing).valid).toBe(true);
  }
  let objective = 0;
  const placed = new Set<number>();
  for (const a of r.assignments) {
    expect(placed.has(a.job)).toBe(false);
    placed.add(a.job);
    const plan = r.layouts[a.gpu]!;
    const model = problem.gpus[a.gpu] as GpuModel;
    if (a.profile === FULL_GPU) expect(plan.layout).toBe('mig-off');
    else expect(plan.layout !== 'mig-off' && plan.layout.some((s) => s.profile === a.profile && s.start === a.start)).toBe(true);
    const key = `${a.gpu}|${a.profile}|${a.start ?? ''}`;
    expect(used.has(key)).toBe(false);
    used.add(key);
    const job = problem.jobs[a.job]!;
    expect(a.speed).toBe(job.speeds[model.name]?.[a.profile] ?? 0);
    expect(a.speed).toBeGreaterThan(0);
    objective += (job.weight ?? 1) * a.speed;
  }
  expect(placed.size + r.unassigned.length).toBe(problem.jobs.length);
  expect(r.objective).toBeCloseTo(objective, 9);
  expect(r.objective).toBeLessThanOrEqual(r.bound + 1e-7);
  if (r.lpBound !== null) expect(r.objective).toBeLessThanOrEqual(r.lpBound + 1e-7);
}

describe('optimizePacking: exact on tiny instances (checked by brute force)', () => {
  const cases: { name: string; models: GpuModel[]; gpus: number; jobs: number; seeds: number[] }[] = [
    { name: '2 x A30, 4 jobs', models: [A30], gpus: 2, jobs: 4, seeds: [1, 2, 3, 4] },
    { name: '1 x A100, 5 jobs', models: [A100], gpus: 1, jobs: 5, seeds: [5, 6, 7] },
    { name: 'A30 + A100, 3 jobs', models: [A30, A100], gpus: 2, jobs: 3, seeds: [8, 9, 10] },
  ];
  for (const c of cases) {
    it.each(c.seeds)(`${c.name}, seed %i: the MIP reaches the brute-force optimum`, async (seed) => {
      for (const weighted of [false, true]) {
        const problem = randomProblem({ seed, models: c.models, gpus: c.gpus, jobs: c.jobs, weighted });
        const r = await optimizePacking(problem, { highs });
        checkResult(problem, r);
        expect(r.method).toBe('mip');
        expect(r.optimal).toBe(true);
        expect(r.objective).toBeCloseTo(bruteForce(problem), 9);
      }
    });
  }

  it('with placeAll: the optimum among packings that place every job, or CHECK_FAILED', async () => {
    let feasible = 0;
    for (const seed of [11, 12, 13, 14, 15, 16]) {
      const problem = randomProblem({ seed, models: [A30], gpus: 1, jobs: 4, placeAll: true });
      const best = bruteForce(problem);
      if (best === -Infinity) {
        await expect(optimizePacking(problem, { highs })).rejects.toMatchObject({ code: 'CHECK_FAILED' });
        continue;
      }
      feasible++;
      const r = await optimizePacking(problem, { highs });
      checkResult(problem, r);
      expect(r.unassigned).toEqual([]);
      expect(r.objective).toBeCloseTo(best, 9);
    }
    expect(feasible).toBeGreaterThan(0);
    const tooMany = randomProblem({ seed: 1, models: [A30], gpus: 1, jobs: 6, placeAll: true });
    await expect(optimizePacking(tooMany, { highs })).rejects.toMatchObject({ code: 'CHECK_FAILED' });
  });

  it('handles no jobs and no GPUs', async () => {
    const none = await optimizePacking({ gpus: [A100, A100], jobs: [] }, { highs });
    expect(none).toMatchObject({ objective: 0, bound: 0, gap: 0, assignments: [], unassigned: [] });
    expect(none.layouts.map((l) => l.layout)).toEqual(['mig-off', 'mig-off']);
    const noGpu = await optimizePacking({ gpus: [], jobs: [{ speeds: {} }] }, { highs });
    expect(noGpu).toMatchObject({ objective: 0, bound: 0, unassigned: [0], layouts: [] });
  });

  it('rejects negative speeds and weights', async () => {
    await expect(optimizePacking({ gpus: [A100], jobs: [{ weight: -1, speeds: {} }] }, { highs })).rejects.toMatchObject({ code: 'BAD_INPUT' });
    await expect(optimizePacking({ gpus: [A100], jobs: [{ speeds: { [A100.name]: { full: Number.NaN } } }] }, { highs })).rejects.toMatchObject({ code: 'BAD_INPUT' });
  });
});

describe('optimizePacking: heuristic', () => {
  it('stays under its bound and near it on random instances (fast-check, seeded)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 1_000_000 }), fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 60 }), fc.boolean(), async (seed, gpus, jobs, weighted) => {
        const problem = randomProblem({ seed, models: [A100, H100, A30], gpus, jobs, weighted });
        const heuristic = await optimizePacking(problem, { highs, exactMaxJobs: 0 });
        checkResult(problem, heuristic);
        expect(heuristic.method).toBe('heuristic');
        expect(heuristic.boundKind).toBe('lp');
        expect(heuristic.objective).toBeGreaterThanOrEqual(0.9 * heuristic.bound);
        const lagrangian = await optimizePacking(problem, { highs, exactMaxJobs: 0, maxLpColumns: 0 });
        checkResult(problem, lagrangian);
        expect(lagrangian.boundKind).toBe('lagrangian');
        expect(lagrangian.bound).toBeGreaterThanOrEqual(heuristic.bound - 1e-7);
        expect(lagrangian.objective).toBeGreaterThanOrEqual(0.75 * lagrangian.bound);
      }),
      { seed: 20240601, numRuns: 40 },
    );
  });

  it('packs thousands of jobs on hundreds of GPUs', async () => {
    const problem = randomProblem({ seed: 7, models: [A100, H100], gpus: 200, jobs: 2000 });
    const r = await optimizePacking(problem, { highs });
    checkResult(problem, r);
    expect(r.method).toBe('heuristic');
    expect(r.gap).toBeLessThan(0.02);
  });
});

describe('optimizePacking: measured gap to the bound', () => {
  it('20 random instances of 8 GPUs x 40 jobs: MIP and heuristic', async () => {
    const gaps = { mip: [] as number[], heuristic: [] as number[], lagrangian: [] as number[] };
    for (let seed = 1; seed <= 20; seed++) {
      const problem = randomProblem({ seed: 1000 + seed, models: [A100], gpus: 8, jobs: 40, weighted: seed % 2 === 0 });
      const mip = await optimizePacking(problem, { highs });
      const heuristic = await optimizePacking(problem, { highs, exactMaxJobs: 0 });
      const cheap = await optimizePacking(problem, { highs, exactMaxJobs: 0, maxLpColumns: 0 });
      expect(mip.method).toBe('mip');
      expect(mip.objective).toBeGreaterThanOrEqual(heuristic.objective - 1e-7);
      // The gap to the LP bound, for all three: the MIP's own bound is its objective when optimal.
      const lp = mip.lpBound ?? mip.bound;
      gaps.mip.push((lp - mip.objective) / lp);
      gaps.heuristic.push(heuristic.gap);
      gaps.lagrangian.push(cheap.gap);
    }
    const line = (name: string, g: number[]) =>
      `${name}: mean ${((g.reduce((a, b) => a + b, 0) / g.length) * 100).toFixed(3)}%, max ${(Math.max(...g) * 100).toFixed(3)}%`;
    console.log(
      [
        'gap to the LP relaxation, 20 random instances of 8 x A100-40GB and 40 jobs:',
        line('MIP optimum', gaps.mip),
        line('heuristic (LP rounding + exact assignment)', gaps.heuristic),
        line('heuristic without LP (greedy + local search) vs Lagrangian bound', gaps.lagrangian),
      ].join('\n  '),
    );
    expect(Math.max(...gaps.heuristic)).toBeLessThan(0.05);
  });
});

describe('buildProblem', () => {
  it('normalises predicted speeds by the whole GPU and packs small jobs onto small slices', async () => {
    const small = resolveWorkload('small');
    const large = resolveWorkload('large');
    const problem = buildProblem([A100], [...Array.from({ length: 7 }, () => ({ workload: small })), { workload: large }]);
    expect(problem.jobs[0]?.speeds[A100.name]?.[FULL_GPU]).toBe(1);
    const oneG = problem.jobs[0]?.speeds[A100.name]?.['1g.5gb'] ?? 0;
    expect(oneG).toBeGreaterThan(1 / 7);
    expect(oneG).toBeLessThan(1);
    const r = await optimizePacking(problem, { highs });
    checkResult(problem, r);
    expect(r.assignments.filter((a) => a.job < 7)).toHaveLength(7);
    expect(r.objective).toBeGreaterThan(2);
  });
});
