import { describe, expect, it } from 'vitest';
import { resolveGpuModel } from '../mig/catalog/index.js';
import { resolveWorkload } from '../perf/workloads.js';
import { createPolicyContext } from './context.js';
import { explainPending } from './pending.js';
import type { ClusterView, GpuView, JobSpec, PolicyContext } from './types.js';

const a100 = resolveGpuModel('A100-SXM4-40GB');
const small = resolveWorkload('small');
const ctx = { fits: () => true, speedOn: () => 1, random: () => 0, reconfigureSeconds: 5 } as PolicyContext;
const job = (id: string, more: Partial<JobSpec> = {}): JobSpec => ({ id, workload: small, gpus: 1, priority: 'foreground', arrival: 0, estimate: 10, memoryGiB: null, profile: null, ...more });
const oneG = a100.giProfiles.find((p) => p.name === '1g.5gb')!;
const cut = (id: number, jobs: (string | null)[]): GpuView => ({
  id,
  model: a100,
  migEnabled: true,
  instances: jobs.map((j, k) => ({ gpu: id, profile: oneG, start: k, size: 1, job: j })),
  wholeGpuJobs: [],
  sharing: 'exclusive',
  busyUntil: null,
});

describe('explainPending', () => {
  it('says why each queued job waits', () => {
    const view: ClusterView = {
      now: 100,
      gpus: [cut(0, ['r1', 'r2', 'r3', 'r4', 'r5', 'r6', 'r7']), cut(1, ['r8', 'r9', 'r10', 'r11', 'r12', 'r13', 'r14'])],
      queue: [
        job('big', { gpus: 3 }),
        job('exact', { profile: '7g.80gb', exactProfile: true }),
        job('slice', { profile: '1g.5gb', exactProfile: true }),
        job('any'),
        job('bg', { priority: 'background' }),
      ],
      running: new Map(),
    };
    const r = explainPending(view, ctx);
    expect(r.get('big')).toBe('does not fit any GPU here');
    expect(r.get('exact')).toMatch(/^does not fit any GPU here: no GPU here offers 7g\.80gb/);
    expect(r.get('slice')).toBe('waiting for a 1g.5gb slice (held by job r1, r2, r3, ...)');
    expect(r.get('any')).toBe('waiting for a free slice or GPU (all busy; 3 jobs ahead in line)');
    expect(r.get('bg')).toBe('behind 4 jobs of higher priority');
  });

  it('says which idle slices a job waits beside, and whether they are too small for it', () => {
    const view: ClusterView = { now: 0, gpus: [cut(0, ['r1', null, null, 'r4', 'r5', 'r6', 'r7'])], queue: [job('fits'), job('big', { memoryGiB: 20 })], running: new Map() };
    const fitsByMemory = { ...ctx, fits: (j: JobSpec, on: { kind: string }) => on.kind !== 'instance' || (j.memoryGiB ?? 0) <= 4.75 } as PolicyContext;
    const r = explainPending(view, fitsByMemory);
    expect(r.get('fits')).toBe('waiting: idle slices (2x1g.5gb) were not given to it in the last pass; 0 jobs ahead in line');
    expect(r.get('big')).toBe('waiting for a whole GPU or a larger slice: the idle slices (2x1g.5gb) are too small for it');
  });

  it('tells a job of unknown memory beside idle slices that it waits for a whole GPU, and how to let it use a slice', () => {
    const vit = resolveWorkload('deeppool-vit-b32');
    const view: ClusterView = { now: 0, gpus: [cut(0, ['r1', null, null, 'r4', 'r5', 'r6', 'r7'])], queue: [job('unknown', { workload: vit })], running: new Map() };
    const r = explainPending(view, createPolicyContext({ random: () => 0, reconfigureSeconds: 5 }));
    expect(r.get('unknown')).toBe('waiting for a whole GPU: its memory is unknown, so no slice is chosen for it on a guess (idle: 2x1g.5gb); give resources.memory or a profile to let it use one');
  });

  it('names whole GPUs wanted and GPUs being re-partitioned', () => {
    const g = (id: number, busyUntil: number | null): GpuView => ({ id, model: a100, migEnabled: false, instances: [], wholeGpuJobs: [], sharing: 'exclusive', busyUntil });
    const r = explainPending({ now: 0, gpus: [g(0, 5), g(1, null), g(2, null)], queue: [job('two', { gpus: 2 }), job('one')], running: new Map() }, ctx);
    expect(r.get('two')).toBe('waiting for 2 whole GPUs (3 idle)');
    expect(r.get('one')).toBe('re-partitioning GPU 0');
  });
});
