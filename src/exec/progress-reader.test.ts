import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_PARTIAL_BYTES, ProgressReader } from './progress-reader.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('ProgressReader', () => {
  it('reads progress lines incrementally, measures samples/s and the ETA from migpool_total', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'migpool-progress-'));
    dirs.push(dir);
    const log = join(dir, 'stdout.log');
    writeFileSync(log, 'epoch 1\n{"migpool_samples": 0, "migpool_total": 1000}\n');
    const r = new ProgressReader();
    expect(await r.poll('1', log, 10_000)).toMatchObject({ samples: 0, total: 1000, fraction: 0, samplesPerSecond: null });
    appendFileSync(log, '{"migpool_samples": 200}\n{"migpool_sam');
    const p = await r.poll('1', log, 12_000);
    expect(p).toMatchObject({ samples: 200, fraction: 0.2, samplesPerSecond: 100, etaSeconds: 8 });
    appendFileSync(log, 'ples": 400}\n');
    expect(await r.poll('1', log, 14_000)).toMatchObject({ samples: 400, fraction: 0.4, samplesPerSecond: 100, etaSeconds: 6 });
  });

  it('skips an endless line without keeping it in memory, and starts afresh on a new attempt', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'migpool-progress-'));
    dirs.push(dir);
    const log = join(dir, 'stdout.log');
    writeFileSync(log, 'x'.repeat(MAX_PARTIAL_BYTES * 4));
    const r = new ProgressReader();
    expect(await r.poll('1', log, 0)).toBeNull();
    appendFileSync(log, '{"migpool_samples": 5}\n{"migpool_samples": 7}\n');
    expect(await r.poll('1', log, 1000)).toMatchObject({ samples: 7 });
    const next = join(dir, 'stdout2.log');
    writeFileSync(next, '{"migpool_samples": 9, "migpool_total": 10}\n');
    expect(await r.poll('1', next, 2000)).toMatchObject({ samples: 9, fraction: 0.9 });
  });
});
