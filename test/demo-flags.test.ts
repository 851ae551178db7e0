import { describe, expect, it } from 'vitest';
import { cli } from './run-cli.js';

describe('migpool demo: bad flags', () => {
  it('a bad --gpus is one line naming --gpus (not serve\'s --simulate), exit 2', async () => {
    const { code, err } = await cli('demo', '--gpus', '2xFOO', '--exit-when-done');
    expect(code).toBe(2);
    expect(err.trim().split('\n')).toHaveLength(1);
    expect(err).toMatch(/^migpool: --gpus '2xFOO': unknown GPU 'FOO': use one of A30-24GB, /);
  });

  it('a bad count in --gpus names --gpus too, the real limit and the fix', async () => {
    const { code, err } = await cli('demo', '--gpus', '99xA100-SXM4-40GB');
    expect(code).toBe(2);
    expect(err.trim()).toBe(
      "migpool: --gpus '99xA100-SXM4-40GB': 99 is more GPUs than one entry of a machine spec holds (at most 64 per entry); split it into entries, as in 64xA100-SXM4-40GB,35xA100-SXM4-40GB",
    );
    // The split it suggests is a spec that holds.
    const bare = await cli('demo', '--gpus', '99');
    expect(bare.code).toBe(2);
    expect(bare.err.trim()).toBe("migpool: --gpus '99': a count alone names no GPU: give the model after it, as in 64xA100-SXM4-40GB,35xA100-SXM4-40GB");
  });
});
