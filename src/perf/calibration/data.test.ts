import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { DEEPPOOL_FILES } from './deeppool-files.js';
import { parseDeepPoolProfile, parseMisoCsv } from './parse.js';

/**
 * The generated modules `miso-data.ts` and `deeppool-data.ts` are file snapshots of the parsed
 * files in data/calibration/: `npx vitest run src/perf/calibration -u` rewrites them.
 */
const DATA = fileURLToPath(new URL('../../../data/calibration/', import.meta.url));
const read = (name: string): string => readFileSync(DATA + name, 'utf8');

const HEADER = (source: string): string =>
  `// Generated from data/calibration/${source} by src/perf/calibration/data.test.ts.\n` +
  `// Do not edit: change the data and run \`npx vitest run src/perf/calibration -u\`.\n`;

describe('calibration data modules', () => {
  it('miso-data.ts holds the parsed MISO table', async () => {
    const rows = parseMisoCsv(read('a100-40gb-iter-time-median.csv'));
    const body = rows
      .map((r) => `  { model: '${r.model}', batch: ${r.batch}, profile: '${r.profile}', medianIterMs: ${r.medianIterMs}, samples: ${r.samples} },`)
      .join('\n');
    const text =
      HEADER('a100-40gb-iter-time-median.csv') +
      `import type { MisoRow } from './parse.js';\n\nexport const MISO_ROWS: readonly MisoRow[] = [\n${body}\n];\n`;
    await expect(text).toMatchFileSnapshot('./miso-data.ts');
  });

  it('deeppool-data.ts holds the per-batch layer sums of each DeepPool profile', async () => {
    const blocks = DEEPPOOL_FILES.map(({ model, file }) => {
      const batches = parseDeepPoolProfile(read(file), file)
        .slice()
        .sort((a, b) => a.batch - b.batch)
        .map((b) => `    { batch: ${b.batch}, layers: ${b.layers}, sumAvgMs: ${b.sumAvgMs} },`)
        .join('\n');
      return `  '${model}': [\n${batches}\n  ],`;
    });
    const text =
      HEADER(DEEPPOOL_FILES.map((f) => f.file).join(', ')) +
      `import type { DeepPoolModel } from './deeppool-files.js';\nimport type { DeepPoolBatch } from './parse.js';\n\n` +
      `export const DEEPPOOL_SUMS: Readonly<Record<DeepPoolModel, readonly DeepPoolBatch[]>> = {\n${blocks.join('\n')}\n};\n`;
    await expect(text).toMatchFileSnapshot('./deeppool-data.ts');
  });
});

describe('parsers', () => {
  it('reject a bad MISO row with its line', () => {
    expect(() => parseMisoCsv('model,batch_size,mig_profile,median_iter_ms,n_samples\nresnet,64,1g.5gb,-1,3\n', 'x.csv')).toThrow(/x\.csv:2/);
    expect(() => parseMisoCsv('a,b\n', 'x.csv')).toThrow(/x\.csv:1: expected the header/);
  });

  it('check a DeepPool block against its SUM(avg)', () => {
    const ok = 'conv2d{"a":1}[4][3,8,8]   1.5  1 1 1\nlinear{"b":2}[4]512   0.5\n   SUM(avg)  2.000\n';
    expect(parseDeepPoolProfile(ok, 'p.txt')).toEqual([{ batch: 4, layers: 2, sumAvgMs: 2 }]);
    expect(() => parseDeepPoolProfile(ok.replace('2.000', '3.000'), 'p.txt')).toThrow(/p\.txt:3: SUM\(avg\) says 3/);
    expect(() => parseDeepPoolProfile('conv2d{"a":1}[4][3,8,8] 1.5\n', 'p.txt')).toThrow(/no SUM/);
  });
});
