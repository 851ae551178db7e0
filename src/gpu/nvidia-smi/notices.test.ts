import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { describeLost, parseLostGpuLine, splitNotices } from './notices.js';

const fixture = (name: string) => readFileSync(new URL(`../../../test/fixtures/nvidia-smi/${name}`, import.meta.url), 'utf8');

describe('lines about one GPU beside an answer', () => {
  it.each([
    ['Unable to determine the device handle for GPU 0000:0B:00.0: Unknown Error', null, '0000:0B:00.0', 'Unknown Error'],
    ['Unable to determine the device handle for GPU0000:20:00.0: Unknown Error', null, '0000:20:00.0', 'Unknown Error'],
    ['Unable to determine the device handle for GPU3: 0000:04:00.0: Unknown Error', 3, '0000:04:00.0', 'Unknown Error'],
    ['Unable to determine the device handle for GPU2: Unknown Error', 2, null, 'Unknown Error'],
    ['Unable to determine the device handle for GPU 0000:02:00.0: GPU is lost. Reboot the system to recover this GPU', null, '0000:02:00.0', 'GPU is lost. Reboot the system to recover this GPU'],
  ])('reads %s', (line, index, busId, reason) => {
    expect(parseLostGpuLine(line)).toMatchObject({ index, busId, reason });
  });

  it('takes the lost GPU out of a real capture and keeps the 7 GPUs that answered', () => {
    const n = splitNotices(fixture('rtx-3080-8gpu_query-gpu-one-lost_public-notes.txt'));
    expect(n.lost).toEqual([{ index: 3, busId: '0000:04:00.0', reason: 'Unknown Error', line: 'Unable to determine the device handle for GPU3: 0000:04:00.0: Unknown Error' }]);
    expect(n.rest.split('\n').filter((l) => l !== '')).toHaveLength(7);
    expect(describeLost(n.lost)).toBe(
      'nvidia-smi cannot reach GPU 3 (0000:04:00.0): Unknown Error (fallen off the bus? look for Xid 79 in dmesg; reset it with nvidia-smi -r -i 0000:04:00.0 or reboot the node, and reseat it if it comes back lost)',
    );
  });

  it('takes the corrupted-infoROM warning out and leaves the listing whole', () => {
    const text = fixture('p100-pcie_infoROM-corrupted-exit-14_gpu-operator-docs.txt');
    const n = splitNotices(text);
    expect(n.warnings).toEqual(['WARNING: infoROM is corrupted at gpu 0000:0B:00.0']);
    expect(n.lost).toEqual([]);
    expect(n.rest).toBe(text.replace('WARNING: infoROM is corrupted at gpu 0000:0B:00.0\n', ''));
  });

  it('leaves every other line alone', () => {
    expect(splitNotices('0, GPU-1, NVIDIA A100-SXM4-40GB\nNo devices were found\n')).toEqual({ lost: [], warnings: [], rest: '0, GPU-1, NVIDIA A100-SXM4-40GB\nNo devices were found\n' });
  });
});
