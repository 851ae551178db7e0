import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { BIN, cli } from './run-cli.js';

const run = promisify(execFile);


describe('the installed migpool command (bin/migpool.js over the build)', () => {
  it('prints help and exits 0', async () => {
    const { stdout } = await run('node', [BIN, '--help']);
    expect(stdout).toMatch(/Usage: migpool/);
    for (const cmd of ['gpus', 'profiles', 'layouts', 'check']) expect(stdout).toContain(cmd);
  });

  it('check exits 1 with the reason when profiles do not fit', async () => {
    const failure = await run('node', [BIN, 'check', '--gpu', 'A100-SXM4-40GB', '4g.20gb', '3g.20gb', '1g.5gb']).catch((e: { code: number; stderr: string }) => e);
    expect('code' in failure && failure.code).toBe(1);
    expect((failure as { stderr: string }).stderr).toMatch(/does not fit on A100-40GB: the profiles need 8 compute slices/);
  });

  it('bad input exits 2 with one line and no stack trace', async () => {
    const failure = (await run('node', [BIN, 'profiles', '--gpu', 'V100']).catch((e: unknown) => e)) as { code: number; stderr: string };
    expect(failure.code).toBe(2);
    expect(failure.stderr.trim().split('\n')).toHaveLength(1);
    expect(failure.stderr).toMatch(/^migpool: unknown GPU 'V100': use one of A30-24GB/);
  });
});

describe('migpool serve: bad input is refused in one line, exit 2, before anything starts', () => {
  const serve = (dataDir: string, ...flags: string[]) => cli('serve', '--data-dir', dataDir, '--simulate', '1xA100-SXM4-40GB', ...flags);

  it('refuses a --listen port that fetch() and browsers refuse, and names another', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'migpool-cli-serve-')), 'data');
    const r = await serve(dir, '--listen', '127.0.0.1:6000');
    expect(r.code).toBe(2);
    expect(r.err).toBe(`migpool: --listen '127.0.0.1:6000': port 6000 is one that fetch() and browsers refuse (a "bad port" of the Fetch standard), so neither migpool's client nor the dashboard could reach the service; pass another port, e.g. --listen 127.0.0.1:8080\n`);
    expect((await serve(dir, '--listen', '6667')).err).toMatch(/^migpool: --listen '6667': port 6667 .*e\.g\. --listen 127\.0\.0\.1:8080\n$/);
    expect(existsSync(dir)).toBe(false);
  });

  it('refuses a --data-dir that is a file, and leaves the file alone', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'migpool-cli-serve-')), 'notes.txt');
    writeFileSync(file, 'my notes\n');
    const r = await serve(file, '--listen', '127.0.0.1:0');
    expect(r.code).toBe(2);
    expect(r.err).toBe(`migpool: --data-dir '${file}' is a file, not a directory; give a directory\n`);
    expect((await serve(join(file, 'data'), '--listen', '127.0.0.1:0')).err).toBe(`migpool: --data-dir '${join(file, 'data')}': '${file}' is a file, not a directory; give a directory\n`);
    expect(readFileSync(file, 'utf8')).toBe('my notes\n');
  });

  it("refuses a data dir whose migpool.db is not migpool's database, and leaves it as it was", async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'migpool-cli-serve-')), 'data');
    mkdirSync(dir);
    writeFileSync(join(dir, 'migpool.db'), 'not a database\n');
    const r = await serve(dir, '--listen', '127.0.0.1:0');
    expect(r.code).toBe(2);
    expect(r.err).toBe(`migpool: ${join(dir, 'migpool.db')} is not a migpool database: SQLite says 'file is not a database' (it is another kind of file, or a damaged database); move it away (or restore it from a backup) and start again, or pass --data-dir with another directory\n`);
    expect(readdirSync(dir)).toEqual(['migpool.db']);
    expect(readFileSync(join(dir, 'migpool.db'), 'utf8')).toBe('not a database\n');
  });

  it('reads number flags as decimals only: 0x2 is not 2', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'migpool-cli-serve-')), 'data');
    const r = await serve(dir, '--listen', '127.0.0.1:0', '--mps-slowdown-bound', '0x2');
    expect(r.code).toBe(2);
    expect(r.err).toBe("migpool: --mps-slowdown-bound '0x2': give a ratio from 1 to 100, e.g. 1.1 (the foreground within 10% of its speed alone)\n");
    expect((await serve(dir, '--listen', '127.0.0.1:0', '--poll-ms', '0x1f4')).err).toBe("migpool: --poll-ms '0x1f4': give milliseconds from 100 to 600000\n");
    expect(existsSync(dir)).toBe(false);
    const sim = await cli('simulate', '--trace', 'synthetic', '--limit', '5', '--fleet', '1xA100-SXM4-40GB', '--policies', 'exclusive', '--preemption-cost', '0x3c');
    expect(sim.code).toBe(2);
    expect(sim.err).toBe("migpool: --preemption-cost must be a non-negative number, got '0x3c'\n");
  });
});

