import type { Gpu, Job } from './fleet-state.js';

/** The simulator's event queue: arrivals are read in order; completions and re-partition ends wait here. */

/** A completion (job) or the end of a re-partition (gpu); stale when the job's version moved on. */
export interface SimEvent {
  t: number;
  seq: number;
  job: Job | null;
  version: number;
  gpu: Gpu | null;
}

/** A binary min-heap of events by time, then insertion order. */
export class EventHeap {
  private readonly a: SimEvent[] = [];
  get size(): number {
    return this.a.length;
  }
  peek(): SimEvent | undefined {
    return this.a[0];
  }
  private less(x: SimEvent, y: SimEvent): boolean {
    return x.t < y.t || (x.t === y.t && x.seq < y.seq);
  }
  push(e: SimEvent): void {
    const a = this.a;
    a.push(e);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      const pe = a[p] as SimEvent;
      if (!this.less(e, pe)) break;
      a[i] = pe;
      i = p;
    }
    a[i] = e;
  }
  pop(): SimEvent | undefined {
    const a = this.a;
    const top = a[0];
    const last = a.pop();
    if (a.length === 0 || last === undefined) return top;
    let i = 0;
    const n = a.length;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      let c = l;
      if (r < n && this.less(a[r] as SimEvent, a[l] as SimEvent)) c = r;
      if (!this.less(a[c] as SimEvent, last)) break;
      a[i] = a[c] as SimEvent;
      i = c;
    }
    a[i] = last;
    return top;
  }
}
