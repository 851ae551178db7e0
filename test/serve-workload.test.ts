import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { serveWorkloads } from '../src/cli/commands/serve.js';

describe('migpool serve --workload FILE.yaml', () => {
  const dir = mkdtempSync(join(tmpdir(), 'migpool-serve-workload-'));
  const yaml = (name: string) => `name: ${name}\nbatchSize: 32\ndatasetSize: 100\ncurve: { latencyMs: 5, peakSamplesPerMs: 10, sharpness: 2 }\n`;

  it('loads each file as a workload jobs may name', () => {
    writeFileSync(join(dir, 'a.yaml'), yaml('a'));
    writeFileSync(join(dir, 'b.yml'), yaml('b'));
    expect(serveWorkloads([join(dir, 'a.yaml'), join(dir, 'b.yml')]).map((w) => w.name)).toEqual(['a', 'b']);
  });

  it('refuses a built-in name, a missing file and a name given twice, each in one line', () => {
    expect(() => serveWorkloads(['small'])).toThrow(/--workload 'small': give a workload YAML file/);
    expect(() => serveWorkloads([join(dir, 'none.yaml')])).toThrow(/cannot read workload file .*none\.yaml.*ENOENT/);
    writeFileSync(join(dir, 'a2.yaml'), yaml('a'));
    expect(() => serveWorkloads([join(dir, 'a.yaml'), join(dir, 'a2.yaml')])).toThrow(/already given/);
  });
});
