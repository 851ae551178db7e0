import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FakePoolService } from '../../test/fake-pool-service.js';
import { MigpoolError } from '../errors.js';
import { jobMappingFiles, MAPPING_FILE_NAME, startJobMapping } from './dcgm-job-mapping.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'migpool-jobmap-'));
  dirs.push(d);
  return d;
}

const spec = { name: 'cifar', command: ['python', 'train.py'], resources: { profile: '1g.5gb' } };

/** Two GPUs: an A100 in MIG mode with three instances (GI ids 1, 3, 5 by the fake), an H100 whole. */
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

/** The mapping directory as dcgm-exporter would read it: name to job ids. */
function read(dir: string): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const name of readdirSync(dir).filter((n) => MAPPING_FILE_NAME.test(n)).sort()) out[name] = readFileSync(join(dir, name), 'utf8').split('\n').filter((l) => l !== '');
  return out;
}

describe('jobMappingFiles', () => {
  it('names MIG instances <gpu>.<GI id> and whole GPUs <gpu>, one job id a line; idle ones get no file', async () => {
    const fake = pool();
    for (let i = 0; i < 4; i++) await fake.submit(spec);
    fake.startJob('1', 0, 2);
    fake.startJob('2', 0, 4);
    fake.startJob('3', 1, null);
    fake.startJob('4', 1, null);
    const files = jobMappingFiles(await fake.gpus());
    expect(Object.fromEntries(files)).toEqual({ '0.3': '1\n', '0.5': '2\n', '1': '3\n4\n' });
  });

  it('gives no file to an instance whose GI id is unknown (dcgm-exporter could not match it)', async () => {
    const fake = pool();
    await fake.submit(spec);
    fake.startJob('1', 0, 0);
    fake.gpuList[0]!.instances[0]!.gpuInstanceId = null;
    expect(jobMappingFiles(await fake.gpus()).size).toBe(0);
  });
});

describe('startJobMapping', () => {
  it('follows starts and ends, replaces files whole, and removes stale ones but not files of other names', async () => {
    const fake = pool();
    const dir = tempDir();
    writeFileSync(join(dir, '0.9'), '77\n');
    writeFileSync(join(dir, '5'), '78\n');
    writeFileSync(join(dir, 'README'), 'not a mapping file\n');
    for (let i = 0; i < 2; i++) await fake.submit(spec);
    fake.startJob('1', 0, 0);
    const writer = await startJobMapping(fake, dir);
    expect(read(dir)).toEqual({ '0.1': ['1'] });
    expect(existsSync(join(dir, 'README'))).toBe(true);

    fake.startJob('2', 0, 2);
    await writer.sync();
    expect(read(dir)).toEqual({ '0.1': ['1'], '0.3': ['2'] });
    fake.finishJob('1', 0);
    await writer.sync();
    expect(read(dir)).toEqual({ '0.3': ['2'] });
    // No temporary file is left behind.
    expect(readdirSync(dir).sort()).toEqual(['0.3', 'README']);
    await writer.close();
  });

  it('rewrites on the service events alone (no explicit sync)', async () => {
    const fake = pool();
    const dir = tempDir();
    await fake.submit(spec);
    const writer = await startJobMapping(fake, dir);
    expect(read(dir)).toEqual({});
    fake.startJob('1', 1, null);
    for (let i = 0; i < 50 && !existsSync(join(dir, '1')); i++) await new Promise((r) => setTimeout(r, 10));
    expect(read(dir)).toEqual({ '1': ['1'] });
    await writer.close();
  });

  it('refuses a directory that is a file, or under one, naming the flag and the file', async () => {
    const dir = tempDir();
    const file = join(dir, 'plain-file');
    writeFileSync(file, '');
    const under = await startJobMapping(pool(), join(file, 'sub')).catch((e: unknown) => e);
    expect(under).toBeInstanceOf(MigpoolError);
    expect((under as MigpoolError).code).toBe('BAD_INPUT');
    expect((under as MigpoolError).message).toBe(`--dcgm-job-mapping-dir '${join(file, 'sub')}': '${file}' is a file, not a directory; give a directory (the one dcgm-exporter reads with --hpc-job-mapping-dir)`);
    const itself = await startJobMapping(pool(), file).catch((e: unknown) => e);
    expect((itself as MigpoolError).message).toBe(`--dcgm-job-mapping-dir '${file}' is a file, not a directory; give a directory (the one dcgm-exporter reads with --hpc-job-mapping-dir)`);
  });

  it('refuses to start when it cannot write a file there, and reports later failures through the log once', async () => {
    const dir = tempDir();
    // A directory where the file for GPU 1 must go: no rename can replace it (not even root's).
    mkdirSync(join(dir, '1'));
    const fake = pool();
    await fake.submit(spec);
    fake.startJob('1', 1, null);
    await expect(startJobMapping(fake, dir)).rejects.toThrow(/^--dcgm-job-mapping-dir '.*': dcgm job mapping: cannot update .*: E(ISDIR|NOTEMPTY|EXIST)/);

    rmSync(join(dir, '1'), { recursive: true });
    const lines: string[] = [];
    const writer = await startJobMapping(fake, dir, (l) => lines.push(l));
    expect(read(dir)).toEqual({ '1': ['1'] });
    rmSync(join(dir, '1'));
    mkdirSync(join(dir, '1'));
    await writer.sync();
    await writer.sync();
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/cannot update/);
    expect(readdirSync(dir).filter((n) => n.endsWith('.tmp'))).toEqual([]);
    await writer.close();
  });
});
