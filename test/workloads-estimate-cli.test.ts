import { describe, expect, it } from 'vitest';
import { cli } from './run-cli.js';

interface EstimateJson {
  memoryGiB: number;
  fits: Record<string, boolean | 'unknown'>;
  gpu: string;
  estimate: { params: number; activationBytes: number; optimizer: string; precision: string };
}

describe('migpool workloads estimate', () => {
  it('prints the memory and, per profile of the GPU, whether it fits', async () => {
    const { code, out, err } = await cli('workloads', 'estimate', '--model', 'resnet152', '--batch', '128', '--optimizer', 'sgd', '--gpu', 'A100-SXM4-40GB', '--json');
    expect(err).toBe('');
    expect(code).toBe(0);
    const json = JSON.parse(out) as EstimateJson;
    expect(json.gpu).toBe('A100-40GB');
    expect(json.estimate.params).toBe(60_192_808); // torchvision's resnet152
    expect(json.memoryGiB).toBeGreaterThan(19.5);
    expect(json.memoryGiB).toBeLessThan(39.5);
    expect(json.fits).toMatchObject({ '1g.5gb': false, '3g.20gb': false, '7g.40gb': true, full: true });
  });

  it('mixed precision keeps less than fp32; Adam keeps more than SGD', async () => {
    const mem = async (...extra: string[]) => (JSON.parse((await cli('workloads', 'estimate', '--model', 'bert-base', '--batch', '8', '--seq-len', '384', '--json', ...extra)).out) as EstimateJson).memoryGiB;
    const fp32 = await mem('--precision', 'fp32', '--optimizer', 'adamw');
    expect(await mem('--precision', 'amp', '--optimizer', 'adamw')).toBeLessThan(fp32);
    expect(await mem('--precision', 'fp32', '--optimizer', 'sgd')).toBeLessThan(fp32);
  });

  it('prints a table by default', async () => {
    const { code, out } = await cli('workloads', 'estimate', '--model', 'bert-base', '--batch', '8', '--seq-len', '384', '--gpu', 'A30');
    expect(code).toBe(0);
    expect(out).toMatch(/^1g\.6gb\s+5\.81\s+yes$/m);
  });

  it.each([
    [['--model', 'resnet9000', '--batch', '8'], /unknown model 'resnet9000'/],
    [['--model', 'resnet50', '--batch', '0'], /--batch must be a positive whole number/],
    [['--model', 'resnet50', '--batch', '8', '--seq-len', '128'], /--seq-len is for language models/],
    [['--model', 'gpt2', '--batch', '8', '--seq-len', '2048'], /at most 1024 tokens/],
    [['--model', 'resnet50', '--batch', '8', '--precision', 'fp8'], /--precision 'fp8'/],
  ])('bad input %j exits 2 with one line', async (args, message) => {
    const { code, err } = await cli('workloads', 'estimate', ...args);
    expect(code).toBe(2);
    expect(err).toMatch(message);
    expect(err.trim().split('\n')).toHaveLength(1);
  });
});
