import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * examples/mps_pair.py, the one command a GPU owner runs to measure two copies of a job under MPS,
 * here with a fake nvidia-cuda-mps-control and the fake workload of the MPS tests (its foreground
 * copy slows 1.5x beside a background copy at full threads).
 */
const PYTHON = '/usr/bin/python3';
const SCRIPT = fileURLToPath(new URL('../examples/mps_pair.py', import.meta.url));
const WORKLOAD = fileURLToPath(new URL('./fixtures/mps/fake-mps-workload.mjs', import.meta.url));
const FAKE_CONTROL = `#!/bin/sh
if [ "$1" = "-d" ]; then input=""; else input=$(cat | tr '\\n' ' '); fi
printf '%s|%s|%s|%s\\n' "$*" "$CUDA_VISIBLE_DEVICES" "$CUDA_MPS_PIPE_DIRECTORY" "$input" >> "$(dirname "$0")/calls.log"
`;
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe.skipIf(!existsSync(PYTHON))('examples/mps_pair.py', () => {
  it('runs the job alone, then two copies (priority 0 and 1) under one daemon for the device, and reports the slowdown and total throughput', { timeout: 60_000 }, () => {
    const dir = mkdtempSync(join(tmpdir(), 'migpool-mps-pair-'));
    dirs.push(dir);
    mkdirSync(join(dir, 'bin'));
    mkdirSync(join(dir, 'shared'));
    writeFileSync(join(dir, 'bin', 'nvidia-cuda-mps-control'), FAKE_CONTROL);
    chmodSync(join(dir, 'bin', 'nvidia-cuda-mps-control'), 0o755);
    const r = spawnSync(PYTHON, [SCRIPT, '--device', 'GPU-test', '--seconds', '1.5', '--warmup', '1', '--json', '--', process.execPath, WORKLOAD, join(dir, 'shared')], {
      env: { ...process.env, PATH: `${join(dir, 'bin')}${delimiter}${process.env['PATH'] ?? ''}`, FAKE_MPS_IMPACT: '0.5' },
      encoding: 'utf8',
    });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const out = JSON.parse(r.stdout) as Record<string, number>;
    // The fake runs 800 samples/s alone; its foreground copy 1.5x slower beside the background one once both run.
    expect(out['aloneSamplesPerSecond']).toBeGreaterThan(700);
    expect(out['foregroundSlowdown']).toBeGreaterThan(1.25);
    expect(out['foregroundSlowdown']).toBeLessThan(1.6);
    expect(out['totalOverAlone']).toBeCloseTo(1 / out['foregroundSlowdown']! + out['backgroundSamplesPerSecond']! / out['aloneSamplesPerSecond']!, 6);
    const calls = readFileSync(join(dir, 'bin', 'calls.log'), 'utf8').trim().split('\n').map((l) => l.split('|'));
    expect(calls.map((c) => [c[0], c[1], c[3]?.trim()])).toEqual([
      ['-d', 'GPU-test', ''],
      ['', 'GPU-test', 'quit'],
    ]);
    expect(calls[0]![2]).toBe(calls[1]![2]);
  });
});
