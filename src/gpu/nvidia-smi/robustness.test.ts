import { readdirSync, readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MigpoolError } from '../../errors.js';
import { classifyError, parseCreatedComputeInstances, parseCreatedGpuInstances, parseDestroyed, parseMigModeChange, parseReset } from './messages.js';
import { parseCsvQuery, parseLci, parseLcip, parseLgi, parseLgip, parseLgipp, parseListGpus } from './parse.js';
import { parseQueryXml } from './query-xml.js';

const dir = new URL('../../../test/fixtures/nvidia-smi/', import.meta.url);
const fixtures = readdirSync(dir)
  .filter((f) => f.endsWith('.txt'))
  .map((f) => readFileSync(new URL(f, dir), 'utf8'));

const readers: Array<[string, (text: string) => unknown]> = [
  ['-L', parseListGpus],
  ['--query-gpu', (t) => parseCsvQuery(t)],
  ['--query-gpu noheader', (t) => parseCsvQuery(t, ['index', 'name'])],
  ['-lgip', parseLgip],
  ['-lgipp', parseLgipp],
  ['-lgi', parseLgi],
  ['-lci', parseLci],
  ['-lcip', parseLcip],
  ['-q -x', parseQueryXml],
  ['-cgi', parseCreatedGpuInstances],
  ['-cci', parseCreatedComputeInstances],
  ['-dci/-dgi', parseDestroyed],
  ['-mig', parseMigModeChange],
  ['-r', parseReset],
  ['errors', classifyError],
];

/** Either an answer or a MigpoolError: never a TypeError or a crash. */
function survives(read: (text: string) => unknown, text: string): void {
  try {
    read(text);
  } catch (e) {
    if (!(e instanceof MigpoolError)) throw e;
    expect(e.message.split('\n')).toHaveLength(1);
  }
}

describe('no output of nvidia-smi can crash the parsers', () => {
  it.each(readers)('%s: every real capture, and each of them cut short or mangled', (_name, read) => {
    for (const text of fixtures) {
      survives(read, text);
      survives(read, text.slice(0, Math.floor(text.length / 2)));
      survives(read, text.replace(/\d/g, 'x'));
      survives(read, text.replace(/\|/g, ''));
    }
  });

  it.each(readers)('%s: random text and random mixes of real lines', (_name, read) => {
    const lines = fixtures.flatMap((t) => t.split('\n'));
    fc.assert(
      fc.property(fc.oneof(fc.string({ maxLength: 400 }), fc.array(fc.constantFrom(...lines), { maxLength: 30 }).map((ls) => ls.join('\n'))), (text) => {
        survives(read, text);
      }),
      { numRuns: 300, seed: 7 },
    );
  });
});
