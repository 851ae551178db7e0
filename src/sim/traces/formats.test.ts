import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { resolveGpuModel } from '../../mig/catalog/index.js';
import { createRandom } from '../../random.js';
import { csvHeader, detectTraceFormat, traceFormatOf } from './detect.js';
import { JOBS_CSV_FORMAT, TRACE_FORMATS, traceFormat, traceFormatHelp, type TraceReadOptions } from './formats.js';

/** The header and the first `rows` data lines of a file under data/traces. */
function traceHead(path: string, rows: number): string {
  const text = readFileSync(fileURLToPath(new URL(`../../../data/traces/${path}`, import.meta.url)), 'utf8');
  return `${text.split('\n').slice(0, rows + 1).join('\n')}\n`;
}

/** A few real rows of every format: a format registered without a sample here fails the test below. */
const SAMPLES: Readonly<Record<string, string>> = {
  philly: traceHead('philly/philly.csv', 20),
  alibaba: traceHead('alibaba-v2023/openb_pod_list_default.csv', 20),
  'jobs-csv': '# my jobs\narrival,workload,gpus,duration,profile\n0,small,1,600,1g.5gb\n60,large,2,3600,\n30,medium,1,1200,\n',
};

const options = (limit?: number): TraceReadOptions => ({ random: createRandom(7), gpuModel: resolveGpuModel('A100-SXM4-40GB'), file: 'sample.csv', ...(limit === undefined ? {} : { limit }) });

describe('the trace format registry', () => {
  it('has unique names, each with a sample, and lists them all in the help', () => {
    const names = TRACE_FORMATS.map((f) => f.name);
    expect(new Set(names).size).toBe(names.length);
    expect(Object.keys(SAMPLES).sort()).toEqual([...names].sort());
    for (const f of TRACE_FORMATS) expect(traceFormatHelp()).toContain(`  ${f.name}`);
    expect(traceFormat('philly')?.name).toBe('philly');
    expect(traceFormat('parquet')).toBeUndefined();
  });

  describe.each(TRACE_FORMATS.map((f) => [f.name, f] as const))('%s', (name, format) => {
    const sample = SAMPLES[name] ?? '';

    it("claims its own header and no other format's", () => {
      for (const [other, text] of Object.entries(SAMPLES)) expect(format.detect(csvHeader(text))).toBe(other === name);
      expect(traceFormatOf(sample)).toBe(format);
      expect(detectTraceFormat(sample)).toBe(name);
    });

    it('reads jobs in arrival order, each id once, and keeps the first ones by `limit`', () => {
      const all = format.read(sample, options()).jobs;
      expect(all.length).toBeGreaterThan(1);
      expect(new Set(all.map((j) => j.id)).size).toBe(all.length);
      for (let i = 1; i < all.length; i++) expect(all[i]?.arrival).toBeGreaterThanOrEqual(all[i - 1]?.arrival ?? 0);
      for (const j of all) expect(j.work).toBeGreaterThan(0);
      expect(format.read(sample, options(1)).jobs.map((j) => j.id)).toEqual([all[0]?.id]);
      expect(format.read(sample, options())).toEqual(format.read(sample, options()));
    });
  });

  it("reads what no format claims as migpool's CSV, whose reader names the missing column", () => {
    expect(traceFormatOf('a,b\n1,2\n')).toBe(JOBS_CSV_FORMAT);
    expect(() => JOBS_CSV_FORMAT.read('arrival,workload,gpus\n0,small,1\n', options())).toThrow("sample.csv:1: column 'duration' is missing");
  });
});
