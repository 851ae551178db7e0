import { badInput } from '../../errors.js';

/** One row of the MISO per-slice iteration-time table. */
export interface MisoRow {
  readonly model: string;
  readonly batch: number;
  /** A100-40GB GI profile, `1g.5gb` .. `7g.40gb`. */
  readonly profile: string;
  readonly medianIterMs: number;
  /** Iterations behind the median. */
  readonly samples: number;
}

/** One batch size of a DeepPool per-layer profile: the sum of its layers' average times. */
export interface DeepPoolBatch {
  readonly batch: number;
  readonly layers: number;
  /** Sum of the per-layer average forward+backward times, ms (recomputed, checked against `SUM(avg)`). */
  readonly sumAvgMs: number;
}

const MISO_HEADER = 'model,batch_size,mig_profile,median_iter_ms,n_samples';

/**
 * Reads `a100-40gb-iter-time-median.csv` (header `model,batch_size,mig_profile,median_iter_ms,n_samples`).
 * Bad rows are an error naming `file:line`.
 */
export function parseMisoCsv(text: string, file = 'a100-40gb-iter-time-median.csv'): MisoRow[] {
  const lines = text.split(/\r?\n/);
  if ((lines[0] ?? '').trim() !== MISO_HEADER) {
    throw badInput(`${file}:1: expected the header '${MISO_HEADER}'`);
  }
  const rows: MisoRow[] = [];
  lines.slice(1).forEach((line, i) => {
    if (line.trim() === '') return;
    const cells = line.split(',').map((c) => c.trim());
    const [model, batch, profile, ms, n] = cells;
    const row = { model: model ?? '', batch: Number(batch), profile: profile ?? '', medianIterMs: Number(ms), samples: Number(n) };
    if (cells.length !== 5 || row.model === '' || !/^\dg\.\d+gb$/.test(row.profile) || !(row.batch > 0) || !(row.medianIterMs > 0) || !(row.samples > 0)) {
      throw badInput(`${file}:${i + 2}: expected model,batch,profile,ms,samples with positive numbers, got '${line}'`);
    }
    rows.push(row);
  });
  return rows;
}

const LAYER_ROW = /^\s*([A-Za-z][\w]*)(\{.*\})\[(\d+)\]\S*\s+([0-9.]+)/;
const SUM_ROW = /^\s*SUM\(avg\)\s+([0-9.]+)/;

/**
 * Reads a DeepPool `*LayerGpuProfileA100*.txt`: blocks of `layer{json}[batch][shape] avg p50 p90 p99`
 * rows, each block closed by `SUM(avg) total`. Returns one entry per block with the recomputed sum,
 * which must agree with the file's own `SUM(avg)` to 0.1%.
 */
export function parseDeepPoolProfile(text: string, file: string): DeepPoolBatch[] {
  const out: DeepPoolBatch[] = [];
  let batch: number | null = null;
  let sum = 0;
  let layers = 0;
  text.split(/\r?\n/).forEach((line, i) => {
    const where = `${file}:${i + 1}`;
    const total = SUM_ROW.exec(line);
    if (total) {
      if (batch === null) throw badInput(`${where}: SUM(avg) without layer rows before it`);
      const stated = Number(total[1]);
      if (Math.abs(stated - sum) > 1e-3 * stated + 1e-3) {
        throw badInput(`${where}: SUM(avg) says ${stated} ms but the layers above add up to ${sum.toFixed(3)} ms`);
      }
      out.push({ batch, layers, sumAvgMs: Math.round(sum * 1000) / 1000 });
      batch = null;
      sum = 0;
      layers = 0;
      return;
    }
    const row = LAYER_ROW.exec(line);
    if (!row) {
      if (line.trim() === '' || line.trim().startsWith('#')) return;
      throw badInput(`${where}: expected 'layer{config}[batch][shape] avg ...' or 'SUM(avg) total', got '${line.trim().slice(0, 80)}'`);
    }
    const b = Number(row[3]);
    if (batch !== null && b !== batch) throw badInput(`${where}: batch ${b} inside the block of batch ${batch} (missing SUM(avg) row?)`);
    batch = b;
    sum += Number(row[4]);
    layers++;
  });
  if (batch !== null) throw badInput(`${file}: the last block (batch ${batch}) has no SUM(avg) row`);
  return out;
}
