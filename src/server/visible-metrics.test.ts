import { describe, expect, it } from 'vitest';
import { FakePoolService } from '../../test/fake-pool-service.js';
import type { PoolService } from '../control/service-port.js';
import { createMetrics } from './metrics.js';
import { OTHER_USERS, visibleMetrics } from './visible-metrics.js';

const spec = { name: 'cifar', command: ['python', 'train.py'], resources: { profile: '1g.5gb' } };

describe('visibleMetrics', () => {
  it("gives a user their own quota and weight, others' weights summed, others' quotas not at all, and the process metrics", async () => {
    const fake = new FakePoolService();
    fake.addGpu('NVIDIA A100-SXM4-40GB', 7, [['3g.20gb', 4, 4]]);
    const shares = new Map([
      ['alice', { weight: 2, quotaGpus: 1 }],
      ['bob', { weight: 3, quotaGpus: 0.5 }],
      ['carol', { weight: 1, quotaGpus: null }],
    ]);
    const service = Object.assign(Object.create(fake) as PoolService, { userShares: () => shares });
    const m = createMetrics(service, {});
    await fake.submit(spec, { owner: 'bob' });
    fake.owners.set('1', 'bob');
    fake.startJob('1', 0, 4);
    const alice = await visibleMetrics(m, fake, { name: 'alice', admin: false });
    expect(alice).toContain('migpool_user_quota_gpus{user="alice"} 1\n');
    expect(alice).toContain('migpool_user_weight{user="alice"} 2\n');
    expect(alice).toContain(`migpool_user_weight{user="${OTHER_USERS}"} 4\n`);
    expect(alice).not.toContain(`migpool_user_quota_gpus{user="${OTHER_USERS}"}`);
    expect(alice).toMatch(new RegExp(`^migpool_user_allocated_gpus\\{user="\\(others\\)"\\} 0\\.428`, 'm'));
    expect(alice).toMatch(/^process_start_time_seconds \d+$/m);
    expect(alice).not.toMatch(/bob|carol|hpc_job=/);
    const admin = await visibleMetrics(m, fake, { name: 'root', admin: true });
    expect(admin).toContain('migpool_user_quota_gpus{user="bob"} 0.5\n');
    expect(admin).toContain('migpool_running_job_info{hpc_job="1",user="bob"');
    m.close();
  });
});
