import { describe, expect, it } from 'vitest';
import { cli } from './run-cli.js';

describe('migpool demo: bad flags', () => {
  it('a bad --gpus is one line naming --gpus (not serve\'s --simulate), exit 2', async () => {
    const { code, err } = await cli('demo', '--gpus', '2xFOO', '--exit-when-done');
    expect(code).toBe(2);
    expect(err.trim().split('\n')).toHaveLength(1);
    expect(err).toMatch(/^migpool: --gpus '2xFOO': unknown GPU 'FOO': use one of A30-24GB, /);
  });

  it('a bad count in --gpus names --gpus too', async () => {
    const { code, err } = await cli('demo', '--gpus', '99xA100-SXM4-40GB');
    expect(code).toBe(2);
    expect(err.trim()).toBe("migpool: --gpus '99xA100-SXM4-40GB': the count must be 1 to 64, as in 8xA100-SXM4-40GB");
  });
});
