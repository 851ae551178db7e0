import { describe, expect, it } from 'vitest';
import { parseDocument } from 'yaml';
import { firstDuplicateKey } from './yaml-keys.js';
import { readSpecFile } from './cli/commands/client.js';
import { parseSiteFile } from './slurm/site.js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const dup = (text: string) => firstDuplicateKey(parseDocument(text, { uniqueKeys: false }));

describe('duplicate YAML keys, found in linear time', () => {
  it('finds the second of two equal keys at any depth, and tells 1 from "1" as the yaml package does', () => {
    expect(dup('a: 1\nb: 2\n')).toBeNull();
    expect(dup('a: 1\nb:\n  c: 1\n  c: 2\n')).toEqual({ key: 'c', offset: 'a: 1\nb:\n  c: 1\n  '.length });
    expect(dup('- {x: 1}\n- {y: 1, y: 2}\n')?.key).toBe('y');
    expect(dup('1: a\n"1": b\n')).toBeNull();
  });

  it('reads a job spec file with one mapping of 40,000 keys and refuses its duplicate, naming line and key (the yaml package took 32 s over it)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'migpool-yaml-'));
    try {
      const keys = Array.from({ length: 40_000 }, (_, i) => `  K${i}: v`);
      const file = join(dir, 'job.yaml');
      writeFileSync(file, `name: big\ncommand: [true]\nenv:\n${keys.join('\n')}\n  K7: again\n`);
      await expect(readSpecFile(file)).rejects.toThrow(`${file}:40004:3: not valid YAML: Map keys must be unique ('K7' is written twice); keep one`);
      // Without the duplicate the file parses (its 40,000 variables then meet the spec's own checks, whatever they say).
      writeFileSync(file, `name: big\ncommand: [true]\nenv:\n${keys.join('\n')}\n`);
      await readSpecFile(file).catch((e: Error) => expect(e.message).not.toMatch(/not valid YAML/));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a Slurm site file with a key written twice, in one line', () => {
    expect(() => parseSiteFile('nodes:\n  gpu01: {}\n  gpu01: {}\n', 'nodes.yaml', {})).toThrow("nodes.yaml: not YAML (Map keys must be unique ('gpu01' is written twice))");
  });
});
