import { describe, expect, it } from 'vitest';
import { launchRefusal } from './launch-check.js';

describe('launchRefusal', () => {
  it('accepts an ordinary command', () => {
    expect(launchRefusal(['python', 'train.py'], { WANDB_MODE: 'offline' }, '/work')).toBeNull();
  });
  it('names a NUL byte in the command, the environment or the workdir', () => {
    expect(launchRefusal(['python', 'a\0b'], {}, undefined)).toMatchObject({ path: 'command.1' });
    expect(launchRefusal(['python'], { K: 'x\0' }, undefined)).toMatchObject({ path: 'env.K' });
    expect(launchRefusal(['python'], {}, '/w\0')).toMatchObject({ path: 'workdir' });
  });
  it('refuses an empty program name, which execve cannot start', () => {
    expect(launchRefusal([''], {}, undefined)).toMatchObject({ path: 'command.0', message: expect.stringMatching(/empty/) });
    expect(launchRefusal(['python', ''], {}, undefined)).toBeNull();
  });
  it('refuses a relative workdir: the service would read it from its own directory, not the submitter\'s', () => {
    expect(launchRefusal(['python'], {}, '../../etc')).toMatchObject({ path: 'workdir', message: expect.stringMatching(/absolute/) });
    expect(launchRefusal(['python'], {}, 'exp1')).toMatchObject({ path: 'workdir' });
    expect(launchRefusal(['python'], {}, '/srv/exp1')).toBeNull();
  });
  it('refuses a 900 KB value (E2BIG at exec) and too much in all', () => {
    expect(launchRefusal(['python'], { BIG: 'x'.repeat(900_000) }, undefined)).toMatchObject({ path: 'env.BIG', message: expect.stringMatching(/131072/) });
    const many = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`V${i}`, 'x'.repeat(120_000)]));
    expect(launchRefusal(['python'], many, undefined)).toMatchObject({ path: 'env' });
  });
});
