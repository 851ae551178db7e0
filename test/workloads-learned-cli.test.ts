import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../src/store/sqlite.js';
import { cli } from './run-cli.js';

const dir = mkdtempSync(join(tmpdir(), 'migpool-learned-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface LearnedJson {
  learned: { name: string; user: string | null; points: { resource: string; samplesPerSecond: number | null; modelSamplesPerSecond: number | null; learnedSamplesPerSecond: number | null }[]; error: { model: number; learned: number } | null; memoryGiB: { model: number | null; learned: number | null } }[];
  unresolvedLearned: { name: string; observations: number }[];
}

describe('migpool workloads --fit --data-dir', () => {
  it('lists what a service learned: each workload, its measured points, its error before and after, its memory', async () => {
    const store = openSqliteStore(join(dir, 'migpool.db'));
    await store.init();
    const base = { workload: 'small', attempt: 1, gpuModel: 'A100-SXM4-40GB', samplesPerSecond: 1000, peakMemoryMiB: null, outOfMemory: false, time: 1_700_000_000_000, owner: null, shared: true };
    await store.putObservation({ ...base, jobId: '1', resource: '1g.5gb' });
    await store.putObservation({ ...base, jobId: '2', resource: '2g.10gb', peakMemoryMiB: 6144 });
    await store.putObservation({ ...base, jobId: '3', resource: '3g.20gb' });
    await store.putObservation({ ...base, workload: 'my-own-net', jobId: '4', resource: 'whole' });
    await store.close();

    const json = JSON.parse((await cli('workloads', '--fit', '--data-dir', dir, '--json')).out) as LearnedJson;
    expect(json.learned.map((l) => l.name)).toEqual(['small']);
    const small = json.learned[0]!;
    expect(small.points.map((p) => p.resource)).toEqual(['1g.5gb', '2g.10gb', '3g.20gb']);
    expect(small.error!.learned).toBeLessThan(0.1);
    expect(small.error!.model).toBeGreaterThan(1);
    expect(small.memoryGiB).toEqual({ model: 3.04, learned: 6 });
    expect(json.unresolvedLearned).toEqual([{ name: 'my-own-net', observations: 1 }]);

    const text = await cli('workloads', '--fit', '--data-dir', dir);
    expect(text.code).toBe(0);
    expect(text.out).toContain('learned workloads (from the jobs the service ran)');
    expect(text.out).toMatch(/^small\s+everyone \(shared\)\s+3\s+\d+\.\d% -> \d\.\d% +3\.04 -> 6\.00\s+learned: /m);
    expect(text.out).toContain("small: measured points (shared: by admins' jobs and jobs of no user)");
    expect(text.out).toContain("my-own-net: 1 observation(s), but no such workload here; give its file with --workload");
  });

  it("shows what is shared and, apart, what a user's own jobs taught (it moves only that user's jobs)", async () => {
    const d = mkdtempSync(join(tmpdir(), 'migpool-learned-users-'));
    try {
      const store = openSqliteStore(join(d, 'migpool.db'));
      await store.init();
      const base = { workload: 'small', attempt: 1, gpuModel: 'A100-SXM4-40GB', resource: '3g.20gb', samplesPerSecond: null, peakMemoryMiB: null, outOfMemory: false, time: 1_700_000_000_000 };
      // root (an admin) saw 6 GiB; bob's job claimed to run out of memory on a 3g.20gb slice (19.62 GiB usable).
      await store.putObservation({ ...base, jobId: '1', peakMemoryMiB: 6144, owner: 'root', shared: true });
      await store.putObservation({ ...base, jobId: '2', outOfMemory: true, owner: 'bob', shared: false });
      await store.close();
      const json = JSON.parse((await cli('workloads', '--fit', '--data-dir', d, '--json')).out) as LearnedJson;
      expect(json.learned.map((l) => [l.name, l.user, l.points.length, l.memoryGiB.learned])).toEqual([
        ['small', null, 1, 6],
        ['small', 'bob', 2, 19.63],
      ]);
      const text = await cli('workloads', '--fit', '--data-dir', d);
      expect(text.out).toMatch(/^small\s+everyone \(shared\)\s+1\s.*3\.04 -> 6\.00/m);
      expect(text.out).toMatch(/^small\s+bob \(shared \+ own\)\s+2\s.*3\.04 -> 19\.63/m);
      expect(text.out).toContain("small: bob's own points (they move only bob's jobs)");
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });

  it('refuses a folder that holds no service database, creating nothing', async () => {
    const empty = join(dir, 'nothing-here');
    const r = await cli('workloads', '--fit', '--data-dir', empty);
    expect(r.code).toBe(2);
    expect(r.err.trim().split('\n')).toHaveLength(1);
    expect(r.err).toContain('no migpool.db there');
    const without = await cli('workloads', '--data-dir', dir);
    expect(without.code).toBe(2);
    expect(without.err).toContain('--data-dir and --database go with --fit');
  });
});
