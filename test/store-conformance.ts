import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseJobSpec, type JobSpecInput } from '../src/jobs/job-spec.js';
import { MigpoolError } from '../src/errors.js';
import type { JobPlacement, JobRecord, Store } from '../src/store/types.js';

/** What an adapter may offer beyond `open` for the conformance run. */
export interface StoreConformanceOptions {
  /**
   * For persistent adapters: a second store on the same database as `store` (which may be open
   * still, or closed). Enables the tests of data surviving a restart and of two stores at once.
   */
  readonly reopen?: (store: Store) => Promise<Store>;
}

const T0 = 1_700_000_000_000;

function spec(name: string, extra: Record<string, unknown> = {}): JobSpecInput {
  return parseJobSpec({ name, command: ['python', 'train.py'], ...extra });
}

async function rejection(promise: Promise<unknown>): Promise<MigpoolError> {
  try {
    await promise;
  } catch (e) {
    expect(e).toBeInstanceOf(MigpoolError);
    expect((e as Error).message.split('\n')).toHaveLength(1);
    return e as MigpoolError;
  }
  throw new Error('expected the store to refuse');
}

/**
 * The store contract (see `types.ts`). Every adapter runs this one suite with its own factory:
 * `open` returns a store on a fresh, empty database, not yet initialised (the suite calls `init()`).
 * Imported only by test files.
 */
