import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { parseJobSpec, type JobSpecInput } from '../src/jobs/job-spec.js';
import { openPostgresStore } from '../src/store/postgres.js';
import { openSqliteStore } from '../src/store/sqlite.js';
import type { Store } from '../src/store/types.js';

/** What `migpool serve` must sustain: 1,000 submissions/s through HTTP, the store being one part. */
const TARGET_PER_S = 1000;

function specs(n: number, from = 0): JobSpecInput[] {
  return Array.from({ length: n }, (_, i) =>
    parseJobSpec({ name: `bench-${from + i}`, command: ['python', 'train.py', '--epochs', '10'], resources: { profile: '1g.10gb' }, priority: i % 4 === 0 ? 'background' : 'foreground' }),
  );
}

function rate(n: number, ms: number): string {
  return `${Math.round((n / ms) * 1000).toLocaleString('en-US')}/s`.padStart(12);
}

async function measure(store: Store): Promise<string[]> {
  const lines: string[] = [];
  const now = 1_700_000_000_000;
  await store.init();

  const batches = [specs(10_000, 0), specs(10_000, 10_000), specs(10_000, 20_000)];
  const batchMs: number[] = [];
  for (const batch of batches) {
    const t = performance.now();
    await store.insertJobs(batch, now);
    batchMs.push(performance.now() - t);
  }
  const best = Math.min(...batchMs);
  lines.push(`    insertJobs, batches of 10,000  ${rate(10_000, best)}  (best of 3; target ${TARGET_PER_S.toLocaleString('en-US')}/s -> ${(10_000 / best) * 1000 >= TARGET_PER_S ? 'PASS' : 'FAIL'})`);

  const singles = specs(2000, 30_000);
  let t = performance.now();
  const inserted = [];
  for (const s of singles) inserted.push(await store.insertJob(s, now));
  const singleMs = performance.now() - t;
  lines.push(`    insertJob, one at a time       ${rate(singles.length, singleMs)}  (target ${TARGET_PER_S.toLocaleString('en-US')}/s -> ${(singles.length / singleMs) * 1000 >= TARGET_PER_S ? 'PASS' : 'FAIL'})`);

  t = performance.now();
  for (const job of inserted) await store.updateJob(job.id, job.version, { state: 'starting', startedAt: now + 1, attempt: 1 });
  lines.push(`    updateJob (CAS), one at a time ${rate(inserted.length, performance.now() - t)}`);

  t = performance.now();
  for (let i = 0; i < 2000; i++) await store.appendEvent({ time: now + i, type: 'job-submitted', jobId: inserted[i % inserted.length]!.id, data: { i } });
  lines.push(`    appendEvent, one at a time     ${rate(2000, performance.now() - t)}`);

  const pages = 200;
  t = performance.now();
  for (let i = 0; i < pages; i++) await store.listJobs({ states: ['queued'], priority: 'foreground', limit: 100, after: String(i * 100) });
  const pageMs = (performance.now() - t) / pages;
  lines.push(`    listJobs (queued, foreground, 100 a page, of 32,000 jobs): ${pageMs.toFixed(2)} ms a page`);
  return lines;
}

/**
 * Store throughput: batched and single submissions, compare-and-set updates, event appends and
 * queue pages, on a file-backed SQLite store, and on PostgreSQL too when
 * `MIGPOOL_TEST_POSTGRES_URL` names a server (in a schema of its own, dropped afterwards).
 */
export async function benchStore(): Promise<string[]> {
  const lines: string[] = ['store: job submissions and updates'];
  const dir = mkdtempSync(join(tmpdir(), 'migpool-bench-store-'));
  const sqlite = openSqliteStore(join(dir, 'migpool.db'));
  try {
    lines.push('  SQLite (file, WAL, synchronous=NORMAL)');
    lines.push(...(await measure(sqlite)));
  } finally {
    await sqlite.close();
    rmSync(dir, { recursive: true, force: true });
  }

  const url = process.env['MIGPOOL_TEST_POSTGRES_URL'];
  if (url === undefined) {
    lines.push('  PostgreSQL: skipped (set MIGPOOL_TEST_POSTGRES_URL, e.g. by running .ci/postgres.sh)');
    return lines;
  }
  const schema = `migpool_bench_${randomBytes(4).toString('hex')}`;
  const postgres = openPostgresStore(url, { schema });
  try {
    lines.push('  PostgreSQL (local server)');
    lines.push(...(await measure(postgres)));
  } finally {
    await postgres.close();
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await client.end();
  }
  return lines;
}
