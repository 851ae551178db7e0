import { describe, expect, it } from 'vitest';
import { FakePoolService } from '../../test/fake-pool-service.js';
import type { PoolService } from '../control/service-port.js';
import { createMetrics, QUEUE_WAIT_BUCKETS, SCHEDULING_PASS_BUCKETS } from './metrics.js';

const spec = { name: 'cifar', command: ['python', 'train.py'], resources: { profile: '1g.5gb' } };

function pool(): FakePoolService {
  const fake = new FakePoolService();
  fake.addGpu('NVIDIA A100-SXM4-40GB', 7, [
    ['2g.10gb', 0, 2],
    ['1g.5gb', 2, 1],
    ['3g.20gb', 4, 4],
  ]);
  fake.addGpu('NVIDIA H100 80GB HBM3', 7, []);
  return fake;
}

/** The value of one series in a scrape, or undefined when absent. */
function value(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('createMetrics', () => {
  it("labels GPUs and MIG instances as dcgm-exporter does, and publishes allocation per instance, per GPU and over the pool", async () => {
    const fake = pool();
    const m = createMetrics(fake, { processMetrics: false, hostname: 'node1' });
    await fake.submit(spec);
    await fake.submit(spec);
    fake.startJob('1', 0, 4);
    fake.startJob('2', 1, null);
    const text = await m.scrape();
    const a100 = 'gpu="0",UUID="GPU-00000000-0000-0000-0000-000000000000",modelName="NVIDIA A100-SXM4-40GB",Hostname="node1"';
    expect(value(text, `migpool_gpu_instance_allocated{${a100},GPU_I_ID="5",GPU_I_PROFILE="3g.20gb"}`)).toBe(1);
    expect(value(text, `migpool_gpu_instance_allocated{${a100},GPU_I_ID="1",GPU_I_PROFILE="2g.10gb"}`)).toBe(0);
    // A 3g.20gb holds 3 of the A100's 7 compute slices (its placement is 4 memory slices wide).
    expect(value(text, `migpool_gpu_allocation_ratio{${a100}}`)).toBeCloseTo(3 / 7, 9);
    expect(value(text, 'migpool_gpu_allocation_ratio{gpu="1",UUID="GPU-00000000-0000-0000-0000-000000000001",modelName="NVIDIA H100 80GB HBM3",Hostname="node1"}')).toBe(1);
    expect(value(text, 'migpool_allocation_ratio')).toBeCloseTo(10 / 14, 9);
    expect(value(text, 'migpool_user_allocated_gpus{user="default"}')).toBeCloseTo(3 / 7 + 1, 9);
    expect(value(text, 'migpool_running_job_info{hpc_job="1",user="default",priority="foreground",Hostname="node1"}')).toBe(1);
    m.close();
  });

  it("counts finished jobs and queue waits per owner, and keeps a user's series (at 0) once seen", async () => {
    const fake = pool();
    const m = createMetrics(fake, { processMetrics: false });
    await fake.submit(spec);
    await fake.submit({ ...spec, priority: 'background' });
    await fake.submit(spec);
    fake.owners.set('2', 'alice');
    fake.now += 90_000;
    fake.startJob('1', 0, 2);
    fake.startJob('2', 0, 0);
    fake.finishJob('1', 0);
    fake.finishJob('2', 3);
    await fake.cancel('3');
    fake.pass(0.0007);
    fake.pass(0.03);
    const text = await m.scrape();
    expect(value(text, 'migpool_jobs_finished_total{outcome="succeeded",priority="foreground",user="default"}')).toBe(1);
    expect(value(text, 'migpool_jobs_finished_total{outcome="cancelled",priority="foreground",user="default"}')).toBe(1);
    expect(value(text, 'migpool_jobs_finished_total{outcome="failed",priority="background",user="alice"}')).toBe(1);
    expect(value(text, 'migpool_jobs_finished_total{outcome="succeeded",priority="foreground",user="alice"}')).toBe(0);
    expect(value(text, 'migpool_queue_wait_seconds_bucket{le="60",priority="background",user="alice"}')).toBe(0);
    expect(value(text, 'migpool_queue_wait_seconds_bucket{le="120",priority="background",user="alice"}')).toBe(1);
    expect(value(text, 'migpool_queue_wait_seconds_sum{priority="background",user="alice"}')).toBe(90);
    expect(value(text, 'migpool_scheduling_pass_seconds_bucket{le="0.001"}')).toBe(1);
    expect(value(text, 'migpool_scheduling_pass_seconds_bucket{le="0.05"}')).toBe(2);
    // Nothing is live now, yet every seen user's live series are there at 0 (no gaps in graphs).
    expect(value(text, 'migpool_jobs{state="queued",priority="foreground",user="alice"}')).toBe(0);
    expect(value(text, 'migpool_jobs{state="running",priority="background",user="default"}')).toBe(0);
    expect(text).not.toContain('migpool_running_job_info{');
    expect(text).not.toMatch(/^migpool_jobs\{state="(succeeded|failed|cancelled)"/m);
    m.close();
  });

  it('stops counting once closed', async () => {
    const fake = pool();
    const m = createMetrics(fake, { processMetrics: false });
    m.close();
    fake.pass(0.001);
    expect(value(await m.scrape(), 'migpool_scheduling_pass_seconds_count')).toBe(0);
  });

  it('serves live gauges from the counts of a service that lists no live jobs (owned by the default user)', async () => {
    const fake = pool();
    await fake.submit(spec);
    await fake.submit(spec);
    fake.startJob('1', 0, 0);
    // The fake as a service without liveJobs() and observe() (both optional in PoolService).
    const bare = Object.assign(Object.create(fake) as PoolService, { liveJobs: undefined, observe: undefined });
    const m = createMetrics(bare, { processMetrics: false });
    const text = await m.scrape();
    expect(value(text, 'migpool_jobs{state="running",priority="foreground",user="default"}')).toBe(1);
    expect(value(text, 'migpool_jobs{state="queued",priority="foreground",user="default"}')).toBe(1);
  });

  it("publishes each user's quota and weight from the service's users, and their allocation (0 before they run)", async () => {
    const fake = pool();
    const shares = new Map([
      ['alice', { weight: 2, quotaGpus: null }],
      ['bob', { weight: 1, quotaGpus: 1.5 }],
    ]);
    const withUsers = Object.assign(Object.create(fake) as PoolService, { userShares: () => shares });
    const m = createMetrics(withUsers, { processMetrics: false });
    await fake.submit(spec);
    fake.owners.set('1', 'bob');
    fake.startJob('1', 0, 4);
    const text = await m.scrape();
    expect(value(text, 'migpool_user_quota_gpus{user="bob"}')).toBe(1.5);
    expect(text).not.toContain('migpool_user_quota_gpus{user="alice"}');
    expect(value(text, 'migpool_user_weight{user="alice"}')).toBe(2);
    expect(value(text, 'migpool_user_weight{user="bob"}')).toBe(1);
    expect(value(text, 'migpool_user_allocated_gpus{user="bob"}')).toBeCloseTo(3 / 7, 9);
    expect(value(text, 'migpool_user_allocated_gpus{user="alice"}')).toBe(0);
    expect(value(text, 'migpool_jobs{state="queued",priority="foreground",user="alice"}')).toBe(0);
    m.close();
  });

  it('has ascending buckets', () => {
    for (const b of [QUEUE_WAIT_BUCKETS, SCHEDULING_PASS_BUCKETS]) expect([...b].sort((x, y) => x - y)).toEqual([...b]);
  });
});
