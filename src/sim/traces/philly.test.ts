import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createRandom } from '../../random.js';
import { parseMix } from './mix.js';
import { parsePhillyTrace, readPhillyTrace } from './philly.js';

/** The text of a file under data/traces. */
function traceText(path: string): string {
  return readFileSync(fileURLToPath(new URL(`../../../data/traces/${path}`, import.meta.url)), 'utf8');
}

/** The header and the first `rows` data lines of a trace file. */
function traceHead(path: string, rows: number): string {
  return `${traceText(path).split('\n').slice(0, rows + 1).join('\n')}\n`;
}

const PHILLY = 'philly/philly.csv';

describe('readPhillyTrace', () => {
  it('reads the whole trace: 82,247 jobs in arrival order, the 8-GPU job of 4 Sep 2017 first', () => {
    const { jobs, skipped } = readPhillyTrace(traceText(PHILLY), { random: createRandom(1) });
    expect(jobs).toHaveLength(82_247);
    expect(skipped).toEqual([]);
    expect(jobs[0]).toMatchObject({ id: 'philly-31567', arrival: 0, work: 2_240_194, gpus: 8, priority: 'foreground', memoryGiB: null, profile: null });
    expect(jobs[0]?.workload.name).toBe('resnet152-imagenet');
    expect(jobs.every((j, i) => i === 0 || j.arrival >= jobs[i - 1]!.arrival)).toBe(true);
    const sizes = new Map<number, number>();
    for (const j of jobs) sizes.set(j.gpus, (sizes.get(j.gpus) ?? 0) + 1);
    expect(sizes.get(1)).toBe(76_627);
    expect(sizes.get(8)).toBe(1_643);
    expect(jobs.filter((j) => j.gpus > 1).every((j) => j.workload.name === 'resnet152-imagenet')).toBe(true);
  });

  it('draws single-GPU workloads from the default mix (60/30/10 small/medium/large)', () => {
    const single = parsePhillyTrace(traceText(PHILLY), { random: createRandom(7) }).filter((j) => j.gpus === 1);
    const share = (name: string) => single.filter((j) => j.workload.name === name).length / single.length;
    expect(share('resnet26-cifar10')).toBeCloseTo(0.6, 1);
    expect(share('resnet50-imagenet64')).toBeCloseTo(0.3, 1);
    expect(share('resnet152-imagenet')).toBeCloseTo(0.1, 1);
  });

  it('maps the first rows of the file: arrival from the earliest timestamp, duration as work', () => {
    // 2017-10-09 07:01:55,66,1 / 2017-10-09 06:13:03,2951,1 / 2017-09-29 07:58:32,860662,1 / 2017-10-09 06:13:36,2759,1
    const jobs = parsePhillyTrace(traceHead(PHILLY, 4), { random: createRandom(1), mix: parseMix('small=1') });
    expect(jobs.map((j) => [j.id, j.arrival, j.work, j.gpus, j.workload.name])).toEqual([
      ['philly-3', 0, 860_662, 1, 'resnet26-cifar10'],
      ['philly-2', 9 * 86_400 + 22 * 3600 + 14 * 60 + 31, 2951, 1, 'resnet26-cifar10'],
      ['philly-4', 9 * 86_400 + 22 * 3600 + 15 * 60 + 4, 2759, 1, 'resnet26-cifar10'],
      ['philly-1', 9 * 86_400 + 23 * 3600 + 3 * 60 + 23, 66, 1, 'resnet26-cifar10'],
    ]);
  });

  it('keeps the earliest jobs with limit, with the same workloads as without it', () => {
    const text = traceHead(PHILLY, 2000);
    const all = parsePhillyTrace(text, { random: createRandom(3) });
    const some = parsePhillyTrace(text, { random: createRandom(3), limit: 50 });
    expect(some).toHaveLength(50);
    expect(some).toEqual(all.slice(0, 50));
  });

  it('gives identical jobs for identical seeds and other workloads for other seeds', () => {
    const text = traceHead(PHILLY, 500);
    const names = (seed: number) => parsePhillyTrace(text, { random: createRandom(seed) }).map((j) => j.workload.name);
    expect(names(5)).toEqual(names(5));
    expect(names(5)).not.toEqual(names(6));
  });

  it('skips and counts rows with a non-positive duration', () => {
    const text = 'timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-01 00:00:00,0.0,1,0,a\n2017-10-01 00:00:10,5.0,2,10,a\n';
    const { jobs, skipped } = readPhillyTrace(text, { random: createRandom(1) });
    expect(jobs).toHaveLength(1);
    expect(skipped).toEqual([{ reason: 'non-positive duration', count: 1 }]);
  });

  it('says file:line and field for a malformed row', () => {
    const bad = 'timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-01 00:00:00,5,1,5,a\nyesterday,5,1,5,a\n';
    expect(() => parsePhillyTrace(bad, { random: createRandom(1), file: 'p.csv' })).toThrow("p.csv:3: field 'timestamp'");
    const gpus = 'timestamp,duration,num_gpus\n2017-10-01 00:00:00,5,0.5\n';
    expect(() => parsePhillyTrace(gpus, { random: createRandom(1), file: 'p.csv' })).toThrow("p.csv:2: field 'num_gpus'");
    expect(() => parsePhillyTrace('arrival,workload\n1,small\n', { random: createRandom(1), file: 'p.csv' })).toThrow("column 'timestamp' is missing");
  });
});
