import { DEFAULT_USER, UNLISTED } from '../sched/shares.js';
import type { UserShare } from '../sched/types.js';
import { percentile } from './metrics.js';

/**
 * How a run treated each user: their share of the pool under contention, against their weight's
 * share, and their jobs' slowdowns. Holdings are GPUs' worth as quotas count them
 * (src/sched/shares.ts): a MIG slice its compute slices over its GPU's, 1 per whole GPU for each
 * job on it (shared or not).
 */
export interface UserMetrics {
  readonly user: string;
  readonly weight: number;
  readonly quotaGpus: number | null;
  readonly jobs: number;
  readonly completed: number;
  /**
   * The user's part of all GPUs' worth held under contention, 0..1: while every user of the run
   * had a job waiting (all backlogged, so that each could have used more); 0 when that never was.
   */
  readonly contendedShare: number;
  /** What their weight entitles them to: weight over the sum of the weights of users with jobs. */
  readonly weightShare: number;
  /** Seconds of the run under contention (the same for every user). */
  readonly contendedSeconds: number;
  /** GPUs' worth they held on average under contention. */
  readonly contendedGpus: number;
  /** Most GPUs' worth they held at once. */
  readonly peakGpus: number;
  readonly avgSlowdown: number;
  readonly p50Slowdown: number;
  readonly p99Slowdown: number;
  readonly avgJctSeconds: number;
}

/** Per-user accounting the engine feeds as the clock advances. */
export class UserAccounting {
  private readonly held = new Map<string, number>();
  private readonly contended = new Map<string, number>();
  private readonly peak = new Map<string, number>();
  private readonly queued = new Map<string, number>();
  private backlogged = 0;
  private contendedSeconds = 0;

  /** @param users every user of the run (those with jobs) */
  constructor(private readonly users: ReadonlySet<string>) {}

  /** Jobs of a user waiting changed by `delta` (arrival or preemption +1, start -1). */
  waiting(user: string, delta: number): void {
    const before = this.queued.get(user) ?? 0;
    const after = before + delta;
    this.queued.set(user, after);
    if (before === 0 && after > 0) this.backlogged++;
    if (before > 0 && after === 0) this.backlogged--;
  }

  /** Seconds spent under contention (every user backlogged). */
  get contendedTime(): number {
    return this.contendedSeconds;
  }

  /** A user's holding changed by `delta` GPUs' worth. */
  change(user: string, delta: number): void {
    const now = (this.held.get(user) ?? 0) + delta;
    this.held.set(user, now);
    if (now > (this.peak.get(user) ?? 0)) this.peak.set(user, now);
  }

  /** `dt` seconds passed with the holdings and queues as they are. */
  advance(dt: number): void {
    if (dt <= 0 || this.backlogged < this.users.size) return;
    this.contendedSeconds += dt;
    for (const [u, h] of this.held) this.contended.set(u, (this.contended.get(u) ?? 0) + h * dt);
  }

  /**
   * The figures per user (users in order of first job), from each job's user, and completion
   * time and slowdown when it completed (null otherwise).
   */
  result(jobs: readonly { readonly user: string; readonly jct: number | null; readonly slowdown: number | null }[], users: ReadonlyMap<string, UserShare> | undefined): UserMetrics[] {
    const order: string[] = [];
    const byUser = new Map<string, { jobs: number; jcts: number[]; slowdowns: number[] }>();
    for (const j of jobs) {
      let e = byUser.get(j.user);
      if (!e) {
        byUser.set(j.user, (e = { jobs: 0, jcts: [], slowdowns: [] }));
        order.push(j.user);
      }
      e.jobs++;
      if (j.jct !== null) e.jcts.push(j.jct);
      if (j.slowdown !== null) e.slowdowns.push(j.slowdown);
    }
    const shareOf = (u: string): UserShare => users?.get(u) ?? UNLISTED;
    const weights = order.reduce((s, u) => s + shareOf(u).weight, 0);
    let all = 0;
    for (const v of this.contended.values()) all += v;
    const mean = (xs: readonly number[]) => (xs.length > 0 ? xs.reduce((s, x) => s + x, 0) / xs.length : 0);
    return order.map((u) => {
      const e = byUser.get(u) as { jobs: number; jcts: number[]; slowdowns: number[] };
      const sorted = [...e.slowdowns].sort((a, b) => a - b);
      const c = this.contended.get(u) ?? 0;
      return {
        user: u === DEFAULT_USER ? 'default' : u,
        weight: shareOf(u).weight,
        quotaGpus: shareOf(u).quotaGpus,
        jobs: e.jobs,
        completed: e.jcts.length,
        contendedShare: all > 0 ? c / all : 0,
        weightShare: weights > 0 ? shareOf(u).weight / weights : 0,
        contendedSeconds: this.contendedSeconds,
        contendedGpus: this.contendedSeconds > 0 ? c / this.contendedSeconds : 0,
        peakGpus: this.peak.get(u) ?? 0,
        avgSlowdown: mean(e.slowdowns),
        p50Slowdown: percentile(sorted, 50),
        p99Slowdown: percentile(sorted, 99),
        avgJctSeconds: mean(e.jcts),
      };
    });
  }
}