export function storeConformance(name: string, open: () => Promise<Store>, options: StoreConformanceOptions = {}): void {
  describe(`store conformance: ${name}`, () => {
    let store: Store;
    const opened: Store[] = [];

    async function fresh(): Promise<Store> {
      const s = await open();
      opened.push(s);
      await s.init();
      return s;
    }

    async function again(s: Store): Promise<Store> {
      const other = await options.reopen!(s);
      opened.push(other);
      await other.init();
      return other;
    }

    beforeEach(async () => {
      store = await fresh();
    });

    afterEach(async () => {
      for (const s of opened.splice(0)) await s.close();
    });

    describe('jobs', () => {
      it('stores a spec with its defaults and reads it back as a queued job', async () => {
        const s = spec('resnet-cifar');
        expect(s).toMatchObject({ env: {}, resources: { gpus: 1 }, priority: 'foreground', retries: 0 });
        const job = await store.insertJob(s, T0);
        const expected: { -readonly [K in keyof JobRecord]: JobRecord[K] } = {
          id: '1',
          spec: s,
          state: 'queued',
          version: job.version,
          submittedAt: T0,
          startedAt: null,
          endedAt: null,
          attempt: 0,
          placement: null,
          process: null,
          exitCode: null,
          reason: null,
          cancelRequested: false,
          preemptions: 0,
          owner: null,
        };
        expect(job).toEqual(expected);
        const moved = await store.updateJob('1', job.version, { preemptions: 2 });
        expect(moved?.preemptions).toBe(2);
        expected.version = moved!.version;
        expected.preemptions = 2;
        expect(Number.isInteger(job.version)).toBe(true);
        expect(await store.getJob('1')).toEqual(expected);
      });

      it('keeps every field of a full spec, units normalised', async () => {
        const s = spec('bert.large_2', {
          workdir: '/srv/bert',
          env: { SEED: '1', QUOTE: 'a "b" \\ c' },
          workload: 'resnet50-b64',
          resources: { memory: '512MiB' },
          priority: 'background',
          maxRuntime: '2h',
          retries: 3,
          estimatedSeconds: 90,
        });
        const job = await store.insertJob(s, T0);
        expect(job.spec).toEqual(s);
        expect((await store.getJob(job.id))?.spec).toEqual({ ...s, resources: { memory: 0.5 }, maxRuntime: 7200 });
      });

      it('returns null for ids it never gave out', async () => {
        await store.insertJob(spec('a'), T0);
        for (const id of ['2', '0', '-1', 'abc', '', '1.0', '01', '99999999999999999999']) expect(await store.getJob(id)).toBeNull();
      });

      it('gives increasing decimal ids', async () => {
        const ids: string[] = [];
        for (let i = 0; i < 5; i++) ids.push((await store.insertJob(spec(`j${i}`), T0 + i)).id);
        expect(ids).toEqual(['1', '2', '3', '4', '5']);
      });

      it('inserts a batch in order, in one go', async () => {
        const first = await store.insertJob(spec('first'), T0);
        const batch = await store.insertJobs(
          Array.from({ length: 1500 }, (_, i) => spec(`b${i}`, { priority: i % 3 === 0 ? 'background' : 'foreground' })),
          T0 + 1,
        );
        expect(batch).toHaveLength(1500);
        expect(batch.map((j) => j.spec.name)).toEqual(Array.from({ length: 1500 }, (_, i) => `b${i}`));
        const ids = batch.map((j) => Number(j.id));
        expect(ids[0]).toBeGreaterThan(Number(first.id));
        for (let i = 1; i < ids.length; i++) expect(ids[i]).toBeGreaterThan(ids[i - 1]!);
        expect(batch.every((j) => j.state === 'queued' && j.submittedAt === T0 + 1)).toBe(true);
        expect(await store.getJob(batch[1234]!.id)).toEqual(batch[1234]);
        expect(await store.insertJobs([], T0)).toEqual([]);
      });

      it('stores none of a batch when one spec cannot be stored', async () => {
        await store.insertJob(spec('before'), T0);
        const unstorable = { ...spec('bad'), env: { N: 1n } } as unknown as JobSpecInput;
        const e = await rejection(store.insertJobs([spec('ok1'), spec('ok2'), unstorable, spec('ok3')], T0));
        expect(e.code).toBe('BAD_INPUT');
        expect(e.message).toContain('job spec 2');
        const wrongPriority = { ...spec('bad'), priority: 'urgent' } as unknown as JobSpecInput;
        expect((await rejection(store.insertJobs([spec('ok1'), wrongPriority], T0))).code).toBe('BAD_INPUT');
        expect((await store.listJobs()).map((j) => j.spec.name)).toEqual(['before']);
        expect((await store.insertJob(spec('after'), T0)).spec.name).toBe('after');
      });

      it('refuses a time that is not whole milliseconds', async () => {
        for (const now of [1.5, -1, Number.NaN]) expect((await rejection(store.insertJob(spec('a'), now))).code).toBe('BAD_INPUT');
      });
    });

    describe('idempotency keys', () => {
      it('inserts a submission once per key: a retry returns the same jobs and inserts none', async () => {
        const first = await store.insertJobsOnce('key-1', 'digest-a', [spec('a'), spec('b')], T0);
        expect(first.replayed).toBe(false);
        expect(first.jobs.map((j) => j.spec.name)).toEqual(['a', 'b']);
        const retry = await store.insertJobsOnce('key-1', 'digest-a', [spec('a'), spec('b')], T0 + 5);
        expect(retry.replayed).toBe(true);
        expect(retry.jobs.map((j) => j.id)).toEqual(first.jobs.map((j) => j.id));
        expect(await store.listJobs()).toHaveLength(2);
        const other = await store.insertJobsOnce('key-2', 'digest-a', [spec('c')], T0);
        expect(other.replayed).toBe(false);
        expect(await store.listJobs()).toHaveLength(3);
      });

      it('returns the jobs as they are now, and refuses a key reused for another request', async () => {
        const [job] = (await store.insertJobsOnce('k', 'one', [spec('a')], T0)).jobs;
        await store.updateJob(job!.id, 1, { state: 'running', attempt: 1 });
        expect((await store.insertJobsOnce('k', 'one', [spec('a')], T0)).jobs[0]!.state).toBe('running');
        const e = await rejection(store.insertJobsOnce('k', 'two', [spec('x')], T0));
        expect(e.code).toBe('BAD_INPUT');
        expect(e.details['httpStatus']).toBe(422);
        expect(e.message).toContain(`job ${job!.id}`);
        expect(await store.listJobs()).toHaveLength(1);
      });

      it("keeps each user's keys their own: the same key from another user queues that user's jobs, owned by them", async () => {
        const alice = await store.insertJobsOnce('shared-key', 'd', [spec('a')], T0, { owner: 'alice' });
        const bob = await store.insertJobsOnce('shared-key', 'd', [spec('a')], T0, { owner: 'bob' });
        expect(bob.replayed).toBe(false);
        expect(bob.jobs[0]!.id).not.toBe(alice.jobs[0]!.id);
        expect(bob.jobs[0]!.owner).toBe('bob');
        expect((await store.insertJobsOnce('shared-key', 'd', [spec('a')], T0, { owner: 'alice' })).jobs[0]!.id).toBe(alice.jobs[0]!.id);
        expect(await store.listJobs()).toHaveLength(2);
      });

      it('queues once when the same submission arrives several times at once', async () => {
        const answers = await Promise.all(Array.from({ length: 4 }, () => store.insertJobsOnce('same', 'd', [spec('a'), spec('b')], T0)));
        expect(answers.filter((a) => !a.replayed)).toHaveLength(1);
        for (const a of answers) expect(a.jobs.map((j) => j.id)).toEqual(answers[0]!.jobs.map((j) => j.id));
        expect(await store.listJobs()).toHaveLength(2);
      });

      it('records no key when the jobs cannot be stored', async () => {
        const unstorable = { ...spec('bad'), env: { N: 1n } } as unknown as JobSpecInput;
        expect((await rejection(store.insertJobsOnce('k', 'd', [spec('ok'), unstorable], T0))).code).toBe('BAD_INPUT');
        expect(await store.listJobs()).toHaveLength(0);
        expect((await store.insertJobsOnce('k', 'd', [spec('ok')], T0)).replayed).toBe(false);
      });
    });

    describe('listJobs', () => {
      let jobs: JobRecord[];
      beforeEach(async () => {
        jobs = await store.insertJobs(
          ['fg', 'bg', 'fg', 'bg', 'fg', 'fg'].map((p, i) => spec(`j${i + 1}`, { priority: p === 'fg' ? 'foreground' : 'background' })),
          T0,
        );
        await store.updateJob(jobs[1]!.id, jobs[1]!.version, { state: 'running' });
        await store.updateJob(jobs[2]!.id, jobs[2]!.version, { state: 'running' });
        await store.updateJob(jobs[4]!.id, jobs[4]!.version, { state: 'failed' });
      });
      const names = (list: JobRecord[]): string[] => list.map((j) => j.spec.name);

      it('lists all jobs by id, ascending or descending', async () => {
        expect(names(await store.listJobs())).toEqual(['j1', 'j2', 'j3', 'j4', 'j5', 'j6']);
        expect(names(await store.listJobs({ order: 'desc' }))).toEqual(['j6', 'j5', 'j4', 'j3', 'j2', 'j1']);
        expect((await store.listJobs())[1]).toEqual(await store.getJob(jobs[1]!.id));
      });

      it('filters by states and priority', async () => {
        expect(names(await store.listJobs({ states: ['queued'] }))).toEqual(['j1', 'j4', 'j6']);
        expect(names(await store.listJobs({ states: ['running', 'failed'] }))).toEqual(['j2', 'j3', 'j5']);
        expect(names(await store.listJobs({ priority: 'background' }))).toEqual(['j2', 'j4']);
        expect(names(await store.listJobs({ states: ['queued'], priority: 'foreground' }))).toEqual(['j1', 'j6']);
        expect(names(await store.listJobs({ states: ['succeeded'] }))).toEqual([]);
        expect(names(await store.listJobs({ states: [] }))).toEqual([]);
      });

      it('pages with after and limit, both ways', async () => {
        const ids = jobs.map((j) => j.id);
        expect(names(await store.listJobs({ limit: 2 }))).toEqual(['j1', 'j2']);
        expect(names(await store.listJobs({ after: ids[1], limit: 2 }))).toEqual(['j3', 'j4']);
        expect(names(await store.listJobs({ after: ids[5], limit: 2 }))).toEqual([]);
        expect(names(await store.listJobs({ after: '0' }))).toHaveLength(6);
        expect(names(await store.listJobs({ order: 'desc', limit: 2 }))).toEqual(['j6', 'j5']);
        expect(names(await store.listJobs({ order: 'desc', after: ids[4], limit: 2 }))).toEqual(['j4', 'j3']);
        expect(names(await store.listJobs({ order: 'desc', states: ['queued'], after: ids[5] }))).toEqual(['j4', 'j1']);
        expect(await store.listJobs({ limit: 0 })).toEqual([]);

        const seen: string[] = [];
        let after: string | undefined;
        for (;;) {
          const page = await store.listJobs({ states: ['queued', 'running'], limit: 2, ...(after ? { after } : {}) });
          if (page.length === 0) break;
          seen.push(...names(page));
          after = page[page.length - 1]!.id;
        }
        expect(seen).toEqual(['j1', 'j2', 'j3', 'j4', 'j6']);
      });

      it('refuses a malformed filter with a one-line BAD_INPUT', async () => {
        for (const filter of [{ after: 'x' }, { after: '-3' }, { limit: -1 }, { limit: 2.5 }, { states: ['done'] }, { priority: 'urgent' }, { order: 'up' }]) {
          expect((await rejection(store.listJobs(filter as never))).code).toBe('BAD_INPUT');
        }
      });
    });

    describe('updateJob (compare-and-set)', () => {
      const placement: JobPlacement = { kind: 'instance', gpu: 0, start: 4, profile: '3g.20gb', devices: ['MIG-4f0b2d9a-1111-2222-3333-444455556666'] };

      it('applies a patch at the current version and bumps the version', async () => {
        const job = await store.insertJob(spec('a'), T0);
        const started = await store.updateJob(job.id, job.version, { state: 'starting', startedAt: T0 + 5, attempt: 1, placement });
        expect(started).toEqual({ ...job, state: 'starting', startedAt: T0 + 5, attempt: 1, placement, version: started!.version });
        expect(started!.version).toBeGreaterThan(job.version);
        expect(await store.getJob(job.id)).toEqual(started);
      });

      it('refuses a stale version and changes nothing', async () => {
        const job = await store.insertJob(spec('a'), T0);
        const next = await store.updateJob(job.id, job.version, { state: 'starting' });
        expect(await store.updateJob(job.id, job.version, { state: 'cancelled' })).toBeNull();
        expect(await store.getJob(job.id)).toEqual(next);
        expect(await store.updateJob('999', 1, { state: 'cancelled' })).toBeNull();
        expect(await store.updateJob('nope', 1, { state: 'cancelled' })).toBeNull();
      });

      it('writes every field; undefined keeps a value, null clears it', async () => {
        const job = await store.insertJob(spec('a'), T0);
        const gpus: JobPlacement = { kind: 'gpus', gpus: [0, 3], sharing: 'mps', devices: ['GPU-a', 'GPU-b'] };
        const process = { pid: 4242, startTicks: '123456789012', dir: '/var/lib/migpool/jobs/1/1' };
        const done = await store.updateJob(job.id, job.version, {
          state: 'failed',
          startedAt: T0 + 1,
          endedAt: T0 + 2,
          attempt: 2,
          placement: gpus,
          process,
          exitCode: -9,
          reason: 'killed: ran past maxRuntime (2h)',
          cancelRequested: true,
        });
        expect(done).toMatchObject({ state: 'failed', startedAt: T0 + 1, endedAt: T0 + 2, attempt: 2, placement: gpus, process, exitCode: -9, cancelRequested: true });
        const cleared = await store.updateJob(job.id, done!.version, { state: 'queued', placement: null, process: null, exitCode: null, endedAt: undefined });
        expect(cleared).toMatchObject({ state: 'queued', placement: null, process: null, exitCode: null, endedAt: T0 + 2, reason: done!.reason, attempt: 2, cancelRequested: true });
        const bumped = await store.updateJob(job.id, cleared!.version, {});
        expect(bumped).toEqual({ ...cleared, version: bumped!.version });
        expect(bumped!.version).toBeGreaterThan(cleared!.version);
        expect(await store.getJob(job.id)).toEqual(bumped);
      });

      it('refuses a malformed patch with a one-line BAD_INPUT', async () => {
        const job = await store.insertJob(spec('a'), T0);
        for (const patch of [{ state: 'done' }, { startedAt: 'soon' }, { attempt: -1 }, { cancelRequested: 1 }, { exitCode: 1.5 }]) {
          expect((await rejection(store.updateJob(job.id, job.version, patch as never))).code).toBe('BAD_INPUT');
        }
        expect(await store.getJob(job.id)).toEqual(job);
      });

      it('lets exactly one of many concurrent updates at one version win', async () => {
        const job = await store.insertJob(spec('a'), T0);
        const results = await Promise.all(Array.from({ length: 12 }, (_, i) => store.updateJob(job.id, job.version, { state: 'starting', reason: `worker ${i}` })));
        const winners = results.filter((r) => r !== null);
        expect(winners).toHaveLength(1);
        expect(await store.getJob(job.id)).toEqual(winners[0]);
      });

      it('gives unique increasing ids to concurrent inserts', async () => {
        const jobs = await Promise.all(Array.from({ length: 30 }, (_, i) => store.insertJob(spec(`c${i}`), T0)));
        const ids = jobs.map((j) => Number(j.id));
        expect(new Set(ids).size).toBe(30);
        expect((await store.listJobs()).map((j) => Number(j.id))).toEqual([...ids].sort((a, b) => a - b));
      });
    });

    describe('countJobs', () => {
      it('counts per state and priority, leaving out empty ones', async () => {
        expect(await store.countJobs()).toEqual([]);
        const jobs = await store.insertJobs([spec('a'), spec('b'), spec('c', { priority: 'background' }), spec('d')], T0);
        await store.updateJob(jobs[0]!.id, jobs[0]!.version, { state: 'running' });
        expect(await store.countJobs()).toEqual([
          { state: 'queued', priority: 'foreground', count: 2 },
          { state: 'queued', priority: 'background', count: 1 },
          { state: 'running', priority: 'foreground', count: 1 },
        ]);
      });
    });

    describe('events', () => {
      it('appends with seq from 1 and lists after a seq, ascending', async () => {
        const job = await store.insertJob(spec('a'), T0);
        const e1 = await store.appendEvent({ time: T0, type: 'service-started', jobId: null, data: {} });
        const e2 = await store.appendEvent({ time: T0 + 1, type: 'job-submitted', jobId: job.id, data: { name: 'a', nested: { gpus: [0, 1], ok: true, note: null } } });
        const e3 = await store.appendEvent({ time: T0 + 2, type: 'job-started', jobId: job.id, data: { pid: 42 } });
        expect(e1).toEqual({ seq: 1, time: T0, type: 'service-started', jobId: null, data: {} });
        expect([e2.seq, e3.seq]).toEqual([2, 3]);
        expect(await store.listEvents(0)).toEqual([e1, e2, e3]);
        expect(await store.listEvents(1)).toEqual([e2, e3]);
        expect(await store.listEvents(1, 1)).toEqual([e2]);
        expect(await store.listEvents(3)).toEqual([]);
        expect(await store.listEvents(0, 0)).toEqual([]);
      });

      it('returns at most 1000 events by default', async () => {
        for (let i = 0; i < 1005; i++) await store.appendEvent({ time: T0 + i, type: 'gpu-reconfigured', jobId: null, data: { gpu: i % 8 } });
        const page = await store.listEvents(0);
        expect(page).toHaveLength(1000);
        expect(page[999]!.seq).toBe(1000);
        expect((await store.listEvents(1000)).map((e) => e.seq)).toEqual([1001, 1002, 1003, 1004, 1005]);
      });

      it('refuses an event naming a job it does not hold, and malformed arguments', async () => {
        expect((await rejection(store.appendEvent({ time: T0, type: 'job-started', jobId: '77', data: {} }))).code).toBe('BAD_INPUT');
        expect((await rejection(store.appendEvent({ time: T0, type: 'job-started', jobId: 'x', data: {} }))).code).toBe('BAD_INPUT');
        expect((await rejection(store.appendEvent({ time: 0.5, type: 'job-started', jobId: null, data: {} }))).code).toBe('BAD_INPUT');
        expect((await rejection(store.listEvents(-1))).code).toBe('BAD_INPUT');
        expect(await store.listEvents(0)).toEqual([]);
      });
    });

    describe('settings', () => {
      it('gets, puts and overwrites', async () => {
        expect(await store.getSetting('token-hash')).toBeNull();
        await store.putSetting('token-hash', 'sha256:abc');
        await store.putSetting('note', '');
        expect(await store.getSetting('token-hash')).toBe('sha256:abc');
        await store.putSetting('token-hash', 'sha256:def');
        expect(await store.getSetting('token-hash')).toBe('sha256:def');
        expect(await store.getSetting('note')).toBe('');
        expect((await rejection(store.getSetting(''))).code).toBe('BAD_INPUT');
      });
    });

    describe('users', () => {
      const HASH_A = 'a'.repeat(64);
      const HASH_B = 'b'.repeat(64);

      it('adds users with defaults, finds them by name and by token hash, lists them by name', async () => {
        const bob = await store.insertUser({ name: 'bob', weight: 2, quotaGpus: 1.5, unixUser: 'bob' }, HASH_B, T0);
        const alice = await store.insertUser({ name: 'alice', admin: true }, HASH_A, T0 + 1);
        expect(alice).toEqual({ name: 'alice', admin: true, weight: 1, quotaGpus: null, unixUser: null, createdAt: T0 + 1 });
        expect(bob).toEqual({ name: 'bob', admin: false, weight: 2, quotaGpus: 1.5, unixUser: 'bob', createdAt: T0 });
        expect(await store.listUsers()).toEqual([alice, bob]);
        expect(await store.getUser('bob')).toEqual(bob);
        expect(await store.getUser('carol')).toBeNull();
        expect(await store.userByTokenHash(HASH_A)).toEqual(alice);
        expect(await store.userByTokenHash('c'.repeat(64))).toBeNull();
      });

      it('refuses a taken name, and malformed fields, with a one-line BAD_INPUT', async () => {
        await store.insertUser({ name: 'alice' }, HASH_A, T0);
        const taken = await rejection(store.insertUser({ name: 'alice' }, HASH_B, T0));
        expect(taken.code).toBe('BAD_INPUT');
        expect(taken.message).toContain('already exists');
        for (const bad of [{ name: '1x' }, { name: 'x', weight: 0 }, { name: 'x', quotaGpus: -1 }, { name: 'x', unixUser: 'a b' }]) {
          expect((await rejection(store.insertUser(bad, HASH_B, T0))).code).toBe('BAD_INPUT');
        }
        expect((await rejection(store.insertUser({ name: 'x' }, 'not-a-hash', T0))).code).toBe('BAD_INPUT');
        expect(await store.listUsers()).toHaveLength(1);
      });

      it('updates fields and the token hash; removes a user, whose jobs keep their owner', async () => {
        await store.insertUser({ name: 'alice', quotaGpus: 2 }, HASH_A, T0);
        const changed = await store.updateUser('alice', { weight: 3, quotaGpus: null, admin: true, tokenHash: HASH_B });
        expect(changed).toMatchObject({ name: 'alice', weight: 3, quotaGpus: null, admin: true });
        expect(await store.userByTokenHash(HASH_A)).toBeNull();
        expect((await store.userByTokenHash(HASH_B))?.name).toBe('alice');
        expect(await store.updateUser('nobody', { weight: 2 })).toBeNull();
        const job = await store.insertJob(spec('a'), T0, { owner: 'alice' });
        expect(await store.deleteUser('alice')).toBe(true);
        expect(await store.deleteUser('alice')).toBe(false);
        expect(await store.listUsers()).toEqual([]);
        expect((await store.getJob(job.id))?.owner).toBe('alice');
      });

      it("records each job's owner and lists one user's jobs, paging included", async () => {
        const [a1] = await store.insertJobs([spec('a1')], T0, { owner: 'alice' });
        const [b1, b2] = await store.insertJobs([spec('b1'), spec('b2')], T0, { owner: 'bob' });
        const none = await store.insertJob(spec('n'), T0);
        expect(a1!.owner).toBe('alice');
        expect(b1!.owner).toBe('bob');
        expect(none.owner).toBeNull();
        expect(await store.getJob(b2!.id)).toEqual(b2);
        expect((await store.listJobs({ owner: 'bob' })).map((j) => j.spec.name)).toEqual(['b1', 'b2']);
        expect((await store.listJobs({ owner: 'bob', order: 'desc', limit: 1 })).map((j) => j.spec.name)).toEqual(['b2']);
        expect((await store.listJobs({ owner: 'bob', after: b1!.id })).map((j) => j.spec.name)).toEqual(['b2']);
        expect(await store.listJobs({ owner: 'carol' })).toEqual([]);
        expect((await rejection(store.insertJob(spec('x'), T0, { owner: 'not a name' }))).code).toBe('BAD_INPUT');
      });
    });

    describe('workload observations', () => {
      const seen = { workload: 'resnet26-cifar10', jobId: '1', attempt: 1, gpuModel: 'A100-SXM4-40GB', resource: '1g.5gb', samplesPerSecond: 812.5, peakMemoryMiB: 2950, outOfMemory: false, time: T0, owner: null, shared: true };

      it('keeps one per job and attempt, the last written, and lists them oldest first, all or of one workload', async () => {
        await store.putObservation(seen);
        await store.putObservation({ ...seen, samplesPerSecond: 790.25, peakMemoryMiB: 3010, time: T0 + 10 });
        await store.putObservation({ ...seen, jobId: '2', resource: 'whole', samplesPerSecond: null, peakMemoryMiB: null, time: T0 + 5, owner: 'bob', shared: false });
        await store.putObservation({ ...seen, workload: 'bert-base-squad', jobId: '3', outOfMemory: true, time: T0 + 1 });
        // Each keeps its owner and whether it teaches everyone (an admin's, or a job of no user) or its owner only.
        expect(await store.listObservations('resnet26-cifar10')).toEqual([
          { ...seen, jobId: '2', resource: 'whole', samplesPerSecond: null, peakMemoryMiB: null, time: T0 + 5, owner: 'bob', shared: false },
          { ...seen, samplesPerSecond: 790.25, peakMemoryMiB: 3010, time: T0 + 10 },
        ]);
        expect((await store.listObservations()).map((o) => [o.workload, o.jobId])).toEqual([
          ['bert-base-squad', '3'],
          ['resnet26-cifar10', '2'],
          ['resnet26-cifar10', '1'],
        ]);
        expect(await store.listObservations('none-such')).toEqual([]);
      });

      it('refuses a malformed observation with a one-line BAD_INPUT naming the field', async () => {
        expect((await rejection(store.putObservation({ ...seen, samplesPerSecond: -1 }))).message).toContain('samplesPerSecond');
        expect((await rejection(store.putObservation({ ...seen, jobId: 'x' }))).message).toContain('jobId');
        expect((await rejection(store.putObservation({ ...seen, workload: '' }))).message).toContain('workload');
        expect(await store.listObservations()).toEqual([]);
      });
    });

    describe('life cycle', () => {
      it('init() twice is harmless and keeps the data', async () => {
        const job = await store.insertJob(spec('a'), T0);
        await store.init();
        expect(await store.getJob(job.id)).toEqual(job);
      });

      it('refuses use before init() and after close(); close() twice is fine', async () => {
        const raw = await open();
        opened.push(raw);
        expect((await rejection(raw.insertJob(spec('a'), T0))).message).toContain('init()');
        await store.close();
        await store.close();
        expect((await rejection(store.getJob('1'))).message).toContain('closed');
      });

      it.skipIf(!options.reopen)('keeps jobs, events and settings across close and reopen', async () => {
        const jobs = await store.insertJobs([spec('a'), spec('b', { priority: 'background' })], T0);
        const running = await store.updateJob(jobs[0]!.id, jobs[0]!.version, { state: 'running', process: { pid: 7, startTicks: '99', dir: '/d' } });
        const event = await store.appendEvent({ time: T0, type: 'job-started', jobId: jobs[0]!.id, data: { pid: 7 } });
        await store.putSetting('k', 'v');
        await store.close();

        const back = await again(store);
        expect(await back.getJob(jobs[0]!.id)).toEqual(running);
        expect(await back.getJob(jobs[1]!.id)).toEqual(jobs[1]);
        expect(await back.listEvents(0)).toEqual([event]);
        expect(await back.getSetting('k')).toBe('v');
        const next = await back.insertJob(spec('c'), T0 + 1);
        expect(Number(next.id)).toBeGreaterThan(Number(jobs[1]!.id));
        expect((await back.appendEvent({ time: T0 + 1, type: 'job-submitted', jobId: next.id, data: {} })).seq).toBe(event.seq + 1);
      });

      it.skipIf(!options.reopen)('two stores on one database see each other, and only one CAS wins', async () => {
        const other = await again(store);
        const job = await store.insertJob(spec('a'), T0);
        expect(await other.getJob(job.id)).toEqual(job);
        const [x, y] = await Promise.all([store.updateJob(job.id, job.version, { state: 'starting' }), other.updateJob(job.id, job.version, { state: 'cancelled' })]);
        expect([x, y].filter((r) => r !== null)).toHaveLength(1);
        expect(await store.getJob(job.id)).toEqual(x ?? y);
      });
    });
  });
}
