import { fleetModels, indexOf, profileAllows, type IndexedClusterView } from './policies/common.js';
import { fairQueue, gpusText, QUOTA_TOLERANCE, shareOf, sharesActive, startCost, usageByUser, userOf, heldBy } from './shares.js';
import type { ClusterView, Decision, JobSpec, Policy } from './types.js';

/**
 * Quotas and fair share for any policy, applied where policies are made (registry.ts), so that
 * no policy needs a special case for users:
 * - the policy sees a queue without the jobs their users' quotas cannot take now: per user, in
 *   queue order, a job stays if what it would hold at least (`least`) fits in what the user's
 *   quota leaves after the jobs kept before it (greedy fit);
 * - the queue it sees is in weighted-deficit order (shares.ts, fairQueue): the user furthest
 *   below their weight's share first, so policies that take the queue in order (FIFO, backfill,
 *   first fit) serve users by weight under contention;
 * - starts that would still take a user past their quota (a policy that chose a bigger slice than
 *   the least) are dropped, as the decision check would refuse them.
 * When the view lists no users and no job names one, the policy gets the view as it is and its
 * decisions untouched: behaviour is exactly as without users.
 */

/** GPUs' worth a queued job would hold at least under a policy (its cheapest placement). */
export type LeastHolding = (view: ClusterView, job: JobSpec) => number;

/** Whole GPUs (alone or shared): a job holds its GPUs. */
export const WHOLE_GPUS: LeastHolding = (_view, job) => job.gpus;

/**
 * MIG slices or whole GPUs: a single-GPU job holds at least the smallest slice it may take on
 * some GPU of the fleet (a profile it allows, over its GPU's compute slices), others their GPUs.
 */
export const MIG_SLICES: LeastHolding = (view, job) => {
  if (job.gpus !== 1) return job.gpus;
  let least = job.exactProfile === true ? Number.POSITIVE_INFINITY : 1;
  for (const m of fleetModels(view)) {
    for (const p of m.giProfiles) if (profileAllows(job, p.name, m)) least = Math.min(least, p.computeSlices / m.computeSlices);
  }
  return least;
};

/** The policy with quotas and fair share applied (see above); `least` says what a job holds at least under it. */
export function withShares(policy: Policy, least: LeastHolding = WHOLE_GPUS): Policy {
  const wakeAt = policy.wakeAt;
  const explain = policy.explain;
  const shaped = (view: ClusterView): { view: ClusterView; held: Map<string, string> } => {
    const usage = usageByUser(view);
    const left = new Map<string, number>();
    const held = new Map<string, string>();
    const queue: JobSpec[] = [];
    for (const j of view.queue) {
      const u = userOf(j);
      const quota = shareOf(view, u).quotaGpus;
      if (quota === null) {
        queue.push(j);
        continue;
      }
      const room = left.get(u) ?? quota - (usage.get(u) ?? 0);
      const need = least(view, j);
      if (need <= room + QUOTA_TOLERANCE) {
        left.set(u, room - need);
        queue.push(j);
      } else {
        left.set(u, room);
        held.set(j.id, `user '${u || 'default'}' is at their quota: they hold ${gpusText(usage.get(u) ?? 0)} of ${gpusText(quota)} GPUs and this job needs ${gpusText(need)} more`);
      }
    }
    // A plain object (policies may spread it), with the simulator's index where the view has one.
    const index = indexOf(view);
    const narrowed: IndexedClusterView = {
      now: view.now,
      gpus: view.gpus,
      queue,
      running: view.running,
      ...(view.history ? { history: view.history } : {}),
      ...(view.users ? { users: view.users } : {}),
      ...(index ? { index } : {}),
    };
    return { view: { ...narrowed, queue: fairQueue(narrowed) }, held };
  };
  return {
    name: policy.name,
    ...(policy.recutRule !== undefined ? { recutRule: policy.recutRule } : {}),
    decide(view, ctx): Decision[] {
      if (!sharesActive(view)) return policy.decide(view, ctx);
      const decisions = policy.decide(shaped(view).view, ctx);
      return withinQuotas(view, decisions);
    },
    ...(wakeAt ? { wakeAt: (view: ClusterView) => wakeAt.call(policy, view) } : {}),
    explain(view, ctx): ReadonlyMap<string, string> {
      if (!sharesActive(view)) return explain ? explain.call(policy, view, ctx) : new Map();
      const { view: seen, held } = shaped(view);
      const own = explain ? explain.call(policy, seen, ctx) : new Map<string, string>();
      return new Map([...own, ...held]);
    },
  };
}

/**
 * The decisions without the starts that would take a user past their quota, judged in order as
 * they will be applied: a preemption gives back what its job held, a start takes its cost. What
 * stays passes the decision check's quota rule.
 */
export function withinQuotas(view: ClusterView, decisions: readonly Decision[]): Decision[] {
  const usage = usageByUser(view);
  const jobs = new Map(view.queue.map((j) => [j.id, j]));
  const out: Decision[] = [];
  for (const d of decisions) {
    if (d.kind === 'preempt') {
      const r = view.running.get(d.job);
      if (r) usage.set(userOf(r.spec), (usage.get(userOf(r.spec)) ?? 0) - heldBy(view, r));
      out.push(d);
      continue;
    }
    // A start of a queued job, or of a running one the list preempted first (a move: promotion to
    // a whole GPU, a new slice).
    const moved = d.kind === 'start-on-instance' || d.kind === 'start-on-gpus' ? view.running.get(d.job) : undefined;
    const job = d.kind === 'start-on-instance' || d.kind === 'start-on-gpus' ? (jobs.get(d.job) ?? moved?.spec) : undefined;
    if (!job) {
      out.push(d);
      continue;
    }
    const u = userOf(job);
    const quota = shareOf(view, u).quotaGpus;
    const after = (usage.get(u) ?? 0) + startCost(view, d);
    if (quota !== null && after > quota + QUOTA_TOLERANCE) {
      // A move that would pass the quota is dropped whole: the job keeps what it runs on.
      const id = job.id;
      const at = moved ? out.findIndex((x) => x.kind === 'preempt' && x.job === id) : -1;
      if (moved && at >= 0) {
        out.splice(at, 1);
        usage.set(u, (usage.get(u) ?? 0) + heldBy(view, moved));
      }
      continue;
    }
    usage.set(u, after);
    out.push(d);
  }
  return out;
}
