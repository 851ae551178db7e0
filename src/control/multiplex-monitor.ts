/**
 * The foreground's speed under MPS multiplexing, measured: for every foreground job on an MPS
 * device, its samples/s alone (no neighbour on the device) and beside its current neighbours,
 * each from its own progress reports (samples over time since the neighbours last changed, after
 * a settling time), and the slowdown between the two. A neighbour counts from its attempt's
 * first progress report (before that it is still starting: imports, data, CUDA context, for a
 * time no one can bound), and nothing is measured while one is starting. Pure: time and progress
 * are passed in.
 */

/** How a foreground job's speed is judged. */
export interface MonitorOptions {
  /** Largest foreground slowdown (alone / shared samples/s) allowed before background jobs back off. */
  readonly bound: number;
  /** Progress reports must span at least this long (ms) in a phase for its speed to count. */
  readonly windowMs: number;
  /** Reports in the first `settleMs` of a phase are skipped (start-up of the joining job, warm-up). */
  readonly settleMs: number;
}

/** One client of an MPS device, as the service sees it now. */
export interface ClientView {
  readonly id: string;
  /** Its attempt: a restarted neighbour starts a new phase, measured afresh. */
  readonly attempt: number;
  /** When its attempt started (ms): reports older than that are an earlier attempt's. */
  readonly startedAt: number;
  readonly priority: 'foreground' | 'background';
  /** Its last progress report: cumulative samples, and when it was read (ms); null before any. */
  readonly progress: { readonly samples: number; readonly updatedAt: number } | null;
  /** Samples/s the performance model gives it alone on this GPU (null: unknown), used when it was never measured alone. */
  readonly modelAloneRate: number | null;
}

/** The clients of one MPS device (a GPU or MIG instance). */
export interface DeviceView {
  /** Device UUIDs joined by commas. */
  readonly key: string;
  /** GPU index, for people. */
  readonly gpu: number;
  readonly clients: readonly ClientView[];
}

/** A foreground job's speed beside its neighbours against its speed alone. */
export interface Slowdown {
  readonly foreground: string;
  readonly device: string;
  readonly gpu: number;
  /** Samples/s alone, and where that figure comes from. */
  readonly alone: number;
  readonly aloneFrom: 'measured' | 'model';
  /** Samples/s beside `neighbours`. */
  readonly shared: number;
  /** alone / shared. */
  readonly slowdown: number;
  readonly neighbours: readonly string[];
  /** The background jobs among the neighbours: those that back off. */
  readonly background: readonly string[];
}

interface Point {
  readonly t: number;
  readonly samples: number;
}

interface Track {
  phase: string;
  phaseStart: number;
  /** First report after the settling time, and the latest one. */
  first: Point | null;
  last: Point | null;
  alone: number | null;
  /** This phase's slowdown was reported over the bound already (once per phase). */
  acted: boolean;
}

/** Measures foreground jobs on MPS devices; see the file's comment. */
export class SlowdownMonitor {
  private readonly tracks = new Map<string, Track>();

  constructor(private readonly o: MonitorOptions) {}

  /**
   * Takes the devices' current clients and reports: `measured`, every foreground job whose speed
   * beside background neighbours is known now; `over`, those beyond the bound (each once per set
   * of neighbours: after a back-off the neighbours change and it is measured afresh).
   */
  observe(now: number, devices: readonly DeviceView[]): { measured: Slowdown[]; over: Slowdown[] } {
    const measured: Slowdown[] = [];
    const over: Slowdown[] = [];
    const seen = new Set<string>();
    for (const d of devices) {
      const background = d.clients.filter((c) => c.priority === 'background').map((c) => c.id);
      for (const c of d.clients) {
        if (c.priority !== 'foreground') continue;
        seen.add(c.id);
        const others = d.clients.filter((x) => x.id !== c.id);
        const neighbours = others.map((x) => x.id).sort();
        const started = others.filter((x) => x.progress !== null && x.progress.updatedAt >= x.startedAt);
        const starting = started.length < others.length;
        const t = this.track(c.id, `${d.key}|${started.map((x) => `${x.id}#${x.attempt}`).sort().join(',')}${starting ? '|starting' : ''}`, now);
        const rate = this.record(t, c.progress);
        if (rate === null || starting) continue;
        if (neighbours.length === 0) {
          t.alone = rate;
          continue;
        }
        if (background.length === 0) continue;
        const alone = t.alone ?? c.modelAloneRate;
        if (alone === null || !(alone > 0) || !(rate > 0)) continue;
        const s: Slowdown = { foreground: c.id, device: d.key, gpu: d.gpu, alone, aloneFrom: t.alone !== null ? 'measured' : 'model', shared: rate, slowdown: alone / rate, neighbours, background };
        measured.push(s);
        if (s.slowdown > this.o.bound && !t.acted) {
          t.acted = true;
          over.push(s);
        }
      }
    }
    for (const id of [...this.tracks.keys()]) if (!seen.has(id)) this.tracks.delete(id);
    return { measured, over };
  }

  private track(id: string, phase: string, now: number): Track {
    let t = this.tracks.get(id);
    if (!t) {
      t = { phase, phaseStart: now, first: null, last: null, alone: null, acted: false };
      this.tracks.set(id, t);
    } else if (t.phase !== phase) {
      Object.assign(t, { phase, phaseStart: now, first: null, last: null, acted: false });
    }
    return t;
  }

  /** Adds a report to the phase; the phase's samples/s once its reports span the window, else null. */
  private record(t: Track, p: ClientView['progress']): number | null {
    if (p && p.updatedAt >= t.phaseStart + this.o.settleMs && (!t.last || p.updatedAt > t.last.t)) {
      // A new attempt counts from 0 again: start the phase's measure over.
      if (t.last && p.samples < t.last.samples) t.first = null;
      const point = { t: p.updatedAt, samples: p.samples };
      t.first ??= point;
      t.last = point;
    }
    if (!t.first || !t.last || t.last.t - t.first.t < this.o.windowMs) return null;
    return ((t.last.samples - t.first.samples) * 1000) / (t.last.t - t.first.t);
  }
}

/**
 * The active thread percentage a background client gets after a back-off: half its current one
 * (none: 100), or null when that falls below `floor`: then it stops sharing with a foreground job.
 */
export function nextThreadPercentage(current: number | null, floor: number): number | null {
  const next = Math.floor((current ?? 100) / 2);
  return next < floor ? null : next;
}
