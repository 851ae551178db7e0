import { MigpoolError } from '../errors.js';
import { findGiProfile } from '../mig/catalog/index.js';
import type { GpuModel } from '../mig/types.js';
import { predict } from '../perf/model.js';
import type { Resource, Workload } from '../perf/types.js';
import type { JobSpec, PolicyContext, SpeedQuery } from '../sched/types.js';

/**
 * The policy context the live service hands its policy: speeds and memory fits from the
 * performance model, with the same meaning as in the simulator (speed = the workload's samples/s
 * on the resource over its samples/s on a whole GPU of the model), so that a policy decides live
 * as it does in `migpool simulate`.
 */
export function livePolicyContext(random: () => number, reconfigureSeconds: number): PolicyContext {
  const cache = new Map<string, number>();
  const relative = (workload: Workload, resource: Resource, key: string): number => {
    const k = `${workload.name}|${key}`;
    let v = cache.get(k);
    if (v === undefined) {
      const w = { ...workload, memoryGiB: null };
      const on = predict(w, resource).samplesPerSecond;
      const full = predict(w, { kind: 'full', gpu: resource.gpu }).samplesPerSecond;
      v = on !== null && full !== null && full > 0 ? on / full : NaN;
      if (!Number.isFinite(v) || v <= 0) throw new MigpoolError('RUNTIME', `the performance model gives no speed for ${workload.name} on ${key}`);
      cache.set(k, v);
    }
    return v;
  };
  const memoryOf = (job: JobSpec): number | null => job.memoryGiB ?? job.workload.memoryGiB;
  return {
    random,
    reconfigureSeconds,
    speedOn(job: JobSpec, on: SpeedQuery): number {
      if (on.kind === 'whole') return 1;
      if (on.kind === 'instance') return relative(job.workload, { kind: 'mig', gpu: on.model, profile: on.profile }, `${on.model.name}|mig|${on.profile}`);
      return relative(job.workload, { kind: on.kind, gpu: on.model, jobs: on.jobs }, `${on.model.name}|${on.kind}|${on.jobs}`);
    },
    fits(job: JobSpec, on: SpeedQuery): boolean {
      const need = memoryOf(job);
      if (need === null) return true;
      const have = (model: GpuModel): number | null => model.memoryGB;
      if (on.kind === 'instance') {
        const mem = findGiProfile(on.model, on.profile).memoryGiB;
        return mem === null || mem >= need;
      }
      const total = have(on.model);
      return total === null || total >= (on.kind === 'whole' ? 1 : on.jobs) * need;
    },
  };
}
