import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { cli } from './run-cli.js';

const dir = mkdtempSync(join(tmpdir(), 'migpool-advise-'));
function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

interface AdviseJson {
  gpu: string;
  count: number;
  jobs: number;
  layouts: { gpu: number; layout: { profile: string; start: number }[] | 'mig-off' }[];
  assignments: { job: number; workload: string; gpu: number; profile: string; start?: number; speed: number }[];
  unassigned: { job: number }[];
  objective: number;
  bound: number;
  gap: number;
  method: string;
  migPartedConfig: { version: string; 'mig-configs': Record<string, { devices: number[] | 'all'; 'mig-enabled': boolean; 'mig-devices': Record<string, number> }[]> };
}

describe('migpool advise', () => {
  it('takes a workload YAML file (written by bench --out) in the job list, relative to the list', async () => {
    file('measured.yaml', 'name: measured\nbatchSize: 64\ndatasetSize: 1000\nmemoryGiB: 3\npoints:\n  - { gpu: A100-SXM4-40GB, profile: 1g.5gb, iterationMs: 40 }\n  - { gpu: A100-SXM4-40GB, profile: 7g.40gb, iterationMs: 12 }\n');
    const jobs = file('yaml-jobs.csv', 'workload,count\nmeasured.yaml,3\nsmall,1\n');
    const { code, out, err } = await cli('advise', '--gpu', 'A100-SXM4-40GB', '--count', '1', '--jobs', jobs, '--json');
    expect(err).toBe('');
    expect(code).toBe(0);
    const json = JSON.parse(out) as AdviseJson;
    expect(json.jobs).toBe(4);
    expect(json.assignments.filter((a) => a.workload === 'measured')).toHaveLength(3);
    const missing = file('missing-jobs.csv', 'nope.yaml,1\n');
    const bad = await cli('advise', '--gpu', 'A100-SXM4-40GB', '--count', '1', '--jobs', missing);
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/missing-jobs\.csv:1: cannot read workload file '.*nope\.yaml': ENOENT/);
  });

  it('packs a job list onto A100s: JSON with layouts, placements, bound and a mig-parted config', async () => {
    const jobs = file('jobs.csv', '# small jobs pack, large ones want whole GPUs\nworkload,count,weight\nsmall,10\nlarge,2\nmedium,3,2\n');
    const { code, out, err } = await cli('advise', '--gpu', 'A100-SXM4-40GB', '--count', '4', '--jobs', jobs, '--json');
    expect(err).toBe('');
    expect(code).toBe(0);
    const json = JSON.parse(out) as AdviseJson;
    expect(json).toMatchObject({ gpu: 'A100-40GB', count: 4, jobs: 15, method: 'mip' });
    expect(json.layouts).toHaveLength(4);
    expect(json.objective).toBeGreaterThan(0);
    expect(json.objective).toBeLessThanOrEqual(json.bound + 1e-9);
    expect(json.gap).toBeLessThan(1e-6);
    expect(json.assignments.length + json.unassigned.length).toBe(15);
    // Every MIG-enabled GPU appears in exactly one config entry, with its instance counts.
    const entries = json.migPartedConfig['mig-configs']['migpool-advise'] ?? [];
    for (const plan of json.layouts) {
      const entry = entries.find((e) => e.devices === 'all' || e.devices.includes(plan.gpu));
      expect(entry?.['mig-enabled']).toBe(plan.layout !== 'mig-off');
      if (plan.layout !== 'mig-off') {
        const counts: Record<string, number> = {};
        for (const s of plan.layout) counts[s.profile] = (counts[s.profile] ?? 0) + 1;
        expect(entry?.['mig-devices']).toEqual(counts);
      }
    }
    // Small jobs go onto slices.
    expect(json.assignments.filter((a) => a.workload.includes('resnet') || a.profile.startsWith('1g')).length).toBeGreaterThan(0);
  });

  it('prints the mig-parted YAML, the placements and the bound', async () => {
    const jobs = file('small.csv', 'small,7\n');
    const { code, out } = await cli('advise', '--gpu', 'A100-SXM4-40GB', '--count', '1', '--jobs', jobs);
    expect(code).toBe(0);
    const yaml = out.slice(0, out.indexOf('\n\n'));
    const config = YAML.parse(yaml) as AdviseJson['migPartedConfig'];
    expect(config.version).toBe('v1');
    const entry = config['mig-configs']['migpool-advise']?.[0];
    expect(entry).toMatchObject({ devices: 'all', 'mig-enabled': true });
    // Seven one-slice instances, one small job on each (the 8th memory slice makes one a 1g.10gb).
    const devices = Object.entries(entry?.['mig-devices'] ?? {});
    expect(devices.every(([p]) => p.startsWith('1g.'))).toBe(true);
    expect(devices.reduce((s, [, n]) => s + n, 0)).toBe(7);
    expect(out).toMatch(/^JOB\s+WORKLOAD\s+GPU\s+INSTANCE\s+SPEED$/m);
    expect(out).toMatch(/1g\.5gb@\d/);
    expect(out).toMatch(/^predicted throughput: [\d.]+ whole-GPU equivalents/m);
    expect(out).toMatch(/^upper bound: [\d.]+ \(mip\); gap 0\.00%; optimal \(MIP\)$/m);
  });

  it("reads the simulator's trace CSV, one job per row", async () => {
    const trace = file('trace.csv', 'arrival,workload,gpus,duration,priority\n0,small,1,3600,foreground\n10,large,1,7200,background\n20,small,,100,foreground\n');
    const json = JSON.parse((await cli('advise', '--gpu', 'A100-SXM4-40GB', '--count', '2', '--jobs', trace, '--json')).out) as AdviseJson;
    expect(json.jobs).toBe(3);
    expect(json.assignments).toHaveLength(3);
  });

  it('uses the heuristic past --exact-max-jobs, still with a bound', async () => {
    const jobs = file('mix.csv', 'small,40\nmedium,20\nlarge,10\n');
    const json = JSON.parse((await cli('advise', '--gpu', 'H100-80GB', '--count', '16', '--jobs', jobs, '--exact-max-jobs', '0', '--json')).out) as AdviseJson;
    expect(json.method).toBe('heuristic');
    expect(json.objective).toBeLessThanOrEqual(json.bound + 1e-9);
    expect(json.gap).toBeLessThan(0.05);
  });

  it('names FILE:LINE for bad rows and exits 2', async () => {
    const bad = file('bad.csv', 'small,2\n\nnosuchworkload,1\n');
    const r = await cli('advise', '--gpu', 'A100-SXM4-40GB', '--count', '1', '--jobs', bad);
    expect(r.code).toBe(2);
    expect(r.err).toContain(`${bad}:3: unknown workload 'nosuchworkload'`);
    const count = file('count.csv', 'small,two\n');
    expect((await cli('advise', '--gpu', 'A100-SXM4-40GB', '--count', '1', '--jobs', count)).err).toContain(`${count}:1: count must be a whole number`);
    const multi = file('multi.csv', 'arrival,workload,gpus,duration\n0,small,4,10\n');
    expect((await cli('advise', '--gpu', 'A100-SXM4-40GB', '--count', '1', '--jobs', multi)).err).toContain(`${multi}:2: the job asks for 4 GPUs`);
    expect((await cli('advise', '--gpu', 'A100-SXM4-40GB', '--count', '0', '--jobs', count)).code).toBe(2);
    expect((await cli('advise', '--gpu', 'A100-SXM4-40GB', '--count', '1', '--jobs', join(dir, 'missing.csv'))).err).toContain('cannot read --jobs');
  });

  it('fails with exit 1 when --place-all cannot be met', async () => {
    const jobs = file('many.csv', 'small,9\n');
    const r = await cli('advise', '--gpu', 'A100-SXM4-40GB', '--count', '1', '--jobs', jobs, '--place-all');
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/^migpool: not every job can be placed.*; drop --place-all \(placeAll\) or add GPUs$/m);
  });
});
