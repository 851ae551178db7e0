import { describe, expect, it } from 'vitest';
import type { PoolService } from '../control/service-port.js';
import { openSqliteStore } from '../store/sqlite.js';
import type { EventRecord, JobRecord } from '../store/types.js';
import { bearerToken } from './auth.js';
import { adoptTokenAsAdmin, canSee, eventFilter, hashToken, newToken, singleTokenCaller, storeCallers } from './users.js';

async function memoryStore() {
  const store = openSqliteStore(':memory:');
  await store.init();
  return store;
}

describe('tokens', () => {
  it('are 32 random bytes as hex, kept as their SHA-256', () => {
    const a = newToken();
    expect(a).toMatch(/^[0-9a-f]{64}$/);
    expect(newToken()).not.toBe(a);
    // FIPS 180-2, appendix B.1: SHA-256("abc").
    expect(hashToken('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  it('are read from `Authorization: Bearer <token>` only', () => {
    expect(bearerToken('Bearer abc')).toBe('abc');
    expect(bearerToken('bearer   abc ')).toBe('abc');
    for (const h of [undefined, '', 'Basic abc', 'Bearer', 'Bearer a b']) expect(bearerToken(h)).toBeUndefined();
  });
});

describe('the data dir token and the store', () => {
  it("makes the first token the admin's, once; a token of no user is reported, never adopted", async () => {
    const store = await memoryStore();
    const first = newToken();
    expect(await adoptTokenAsAdmin(store, first, 1000)).toBe('created-admin');
    expect(await adoptTokenAsAdmin(store, first, 2000)).toBe('known');
    expect(await store.listUsers()).toEqual([{ name: 'admin', admin: true, weight: 1, quotaGpus: null, unixUser: null, createdAt: 1000 }]);
    expect(await adoptTokenAsAdmin(store, newToken(), 3000)).toBe('unknown');
    expect(await store.listUsers()).toHaveLength(1);

    const callers = storeCallers(store);
    expect(await callers(first)).toEqual({ name: 'admin', admin: true });
    expect(await callers(`${first}x`)).toBeNull();
    await store.insertUser({ name: 'alice' }, hashToken('alice-token-0123456789'), 4000);
    expect(await callers('alice-token-0123456789')).toEqual({ name: 'alice', admin: false });
    await store.close();
  });

  it('a server without a store has one admin token, compared in constant time', async () => {
    const callers = singleTokenCaller('t0ken-0123456789abcdef');
    expect(await callers('t0ken-0123456789abcdef')).toEqual({ name: 'admin', admin: true });
    expect(await callers('t0ken-0123456789abcdeF')).toBeNull();
  });
});

describe('what a user sees', () => {
  const job = (owner: string | null) => ({ owner }) as Pick<JobRecord, 'owner'>;

  it('their own jobs; an admin every job, those without an owner included', () => {
    const alice = { name: 'alice', admin: false };
    expect(canSee(alice, job('alice'))).toBe(true);
    expect(canSee(alice, job('bob'))).toBe(false);
    expect(canSee(alice, job(null))).toBe(false);
    expect(canSee({ name: 'root', admin: true }, job('bob'))).toBe(true);
    expect(canSee({ name: 'root', admin: true }, job(null))).toBe(true);
  });

  it("events: their jobs' and those of no job; each job's owner asked once", async () => {
    const owners: Record<string, string> = { '1': 'alice', '2': 'bob' };
    let asked = 0;
    const service = {
      getJob: async (id: string) => {
        asked++;
        return owners[id] === undefined ? null : ({ id, owner: owners[id] } as unknown as JobRecord);
      },
    } satisfies Pick<PoolService, 'getJob'>;
    expect(eventFilter(service, { name: 'root', admin: true })).toBeUndefined();
    const visible = eventFilter(service, { name: 'alice', admin: false })!;
    const event = (jobId: string | null) => ({ seq: 1, time: 0, type: 'job-started', jobId, data: {} }) as EventRecord;
    expect(await visible(event('1'))).toEqual(event('1'));
    expect(await visible(event('1'))).toEqual(event('1'));
    expect(await visible(event('2'))).toBeNull();
    expect(await visible(event('3'))).toBeNull();
    expect(await visible(event(null))).toEqual(event(null));
    expect(asked).toBe(3);
  });

  it("a user's event stream open for long keeps no owner of a job that has finished", async () => {
    const service = { getJob: async (id: string) => ({ id, owner: Number(id) % 2 === 0 ? 'alice' : 'bob' }) as unknown as JobRecord } satisfies Pick<PoolService, 'getJob'>;
    const owners = new Map<string, Promise<string | null>>();
    const visible = eventFilter(service, { name: 'alice', admin: false }, owners)!;
    let seq = 0;
    const event = (type: string, jobId: string) => ({ seq: ++seq, time: 0, type, jobId, data: {} }) as EventRecord;
    for (let i = 1; i <= 500; i++) {
      const id = String(i);
      expect(await visible(event('job-submitted', id))).toEqual(i % 2 === 0 ? expect.objectContaining({ jobId: id }) : null);
      await visible(event('job-started', id));
      expect(await visible(event('job-finished', id))).toEqual(i % 2 === 0 ? expect.objectContaining({ type: 'job-finished' }) : null);
    }
    expect(owners.size).toBe(0);
  });

  it("events of a user's own job name other users' jobs by no id (an MPS slowdown's foreground, a placement's neighbours)", async () => {
    const owners: Record<string, string> = { '1': 'alice', '2': 'bob', '3': 'alice' };
    const service = { getJob: async (id: string) => (owners[id] === undefined ? null : ({ id, owner: owners[id] } as unknown as JobRecord)) } satisfies Pick<PoolService, 'getJob'>;
    const visible = eventFilter(service, { name: 'alice', admin: false })!;
    const backoff = { seq: 1, time: 0, type: 'mps-backoff', jobId: '1', data: { gpu: 0, foreground: '2', slowdown: 1.3 } } as EventRecord;
    expect((await visible(backoff))?.data).toEqual({ gpu: 0, foreground: null, slowdown: 1.3 });
    expect((await visible({ ...backoff, data: { gpu: 0, foreground: '3' } }))?.data).toEqual({ gpu: 0, foreground: '3' });
    const mps = { clientPriority: 1, activeThreadPercentage: null, neighbours: ['2', '3'] };
    const started = { seq: 2, time: 0, type: 'job-started', jobId: '1', data: { attempt: 1, placement: { kind: 'gpus', gpus: [0], sharing: 'mps', devices: [], mps } } } as EventRecord;
    expect((await visible(started))?.data).toEqual({ attempt: 1, placement: { kind: 'gpus', gpus: [0], sharing: 'mps', devices: [], mps: { ...mps, neighbours: ['3'], otherNeighbours: 1 } } });
  });
});
