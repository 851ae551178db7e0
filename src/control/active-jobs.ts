import type { JobRecord } from '../store/types.js';

/**
 * The service's open jobs by id (queued, starting, running), with an index of those that hold a
 * placement (starting or running with a slice or GPUs), kept up to date by every set and delete:
 * what the GPUs hold is read from the placed jobs alone, not from a queue of thousands.
 */
export class ActiveJobs extends Map<string, JobRecord> {
  /** Ids of the jobs starting or running on a placement. */
  readonly placed = new Set<string>();
  /** Each job's place in the map's own order (first set), to list placed jobs in that order. */
  private readonly rank = new Map<string, number>();
  private next = 0;
  /** The placed ids in rank order. */
  private readonly order: string[] = [];

  override set(id: string, rec: JobRecord): this {
    if (!super.has(id)) this.rank.set(id, this.next++);
    if ((rec.state === 'running' || rec.state === 'starting') && rec.placement) this.place(id);
    else this.unplace(id);
    return super.set(id, rec);
  }

  override delete(id: string): boolean {
    this.unplace(id);
    this.rank.delete(id);
    return super.delete(id);
  }

  override clear(): void {
    this.placed.clear();
    this.order.length = 0;
    this.rank.clear();
    super.clear();
  }

  /** The placed jobs' records in the order the map iterates them (what a scan of all would give). */
  placedRecords(): JobRecord[] {
    return this.order.map((id) => super.get(id) as JobRecord);
  }

  private place(id: string): void {
    if (this.placed.has(id)) return;
    this.placed.add(id);
    this.order.splice(this.indexFor(this.rank.get(id) as number), 0, id);
  }

  private unplace(id: string): void {
    if (!this.placed.delete(id)) return;
    this.order.splice(this.indexFor(this.rank.get(id) as number), 1);
  }

  /** Where rank `r` is, or goes, in `order` (binary search). */
  private indexFor(r: number): number {
    let lo = 0;
    let hi = this.order.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((this.rank.get(this.order[mid] as string) as number) < r) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
