import type { ClusterView, Decision, JobSpec, RunningJobView, UserShare } from './types.js';

/**
 * Fair share and quotas, written once for both clocks: what each user holds of the pool now, what
 * a start would add, whether it would take them past their quota, and a weighted-deficit order of
 * jobs that makes each user's share of the pool tend to their weight under contention.
 *
 * A user's holding is counted in GPUs' worth of compute slices: a MIG instance counts its compute
 * slices over its GPU's (a 3g slice of a 7-slice A100 is 3/7), a whole GPU counts 1 for each job
 * on it, shared (time-slicing, MPS) or not: a job may use all of a shared GPU when its sharers
 * idle or leave, so a split share would let a user pass their quota without any start. Jobs with
 * no `user` belong to the pool's default user (DEFAULT_USER).
 * Pure: no clock, no I/O.
 */

/** The key of jobs that name no user. */
export const DEFAULT_USER = '';

/** Weight and quota of users the view does not list (ClusterView.users' documented default). */
export const UNLISTED: UserShare = { weight: 1, quotaGpus: null };

/** GPUs' worth of slack allowed when comparing sums of fractions like 3/7 with a quota (float rounding). */
export const QUOTA_TOLERANCE = 1e-9;

/** The user a job counts against. */
export function userOf(job: JobSpec): string {
  return job.user ?? DEFAULT_USER;
}

/** A user's weight and quota from the view (UNLISTED when the view does not list them). */
export function shareOf(view: ClusterView, user: string): UserShare {
  return view.users?.get(user) ?? UNLISTED;
}

/**
 * Whether fair share and quotas apply to this view at all: it lists users, or some queued job
 * names one. When not, policies behave exactly as they did before users existed. Running jobs
 * are not looked at: without a users list there is no quota, and when no queued job names a user
 * they all belong to the default user, whose order no fair share changes (and a scan of every
 * running job at every pass cost the simulator 7% on Philly's 82k jobs).
 */
export function sharesActive(view: ClusterView): boolean {
  if (view.users !== undefined && view.users.size > 0) return true;
  for (const j of view.queue) if (j.user !== undefined) return true;
  return false;
}

/**
 * GPUs' worth of a MIG slice: its compute slices over its GPU's (a 3g slice of a 7-slice A100 is
 * 3/7). The one rule for quotas (heldBy, startCost), the simulator's per-user accounting and the
 * service's allocation metrics; a whole GPU is worth 1 for each job on it.
 */
export function sliceShare(instanceSlices: number, gpuSlices: number): number {
  return gpuSlices > 0 ? instanceSlices / gpuSlices : 0;
}

/** GPUs' worth of the instance at `start` on view GPU `gpu`, 0 when there is none. */
function instanceShare(view: ClusterView, gpu: number, start: number): number {
  const g = view.gpus[gpu];
  const inst = g?.instances.find((i) => i.start === start);
  return g && inst ? sliceShare(inst.profile.computeSlices, g.model.computeSlices) : 0;
}

/** GPUs' worth a running job holds now (see the module comment). */
export function heldBy(view: ClusterView, r: RunningJobView): number {
  const p = r.placement;
  return p.kind === 'instance' ? instanceShare(view, p.gpu, p.start) : p.gpus.length;
}

/** GPUs' worth each user holds now, by user (users holding nothing are left out). */
export function usageByUser(view: ClusterView): Map<string, number> {
  const out = new Map<string, number>();
  for (const r of view.running.values()) {
    const u = userOf(r.spec);
    out.set(u, (out.get(u) ?? 0) + heldBy(view, r));
  }
  return out;
}

/**
 * GPUs' worth a start decision adds to its job's user, given the view before it: an instance's
 * share of its GPU; 1 per whole GPU (shared or not). 0 for other decisions.
 */
export function startCost(view: ClusterView, d: Decision): number {
  if (d.kind === 'start-on-instance') return instanceShare(view, d.gpu, d.start);
  return d.kind === 'start-on-gpus' ? d.gpus.length : 0;
}

/**
 * Why a start would take its job's user past their quota, in words, or null when it would not (or
 * the user has none): the rule the decision check (check.ts) applies in both clocks.
 */
export function quotaProblem(view: ClusterView, d: Decision, job: JobSpec): string | null {
  if (d.kind !== 'start-on-instance' && d.kind !== 'start-on-gpus') return null;
  const user = userOf(job);
  const quota = shareOf(view, user).quotaGpus;
  if (quota === null) return null;
  let held = 0;
  for (const r of view.running.values()) if (userOf(r.spec) === user) held += heldBy(view, r);
  const after = held + startCost(view, d);
  if (after <= quota + QUOTA_TOLERANCE) return null;
  return `user '${user || 'default'}' would hold ${gpusText(after)} GPUs, over their quota of ${gpusText(quota)} (they hold ${gpusText(held)})`;
}

/** A number of GPUs' worth, as people read it: `3`, `2.43`. */
export function gpusText(x: number): string {
  return Number.isInteger(Math.round(x * 1e6) / 1e6) ? String(Math.round(x)) : x.toFixed(2);
}

/**
 * Orders items so that, taken in that order, each user's holding over their weight stays as even
 * as it can: repeatedly the user with the least (held now + cost of their items already placed
 * ahead) / weight gives their next item (ties: the user whose next item came first). Each user's
 * items keep their order. With one user (or none named) the order is unchanged.
 *
 * @param items   the candidates in the policy's own order (arrival order, a Tiresias queue, ...)
 * @param user    the user of an item
 * @param cost    GPUs' worth an item would hold (a job's GPUs, or its slice's share)
 * @param weight  a user's weight (positive)
 * @param held    what each user holds already (usageByUser), counted before any item
 */
export function weightedDeficitOrder<T>(
  items: readonly T[],
  user: (item: T) => string,
  cost: (item: T) => number,
  weight: (user: string) => number,
  held: ReadonlyMap<string, number> = new Map(),
): T[] {
  const groups = new Map<string, { items: T[]; first: number[]; next: number; used: number; weight: number }>();
  items.forEach((item, i) => {
    const u = user(item);
    let g = groups.get(u);
    if (!g) groups.set(u, (g = { items: [], first: [], next: 0, used: held.get(u) ?? 0, weight: Math.max(weight(u), Number.MIN_VALUE) }));
    g.items.push(item);
    g.first.push(i);
  });
  if (groups.size <= 1) return [...items];
  const out: T[] = [];
  const live = [...groups.values()];
  while (out.length < items.length) {
    let best: (typeof live)[number] | undefined;
    for (const g of live) {
      if (g.next >= g.items.length) continue;
      if (!best) {
        best = g;
        continue;
      }
      const a = g.used / g.weight;
      const b = best.used / best.weight;
      if (a < b - QUOTA_TOLERANCE || (a <= b + QUOTA_TOLERANCE && (g.first[g.next] as number) < (best.first[best.next] as number))) best = g;
    }
    const g = best as (typeof live)[number];
    const item = g.items[g.next++] as T;
    g.used += cost(item);
    out.push(item);
  }
  return out;
}

/** The view's queue in weighted-deficit order (jobs cost their GPUs), or the queue itself when shares do not apply. */
export function fairQueue(view: ClusterView): readonly JobSpec[] {
  if (!sharesActive(view)) return view.queue;
  return weightedDeficitOrder(view.queue, userOf, (j) => j.gpus, (u) => shareOf(view, u).weight, usageByUser(view));
}
