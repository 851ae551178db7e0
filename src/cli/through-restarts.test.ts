import { describe, expect, it } from 'vitest';
import { MigpoolError } from '../errors.js';
import { throughRestarts, type Outage } from './through-restarts.js';

const down = () => new MigpoolError('RUNTIME', 'cannot reach the migpool service at http://127.0.0.1:7311: is `migpool serve` running? (connect ECONNREFUSED 127.0.0.1:7311)', { unanswered: true });

describe('following a job through a restart of the service', () => {
  // Found on the live service: `submit --wait` exited 3 the moment the service restarted, while the job ran on and succeeded.
  it('asks again while the service does not answer, and says so once each way', async () => {
    let t = 0;
    let calls = 0;
    const said: string[] = [];
    const outage: Outage = { since: null };
    const value = await throughRestarts(
      async () => {
        calls++;
        if (calls <= 5) throw down();
        return 'job 7';
      },
      outage,
      (l) => said.push(l),
      { now: () => t, sleep: async (ms) => void (t += ms) },
    );
    expect(value).toBe('job 7');
    expect(calls).toBe(6);
    expect(said).toEqual([`migpool: ${down().message}; asking again for up to 5 min (a restarting service keeps the job)`, 'migpool: the service answers again']);
    expect(outage.since).toBeNull();
  });

  it('gives up after its patience with the last error, and passes other errors at once', async () => {
    let t = 0;
    const outage: Outage = { since: null };
    const forever = throughRestarts(() => Promise.reject(down()), outage, () => {}, { now: () => t, sleep: async (ms) => void (t += ms), patienceMs: 10_000 });
    await expect(forever).rejects.toMatchObject({ code: 'RUNTIME', details: { unanswered: true } });
    expect(t).toBe(10_000);
    let calls = 0;
    const refused = throughRestarts(() => (calls++, Promise.reject(new MigpoolError('BAD_INPUT', 'no job 9'))), { since: null }, () => {});
    await expect(refused).rejects.toMatchObject({ code: 'BAD_INPUT' });
    expect(calls).toBe(1);
  });
});
