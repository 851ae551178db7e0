import { predict } from '../../perf/model.js';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { resolveGpuModel } from '../../mig/catalog/index.js';
import { createRandom } from '../../random.js';
import { parseAlibabaTrace, profileCovering, readAlibabaTrace } from './alibaba.js';
import { parseMix } from './mix.js';

/** The text of a file under data/traces. */
function traceText(path: string): string {
  return readFileSync(fileURLToPath(new URL(`../../../data/traces/${path}`, import.meta.url)), 'utf8');
}

/** The header and the first `rows` data lines of a trace file. */
function traceHead(path: string, rows: number): string {
  return `${traceText(path).split('\n').slice(0, rows + 1).join('\n')}\n`;
}

const PODS = 'alibaba-v2023/openb_pod_list_default.csv';
const A100 = resolveGpuModel('A100-SXM4-40GB');

/** The header and the rows of the named pods, from the real trace. */
function podRows(...names: string[]): string {
  const lines = traceText(PODS).split('\n');
  return [lines[0], ...lines.filter((l) => names.some((n) => l.startsWith(`${n},`)))].join('\n');
}

describe('profileCovering', () => {
  it.each([
    [0.05, '1g.5gb'],
    [1 / 7, '1g.5gb'],
    [0.16, '2g.10gb'],
    [0.23, '2g.10gb'],
    [0.32, '3g.20gb'],
    [0.46, '4g.20gb'],
    [0.65, '7g.40gb'],
    [0.81, '7g.40gb'],
  ])('covers %f of an A100-40GB with %s', (fraction, profile) => {
    expect(profileCovering(A100, fraction).name).toBe(profile);
  });

  it('follows the GPU model: A30 has 4 compute slices, H100 larger memory', () => {
    const a30 = resolveGpuModel('A30');
    expect([0.23, 0.46, 0.81].map((f) => profileCovering(a30, f).name)).toEqual(['1g.6gb', '2g.12gb', '4g.24gb']);
    expect(profileCovering(resolveGpuModel('H100-80GB'), 0.1).name).toBe('1g.10gb');
  });
});

describe('readAlibabaTrace', () => {
  it('reads the default pod list: 6,203 GPU pods kept, CPU-only and never-scheduled pods counted', () => {
    const { jobs, skipped } = readAlibabaTrace(traceText(PODS), { random: createRandom(1), gpuModel: A100 });
    expect(jobs).toHaveLength(6_203);
    expect(skipped).toEqual([
      { reason: 'no GPU requested', count: 1_088 },
      { reason: 'never scheduled', count: 861 },
    ]);
    const fractional = jobs.filter((j) => j.profile !== null);
    expect(fractional).toHaveLength(2_573);
    expect(fractional.every((j) => j.gpus === 1)).toBe(true);
    expect(new Set(fractional.map((j) => j.profile))).toEqual(new Set(['1g.5gb', '2g.10gb', '3g.20gb', '4g.20gb', '7g.40gb']));
    expect(jobs.filter((j) => j.priority === 'background')).toHaveLength(2_510);
    const multi = jobs.filter((j) => j.gpus > 1);
    expect(multi.length).toBeGreaterThan(0);
    expect(multi.every((j) => j.workload.name === 'resnet152-imagenet' && j.profile === null)).toBe(true);
    expect(jobs.every((j, i) => i === 0 || j.arrival >= jobs[i - 1]!.arrival)).toBe(true);
  });

  it('maps the first pods: whole GPU, then 460 milli-GPU as 4g.20gb; lifetime as whole-GPU work', () => {
    const jobs = parseAlibabaTrace(traceHead(PODS, 3), { random: createRandom(1), gpuModel: A100, mix: parseMix('medium=1') });
    expect(jobs.map((j) => [j.id, j.arrival, j.gpus, j.profile, j.priority, j.workload.name])).toEqual([
      ['openb-pod-0000', 0, 1, null, 'foreground', 'resnet50-imagenet64'],
      ['openb-pod-0001', 427_061, 1, '4g.20gb', 'foreground', 'resnet50-imagenet64'],
      ['openb-pod-0002', 1_558_381, 1, null, 'foreground', 'resnet50-imagenet64'],
    ]);
    // A whole-GPU pod's lifetime is its work; a fractional pod did its lifetime's work on its slice.
    expect(jobs[0]?.work).toBe(12_537_496);
    const medium = jobs[1]?.workload;
    if (!medium) throw new Error('no job');
    const share = (predict(medium, { kind: 'mig', gpu: A100, profile: '4g.20gb' }).samplesPerSecond ?? 0) / (predict(medium, { kind: 'full', gpu: A100 }).samplesPerSecond ?? 1);
    expect(jobs[1]?.work).toBeCloseTo((12_902_960 - 427_061) * share, 3);
    expect(share).toBeLessThan(1);
  });

  it('runs best-effort pods in the background and maps their fraction on the fleet model', () => {
    // openb-pod-0039: 50 milli-GPU, BE; openb-pod-7285: pending, never scheduled.
    const text = podRows('openb-pod-0039', 'openb-pod-7285');
    const { jobs, skipped } = readAlibabaTrace(text, { random: createRandom(1), gpuModel: resolveGpuModel('A30') });
    expect(jobs).toHaveLength(1);
    expect(jobs[0]).toMatchObject({ id: 'openb-pod-0039', priority: 'background', profile: '1g.6gb', gpus: 1, arrival: 0 });
    expect(jobs[0]?.work).toBeLessThan(9_981_248 - 9_973_948);
    expect(skipped).toEqual([{ reason: 'never scheduled', count: 1 }]);
  });

  it('keeps the earliest pods with limit', () => {
    const text = traceHead(PODS, 300);
    const all = parseAlibabaTrace(text, { random: createRandom(2), gpuModel: A100 });
    expect(parseAlibabaTrace(text, { random: createRandom(2), gpuModel: A100, limit: 20 })).toEqual(all.slice(0, 20));
  });

  it('rejects an unknown QoS and a malformed number with file:line and field', () => {
    const header = 'name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time';
    expect(() => parseAlibabaTrace(`${header}\np,1,1,1,500,,XX,Running,0,10,0\n`, { random: createRandom(1), gpuModel: A100, file: 'pods.csv' })).toThrow(
      "pods.csv:2: field 'qos': unknown QoS 'XX'",
    );
    expect(() => parseAlibabaTrace(`${header}\np,1,1,one,500,,LS,Running,0,10,0\n`, { random: createRandom(1), gpuModel: A100, file: 'pods.csv' })).toThrow(
      "pods.csv:2: field 'num_gpu'",
    );
  });
});
