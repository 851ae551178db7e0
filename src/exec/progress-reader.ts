import type { JobProgressView } from '../store/types.js';
import { open } from 'node:fs/promises';
import { parseProgressLine } from '../jobs/progress-protocol.js';

/**
 * Reads the progress lines (`{"migpool_samples": N, "migpool_total": T}`, see
 * src/bench/protocol.ts) a running job prints to its stdout log, incrementally: each call reads
 * only what was appended since the last one, at most {@link MAX_READ_BYTES}, and keeps at most
 * {@link MAX_PARTIAL_BYTES} of an unfinished line (a longer line is no progress line and is
 * skipped). Speed is measured over the reports of the last {@link RATE_WINDOW_MS}.
 */
export const MAX_READ_BYTES = 256 * 1024;
/** A progress line is short JSON; longer unfinished text is dropped. */
export const MAX_PARTIAL_BYTES = 4096;
/** Samples/s is measured over this window of reports (a minute: steadier than two points, fresh enough). */
export const RATE_WINDOW_MS = 60_000;

/** What the job said last, and its measured speed (the record the store keeps and the API shows). */
export type JobProgress = JobProgressView;

interface Cursor {
  path: string;
  offset: number;
  partial: string;
  skipping: boolean;
  total: number | null;
  points: { t: number; samples: number }[];
  last: JobProgress | null;
}

/** Tracks the progress of running jobs by their stdout logs (one cursor per job, reset per log file). */
export class ProgressReader {
  private readonly cursors = new Map<string, Cursor>();

  /** Reads what `jobId`'s log at `path` gained since the last call; returns the job's progress (null before any report). */
  async poll(jobId: string, path: string, now: number): Promise<JobProgress | null> {
    let c = this.cursors.get(jobId);
    if (!c || c.path !== path) {
      // A new attempt logs to a new file; what the job reported before stays until it reports again.
      c = { path, offset: 0, partial: '', skipping: false, total: c?.total ?? null, points: [], last: c?.last ?? null };
      this.cursors.set(jobId, c);
    }
    let text: string;
    try {
      const fh = await open(path, 'r');
      try {
        const buf = Buffer.alloc(MAX_READ_BYTES);
        const { bytesRead } = await fh.read(buf, 0, MAX_READ_BYTES, c.offset);
        c.offset += bytesRead;
        text = buf.subarray(0, bytesRead).toString('utf8');
      } finally {
        await fh.close();
      }
    } catch {
      return c.last;
    }
    const lines = (c.partial + text).split('\n');
    const rest = lines.pop() ?? '';
    for (const [i, line] of lines.entries()) {
      if (i === 0 && c.skipping) {
        c.skipping = false;
        continue;
      }
      const r = parseProgressLine(line);
      if (!r) continue;
      if (r.total) c.total = r.total;
      c.points.push({ t: now, samples: r.samples });
    }
    if (Buffer.byteLength(rest) > MAX_PARTIAL_BYTES) {
      c.partial = '';
      c.skipping = true;
    } else c.partial = rest;
    while (c.points.length > 2 && c.points[0]!.t < now - RATE_WINDOW_MS) c.points.shift();
    const newest = c.points[c.points.length - 1];
    if (!newest) return c.last;
    c.points = c.points.filter((p, i) => i === 0 || i === c!.points.length - 1 || p.t !== c!.points[i - 1]!.t);
    c.last = progressOf(c.points, c.total, c.last, now);
    return c.last;
  }

  /** The last progress of a job, without reading. */
  get(jobId: string): JobProgress | null {
    return this.cursors.get(jobId)?.last ?? null;
  }

  /** How many jobs it tracks. */
  get size(): number {
    return this.cursors.size;
  }

  /** Forgets a job (it ended). */
  forget(jobId: string): void {
    this.cursors.delete(jobId);
  }
}

function progressOf(points: readonly { t: number; samples: number }[], total: number | null, before: JobProgress | null, now: number): JobProgress {
  const last = points[points.length - 1]!;
  const first = points[0]!;
  let rate: number | null = before?.samplesPerSecond ?? null;
  if (last.t > first.t && last.samples >= first.samples) rate = (last.samples - first.samples) / ((last.t - first.t) / 1000);
  const fraction = total ? Math.min(1, last.samples / total) : null;
  const eta = total && rate && rate > 0 ? Math.max(0, (total - last.samples) / rate) : null;
  return { samples: last.samples, total, fraction, samplesPerSecond: rate, etaSeconds: eta, updatedAt: now };
}
