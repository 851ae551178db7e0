import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { keyOf, MpsDaemons } from './mps-daemons.js';

const FAKE = `#!/bin/sh
if [ "$1" = "-d" ] && [ -n "$FAKE_MPS_FAIL" ]; then echo "$FAKE_MPS_FAIL" >&2; exit 1; fi
if [ "$1" = "-d" ]; then input=""; else input=$(cat | tr '\\n' ' '); fi
printf '%s|%s|%s|%s|%s\\n' "$*" "$CUDA_VISIBLE_DEVICES" "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY" "$input" >> "$(dirname "$0")/calls.log"
`;
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function setup(extra: Record<string, string> = {}): { daemons: MpsDaemons; dir: string; calls: () => string[][] } {
  const dir = mkdtempSync(join(tmpdir(), 'migpool-mps-daemons-'));
  dirs.push(dir);
  writeFileSync(join(dir, 'nvidia-cuda-mps-control'), FAKE);
  chmodSync(join(dir, 'nvidia-cuda-mps-control'), 0o755);
  const env = { ...process.env, PATH: `${dir}${delimiter}${process.env['PATH'] ?? ''}`, ...extra };
  const daemons = new MpsDaemons({ dataDir: join(dir, 'data'), env: () => env });
  const calls = () => (existsSync(join(dir, 'calls.log')) ? readFileSync(join(dir, 'calls.log'), 'utf8').trim().split('\n').map((l) => l.split('|').map((x) => x.trim())) : []);
  return { daemons, dir, calls };
}

describe('MpsDaemons', () => {
  it('starts one daemon per device set, once, with the device and its own directories; stops those no longer needed', async () => {
    const { daemons, dir, calls } = setup();
    const a = await daemons.ensure(['GPU-a']);
    expect(await daemons.ensure(['GPU-a'])).toEqual(a);
    const b = await daemons.ensure(['MIG-b/1']);
    expect(a).toEqual({ pipeDir: join(dir, 'data', 'mps', 'GPU-a', 'pipe'), logDir: join(dir, 'data', 'mps', 'GPU-a', 'log') });
    expect(b.pipeDir).toBe(join(dir, 'data', 'mps', 'MIG-b_1', 'pipe'));
    expect(existsSync(a.pipeDir) && existsSync(a.logDir)).toBe(true);
    expect(daemons.running()).toEqual(['GPU-a', 'MIG-b/1']);
    expect(await daemons.keepOnly(new Set([keyOf(['MIG-b/1'])]))).toEqual(['GPU-a']);
    await daemons.stopAll();
    expect(calls()).toEqual([
      ['-d', 'GPU-a', a.pipeDir, a.logDir, ''],
      ['-d', 'MIG-b/1', b.pipeDir, b.logDir, ''],
      ['', 'GPU-a', a.pipeDir, a.logDir, 'quit'],
      ['', 'MIG-b/1', b.pipeDir, b.logDir, 'quit'],
    ]);
    expect(daemons.running()).toEqual([]);
  });

  it('says why a daemon did not start, and keeps none', async () => {
    const { daemons } = setup({ FAKE_MPS_FAIL: 'cannot find a GPU' });
    await expect(daemons.ensure(['GPU-a'])).rejects.toThrow('nvidia-cuda-mps-control -d failed: cannot find a GPU');
    expect(daemons.running()).toEqual([]);
  });

  it('says what to do when nvidia-cuda-mps-control is not on PATH', async () => {
    const { daemons, dir } = setup();
    const bare = new MpsDaemons({ dataDir: join(dir, 'data'), env: () => ({ PATH: join(dir, 'nowhere') }) });
    await expect(bare.ensure(['GPU-a'])).rejects.toThrow(/^nvidia-cuda-mps-control not found on PATH: .*install it, or do without MPS/);
    expect(daemons.running()).toEqual([]);
  });

  it('takes an adopted daemon as running and stops it with quit', async () => {
    const { daemons, calls } = setup();
    const d = daemons.adopt(['GPU-a']);
    expect(await daemons.ensure(['GPU-a'])).toEqual(d);
    await daemons.stopAll();
    expect(calls()).toEqual([['', 'GPU-a', d.pipeDir, d.logDir, 'quit']]);
  });
});