describe('migpool gpus | profiles | layouts | check', () => {
  it('gpus lists every family, one line each, and as JSON', async () => {
    const text = await cli('gpus');
    expect(text.code).toBe(0);
    expect(text.out.trim().split('\n')).toHaveLength(16);
    const json = JSON.parse((await cli('gpus', '--json')).out) as { gpus: { name: string; pciDeviceIds: string[] }[] };
    expect(json.gpus.map((g) => g.name)).toContain('A100-40GB');
    expect(json.gpus.find((g) => g.name === 'A30-24GB')?.pciDeviceIds).toEqual(['0x20B710DE']);
  });

  it('profiles shows every field, with unknown figures as ?', async () => {
    const { out, code } = await cli('profiles', '--gpu', 'NVIDIA A100-SXM4-40GB');
    expect(code).toBe(0);
    expect(out).toMatch(/3g\.20gb\s+9\s+19\.62\s+42\s+3\/2\/0\/0\/0\s+2\s+\{0,4\}:4\s+1c\.3g\.20gb 2c\.3g\.20gb 3g\.20gb/);
    const json = JSON.parse((await cli('profiles', '--gpu', '0x20B010DE', '--json')).out) as {
      gpu: string;
      profiles: { name: string; id: number; placements: unknown; computeInstanceProfiles: { name: string }[] }[];
    };
    expect(json.gpu).toBe('A100-40GB');
    const p4g = json.profiles.find((p) => p.name === '4g.20gb');
    expect(p4g?.placements).toEqual([{ start: 0, size: 4 }]);
    expect(p4g?.computeInstanceProfiles.map((c) => c.name)).toEqual(['1c.4g.20gb', '2c.4g.20gb', '4g.20gb']);
    expect((await cli('profiles', '--gpu', 'B300')).out).toMatch(/7g\.269gb\s+0\s+\?\s+\?/);
  });

  it('layouts --maximal --json has the documented shape', async () => {
    const { out, code } = await cli('layouts', '--gpu', 'a30', '--maximal', '--json');
    expect(code).toBe(0);
    const json = JSON.parse(out) as { gpu: string; layouts: { placements: { profile: string; start: number; size: number }[] }[] };
    expect(json.gpu).toBe('A30-24GB');
    expect(json.layouts).toContainEqual({ placements: [{ profile: '4g.24gb', start: 0, size: 4 }] });
    expect(json.layouts).toContainEqual({
      placements: [
        { profile: '2g.12gb', start: 0, size: 2 },
        { profile: '2g.12gb', start: 2, size: 2 },
      ],
    });
  });

  it('check prints a placement, in text and JSON', async () => {
    const ok = await cli('check', '--gpu', 'A100-SXM4-40GB', '3g.20gb', '2g.10gb', '2x1g.5gb');
    expect(ok.code).toBe(0);
    expect(ok.out).toContain('2g.10gb@0:2 1g.5gb@2:1 1g.5gb@3:1 3g.20gb@4:4');
    const json = JSON.parse((await cli('check', '--gpu', 'A100-SXM4-40GB', '4g.20gb', '3g.20gb', '--json')).out) as unknown;
    expect(json).toEqual({
      gpu: 'A100-40GB',
      valid: true,
      placements: [
        { profile: '4g.20gb', start: 0, size: 4 },
        { profile: '3g.20gb', start: 4, size: 4 },
      ],
    });
    const bad = await cli('check', '--gpu', 'A100-SXM4-40GB', '3g.20gb', '3g.20gb', '1g.5gb', '--json');
    expect(bad.code).toBe(1);
    expect(bad.err).toBe('');
    expect(JSON.parse(bad.out)).toMatchObject({ gpu: 'A100-40GB', valid: false, placements: [], reason: expect.stringMatching(/1g.5gb|compute|slice/) });
  });

  it.each([
    [['check', '--gpu', 'A100', '1g.5gb'], /GPU 'A100' is ambiguous: it could be A100-40GB, A100-80GB/],
    [['check', '--gpu', 'A100-40GB', '1g.24gb'], /profile '1g.24gb' is not offered by A100-40GB \(it is a profile of/],
    [['check', '--gpu', 'A100-40GB', '8x1g.5gb'], /A100-40GB holds at most 7 × 1g.5gb/],
    [['check', '--gpu', 'H100-80GB', 'bogus'], /profile 'bogus' is not offered by H100-80GB; H100-80GB offers 1g.10gb/],
    [['layouts'], /required option '--gpu <model>' not specified/],
    [['frobnicate'], /unknown command 'frobnicate'/],
  ])('bad input %j exits 2 with one line', async (argv, message) => {
    const { code, err } = await cli(...argv);
    expect(code).toBe(2);
    expect(err).toMatch(message);
    expect(err.trim().split('\n')).toHaveLength(1);
  });
});
