import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cli } from './run-cli.js';

/** `migpool simulate --workload FILE.yaml`: a measured workload named in --mix and in a jobs CSV. */
describe('migpool simulate --workload FILE.yaml', () => {
  const dir = mkdtempSync(join(tmpdir(), 'migpool-sim-workload-'));
  // A workload as `migpool bench --out` writes it (the curve form that refitted workloads use).
  writeFileSync(join(dir, 'mine.yaml'), 'name: mine\nbatchSize: 32\ndatasetSize: 1000\nmemoryGiB: 3\ncurve: { latencyMs: 5, peakSamplesPerMs: 10, sharpness: 2 }\n');

  it('lets --mix and the rows of a jobs CSV name it, and refuses it unnamed with the flag to add', async () => {
    const mixed = await cli('simulate', '--trace', 'synthetic', '--limit', '40', '--fleet', '2xA100-SXM4-40GB', '--policies', 'exclusive', '--mix', 'mine=1', '--workload', join(dir, 'mine.yaml'), '--json');
    expect(mixed.code).toBe(0);
    expect((JSON.parse(mixed.out) as { policies: { completed: number }[] }).policies[0]!.completed).toBe(40);

    writeFileSync(join(dir, 'jobs.csv'), 'arrival,workload,gpus,duration\n0,mine,1,600\n60,small,1,600\n');
    const csv = await cli('simulate', '--trace', join(dir, 'jobs.csv'), '--fleet', '1xA100-SXM4-40GB', '--policies', 'exclusive', '--workload', join(dir, 'mine.yaml'), '--json');
    expect(csv.code).toBe(0);
    expect((JSON.parse(csv.out) as { policies: { completed: number }[] }).policies[0]!.completed).toBe(2);

    const without = await cli('simulate', '--trace', 'synthetic', '--limit', '10', '--fleet', '1xA100-SXM4-40GB', '--policies', 'exclusive', '--mix', 'mine=1');
    expect(without.code).toBe(2);
    expect(without.err.trim().split('\n')).toHaveLength(1);
    expect(without.err).toMatch(/unknown workload 'mine'/);
  });

  it('words a schema problem of the file plainly, with the file, line and field path', async () => {
    const bad = join(dir, 'bad.yaml');
    writeFileSync(bad, 'name: bad\nbatchSize: 32\ndatasetSize: 1000\npoints:\n  - { gpu: A100-SXM4-40GB, profile: 1g.5gb, iterationMs: 64.8 }\n  - { gpu: A100-SXM4-40GB, profile: full, iterationMs: -3 }\n');
    const r = await cli('simulate', '--trace', 'synthetic', '--limit', '5', '--fleet', '1xA100-SXM4-40GB', '--policies', 'exclusive', '--workload', bad);
    expect(r.code).toBe(2);
    expect(r.out).toBe('');
    expect(r.err).toBe(`migpool: ${bad}:6: points[1].iterationMs: expected a number greater than 0, got -3; a workload file is what 'migpool bench --out' writes\n`);
  });
});
