import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseJobsCsv } from './csv.js';
import { detectTraceFormat } from './detect.js';

/** The text of a file under data/traces. */
function traceText(path: string): string {
  return readFileSync(fileURLToPath(new URL(`../../../data/traces/${path}`, import.meta.url)), 'utf8');
}

/** The header and the first `rows` data lines of a trace file. */
function traceHead(path: string, rows: number): string {
  return `${traceText(path).split('\n').slice(0, rows + 1).join('\n')}\n`;
}

describe('parseJobsCsv', () => {
  it('reads the four required columns with defaults, in arrival order', () => {
    const jobs = parseJobsCsv('arrival,workload,gpus,duration\n60,medium,1,3600\n0,small,1,600\n# a comment\n\n120,large,4,7200\n', 'jobs.csv');
    expect(jobs.map((j) => [j.id, j.arrival, j.workload.name, j.gpus, j.work, j.priority, j.memoryGiB, j.profile])).toEqual([
      ['job-2', 0, 'resnet26-cifar10', 1, 600, 'foreground', null, null],
      ['job-1', 60, 'resnet50-imagenet64', 1, 3600, 'foreground', null, null],
      ['job-3', 120, 'resnet152-imagenet', 4, 7200, 'foreground', null, null],
    ]);
  });

  it('reads the optional columns in any order', () => {
    const text = 'id,profile,duration,gpus,workload,arrival,priority,memory\na,MIG 1g.5gb,100,1,small,5,background,4\nb,,200,2,bert-base-squad,0,foreground,\n';
    const [b, a] = parseJobsCsv(text, 'jobs.csv');
    expect(a).toMatchObject({ id: 'a', profile: '1g.5gb', work: 100, gpus: 1, arrival: 5, priority: 'background', memoryGiB: 4 });
    expect(b).toMatchObject({ id: 'b', profile: null, work: 200, gpus: 2, arrival: 0, priority: 'foreground', memoryGiB: null });
    expect(b?.workload.name).toBe('bert-base-squad');
  });

  it.each([
    ['arrival,workload,gpus,duration\n-1,small,1,10\n', "jobs.csv:2: field 'arrival'"],
    ['arrival,workload,gpus,duration\n0,small,1,10\n0,tiny,1,10\n', "jobs.csv:3: field 'workload': unknown workload 'tiny'"],
    ['arrival,workload,gpus,duration\n0,small,1.5,10\n', "jobs.csv:2: field 'gpus'"],
    ['arrival,workload,gpus,duration\n0,small,1,0\n', "jobs.csv:2: field 'duration'"],
    // 1e308 was taken: the report then gave a utilisation of NaN% and a makespan of 1e303 days.
    ['arrival,workload,gpus,duration\n0,small,1,1e308\n', "jobs.csv:2: field 'duration': 1e308 seconds is over the limit of 1000000000 (31.7 years)"],
    ['arrival,workload,gpus,duration\n1000000001,small,1,10\n', "jobs.csv:2: field 'arrival': 1000000001 seconds is over the limit of 1000000000 (31.7 years)"],
    ['arrival,workload,gpus,duration,priority\n0,small,1,10,urgent\n', "jobs.csv:2: field 'priority'"],
    ['arrival,workload,gpus,duration,memory\n0,small,1,10,lots\n', "jobs.csv:2: field 'memory'"],
    ['arrival,workload,gpus,duration,profile\n0,small,1,10,9g.1gb\n', "jobs.csv:2: field 'profile'"],
    ['arrival,workload,gpus,duration,profile\n0,small,2,10,1g.5gb\n', "jobs.csv:2: field 'profile': a MIG profile is for single-GPU jobs"],
    ['arrival,workload,gpus,duration,id\n0,small,1,10,x\n1,small,1,10,x\n', "jobs.csv:3: field 'id'"],
    ['arrival,workload,gpus,duration\n0,small,1\n', 'jobs.csv:2: expected 4 fields'],
    ['arrival,workload,gpus\n0,small,1\n', "jobs.csv:1: column 'duration' is missing"],
    ['arrival,workload,gpus,duration,colour\n0,small,1,5,red\n', "jobs.csv:1: unknown column 'colour'"],
    ['', 'jobs.csv: empty file'],
  ])('rejects %j with %s', (text, message) => {
    expect(() => parseJobsCsv(text, 'jobs.csv')).toThrow(message);
  });
});

describe('detectTraceFormat', () => {
  it('tells the three formats apart by their header', () => {
    expect(detectTraceFormat(traceHead('philly/philly.csv', 1))).toBe('philly');
    expect(detectTraceFormat(traceHead('alibaba-v2023/openb_pod_list_gpushare100.csv', 1))).toBe('alibaba');
    expect(detectTraceFormat('# my jobs\narrival,workload,gpus,duration\n')).toBe('jobs-csv');
  });
});
