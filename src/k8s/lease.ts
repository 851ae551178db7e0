/**
 * Leader election over a coordination.k8s.io/v1 Lease, as Kubernetes controllers do it
 * (k8s.io/client-go/tools/leaderelection): whoever holds the Lease acts; the holder renews
 * `renewTime` every retry period; another candidate takes the Lease over only once it has seen the
 * same record unchanged for `leaseDurationSeconds` (its own clock, so clocks need not agree), or
 * at once when the holder released it (empty `holderIdentity`). Every write carries the
 * resourceVersion read, so of two candidates racing for it, one gets a conflict and stays follower.
 * The leader stops calling itself leader when it has not renewed for the renew deadline (two thirds
 * of the lease duration, as client-go's defaults 10 s of 15 s), before anyone else may take over.
 */
import { MigpoolError } from '../errors.js';
import type { K8sApi, LeaseObject } from './api.js';

export interface LeaseOptions {
  readonly namespace: string;
  readonly name: string;
  /** This candidate's name (the pod's name in a Deployment). */
  readonly identity: string;
  readonly leaseDurationSeconds: number;
  readonly now: () => number;
}

/** A MicroTime: RFC 3339 with six fraction digits (k8s.io/apimachinery metav1.MicroTime). */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

const isConflict = (e: unknown): boolean => e instanceof MigpoolError && (e.details['status'] === 409 || /conflict|already exists/i.test(e.message));

/** One candidate for a Lease. */
export class LeaderElector {
  private observed: { record: string; at: number } | null = null;
  private renewedAt: number | null = null;
  private leaseVersion = '';
  private transitions = 0;

  constructor(
    private readonly api: K8sApi,
    private readonly options: LeaseOptions,
  ) {}

  /** Whether this candidate holds the Lease and renewed it within the renew deadline. */
  isLeader(): boolean {
    return this.renewedAt !== null && this.options.now() - this.renewedAt < (this.options.leaseDurationSeconds * 1000 * 2) / 3;
  }

  /** Who holds the Lease as last read ('' when released); null before the first read. */
  holder: string | null = null;

  /**
   * Reads the Lease and takes or renews it when this candidate may. True when it holds the Lease
   * after the call. API failures other than conflicts propagate (MigpoolError).
   */
  async tryAcquireOrRenew(): Promise<boolean> {
    const { namespace, name, identity, leaseDurationSeconds } = this.options;
    const now = this.options.now();
    const lease = await this.api.readLease(namespace, name);
    const spec = {
      holderIdentity: identity,
      leaseDurationSeconds,
      acquireTime: microTime(now),
      renewTime: microTime(now),
      leaseTransitions: 0,
    };
    if (lease === null) {
      return this.write(() => this.api.createLease(namespace, { metadata: { name, namespace }, spec }), now);
    }
    const record = JSON.stringify(lease.spec ?? {});
    if (this.observed === null || this.observed.record !== record) this.observed = { record, at: now };
    const holder = lease.spec?.holderIdentity ?? '';
    this.holder = holder;
    const duration = (lease.spec?.leaseDurationSeconds ?? leaseDurationSeconds) * 1000;
    if (holder !== '' && holder !== identity && this.observed.at + duration > now) {
      this.renewedAt = null;
      return false;
    }
    const mine = holder === identity;
    const next: LeaseObject = {
      metadata: { name, namespace, resourceVersion: lease.metadata?.resourceVersion ?? '' },
      spec: {
        ...spec,
        acquireTime: mine ? (lease.spec?.acquireTime ?? spec.acquireTime) : spec.acquireTime,
        leaseTransitions: (lease.spec?.leaseTransitions ?? 0) + (mine ? 0 : 1),
      },
    };
    return this.write(() => this.api.replaceLease(namespace, name, next), now);
  }

  private async write(f: () => Promise<LeaseObject>, now: number): Promise<boolean> {
    try {
      const written = await f();
      this.observed = { record: JSON.stringify(written.spec ?? {}), at: now };
      this.leaseVersion = written.metadata?.resourceVersion ?? '';
      this.transitions = written.spec?.leaseTransitions ?? 0;
      this.renewedAt = now;
      this.holder = this.options.identity;
      return true;
    } catch (e) {
      if (!isConflict(e)) throw e;
      this.renewedAt = null;
      return false;
    }
  }

  /**
   * Gives the Lease up (empty holder, as client-go's ReleaseOnCancel), so that another candidate
   * takes over at once instead of after the lease duration. Does nothing unless this one holds it.
   */
  async release(): Promise<void> {
    if (this.renewedAt === null) return;
    const { namespace, name, leaseDurationSeconds } = this.options;
    const now = this.options.now();
    this.renewedAt = null;
    try {
      await this.api.replaceLease(namespace, name, {
        metadata: { name, namespace, resourceVersion: this.leaseVersion },
        spec: { holderIdentity: '', leaseDurationSeconds, renewTime: microTime(now), acquireTime: microTime(now), leaseTransitions: this.transitions },
      });
    } catch (e) {
      // Someone took it meanwhile: nothing left to release.
      if (!isConflict(e)) throw e;
    }
  }
}
