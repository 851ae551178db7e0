import { badInput } from '../../errors.js';
import { resolveWorkload } from '../../perf/workloads.js';
import type { TraceJob } from '../types.js';
import { DEFAULT_MIX_SPEC, drawWorkload, parseMix } from './mix.js';
import { cell, columnIndex, readCsv } from './records.js';
import { checkedLimit, SkipCounter, type ParsedTrace, type TraceOptions } from './types.js';

/** The header of Philly's processed trace (data/traces/philly/philly.csv). */
export const PHILLY_COLUMNS = ['timestamp', 'duration', 'num_gpus'] as const;

const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})$/;

/** `2017-10-09 07:01:55` as seconds since the epoch, read as UTC (the trace gives no zone). */
function timestampSeconds(text: string): number | null {
  const m = TIMESTAMP.exec(text);
  if (!m) return null;
  const [, y, mo, d, h, mi, s] = m.map(Number) as [number, number, number, number, number, number, number];
  return Date.UTC(y, mo - 1, d, h, mi, s) / 1000;
}

/**
 * Reads Microsoft's Philly trace (the adaptdl processing: `timestamp,duration,num_gpus,gpu_time,cluster`).
 *
 * - arrival: seconds from the earliest job's timestamp (timestamps read as UTC);
 * - work: `duration`, the job's seconds on its `num_gpus` whole GPUs (Philly ran no sharing);
 * - gpus: `num_gpus`;
 * - workload: single-GPU jobs draw one from `mix` (in arrival order, one number each from
 *   `random`, so the first N jobs are the same whatever `limit`); multi-GPU jobs run `large`;
 * - priority foreground, memory and profile left to the workload and the policy (null).
 *
 * Rows with a non-positive duration are skipped and counted. Jobs are returned in arrival order
 * (file order among equal timestamps); `limit` keeps the earliest ones. Ids are `philly-ROW`,
 * ROW the 1-based data row in the file.
 *
 * @throws MigpoolError `BAD_INPUT` naming `file:line` and the field for a malformed row
 */
export function readPhillyTrace(text: string, options: TraceOptions): ParsedTrace {
  const file = options.file ?? 'philly.csv';
  const limit = checkedLimit(options.limit);
  const table = readCsv(text, file);
  const col = columnIndex(table, PHILLY_COLUMNS, 'a Philly trace (timestamp,duration,num_gpus,...)');
  const skipped = new SkipCounter();
  const rows: { row: number; time: number; duration: number; gpus: number }[] = [];
  for (const [i, row] of table.rows.entries()) {
    const stamp = cell(row, col.timestamp);
    const time = timestampSeconds(stamp);
    if (time === null) throw badInput(`${file}:${row.line}: field 'timestamp': expected YYYY-MM-DD HH:MM:SS, got '${stamp}'`);
    const durationText = cell(row, col.duration);
    const duration = Number(durationText);
    if (durationText === '' || !Number.isFinite(duration)) throw badInput(`${file}:${row.line}: field 'duration': expected seconds, got '${durationText}'`);
    const gpusText = cell(row, col.num_gpus);
    const gpus = Number(gpusText);
    if (!Number.isInteger(gpus) || gpus < 1) throw badInput(`${file}:${row.line}: field 'num_gpus': expected a positive whole number, got '${gpusText}'`);
    if (duration <= 0) {
      skipped.add('non-positive duration');
      continue;
    }
    rows.push({ row: i + 1, time, duration, gpus });
  }
  rows.sort((a, b) => a.time - b.time || a.row - b.row);
  const start = rows[0]?.time ?? 0;
  const mix = options.mix ?? parseMix(DEFAULT_MIX_SPEC);
  const large = resolveWorkload('large');
  const jobs: TraceJob[] = rows.slice(0, Math.min(rows.length, limit)).map((r) => ({
    id: `philly-${r.row}`,
    workload: r.gpus === 1 ? drawWorkload(mix, options.random) : large,
    gpus: r.gpus,
    priority: 'foreground',
    arrival: r.time - start,
    work: r.duration,
    memoryGiB: null,
    profile: null,
  }));
  return { jobs, skipped: skipped.list() };
}

/** The jobs of a Philly trace (see readPhillyTrace). */
export function parsePhillyTrace(text: string, options: TraceOptions): TraceJob[] {
  return readPhillyTrace(text, options).jobs;
}
