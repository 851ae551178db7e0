/** Turns a grouped solution (layout counts per model, jobs per slot type) into per-GPU plans. */
import type { Compiled, Flow, LayoutCounts } from './compile.js';
import { FULL_GPU, type GpuPlan, type JobPlacement, type PackingProblem } from './types.js';

interface Slot {
  gpu: number;
  profile: string;
  start?: number;
}

export interface Realized {
  readonly layouts: GpuPlan[];
  readonly assignments: JobPlacement[];
  readonly unassigned: number[];
  readonly objective: number;
}

/**
 * GPUs of each model take the layouts in option order, lowest index first; jobs of each class, in
 * input order, fill the slots of each type GPU by GPU, instance by instance. A GPU left without a
 * job is reported with MIG off.
 */
export function realize(problem: PackingProblem, compiled: Compiled, counts: LayoutCounts, flow: Flow): Realized {
  const T = compiled.slotTypes.length;
  const free: Slot[][] = compiled.slotTypes.map(() => []);
  const layouts: GpuPlan[] = [];
  compiled.models.forEach((group, m) => {
    let next = 0;
    group.options.forEach((option, l) => {
      for (let k = 0; k < (counts[m]?.[l] ?? 0); k++) {
        const gpu = group.gpus[next++];
        if (gpu === undefined) throw new Error('internal: more layouts than GPUs');
        if (!option.layout) {
          layouts.push({ gpu, model: group.model.name, layout: 'mig-off' });
          free[group.slotTypes[0] ?? 0]?.push({ gpu, profile: FULL_GPU });
          continue;
        }
        layouts.push({ gpu, model: group.model.name, layout: option.layout.instances.map((i) => ({ profile: i.profile.name, start: i.start })) });
        for (const i of option.layout.instances) {
          const t = group.slotTypes.find((st) => compiled.slotTypes[st]?.profiles.includes(i.profile.name));
          if (t !== undefined) free[t]?.push({ gpu, profile: i.profile.name, start: i.start });
        }
      }
    });
    if (next !== group.gpus.length) throw new Error('internal: layout counts do not cover every GPU');
  });

  const assignments: JobPlacement[] = [];
  const unassigned: number[] = [];
  const taken = new Array<number>(T).fill(0);
  compiled.classes.forEach((cls, c) => {
    let j = 0;
    for (let t = 0; t < T; t++) {
      const n = Math.round(flow[c * T + t] ?? 0);
      for (let k = 0; k < n; k++) {
        const job = cls.jobs[j++];
        const slot = free[t]?.[taken[t] ?? 0];
        if (job === undefined || !slot) throw new Error('internal: assignment exceeds jobs or slots');
        taken[t] = (taken[t] ?? 0) + 1;
        const model = compiled.models[compiled.slotTypes[t]?.model ?? 0]?.model.name ?? '';
        const speed = problem.jobs[job]?.speeds[model]?.[slot.profile] ?? 0;
        assignments.push({ job, gpu: slot.gpu, profile: slot.profile, ...(slot.start === undefined ? {} : { start: slot.start }), speed, weight: cls.weight });
      }
    }
    unassigned.push(...cls.jobs.slice(j));
  });

  const busy = new Set(assignments.map((a) => a.gpu));
  const plans = layouts.map((p) => (busy.has(p.gpu) ? p : { ...p, layout: 'mig-off' as const })).sort((a, b) => a.gpu - b.gpu);
  assignments.sort((a, b) => a.job - b.job);
  unassigned.sort((a, b) => a - b);
  const objective = assignments.reduce((s, a) => s + a.weight * a.speed, 0);
  return { layouts: plans, assignments, unassigned, objective };
}
