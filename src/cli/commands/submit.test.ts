import { describe, expect, it } from 'vitest';
import { MigpoolError } from '../../errors.js';
import { nameOf, pairs, specFromFlags, withWorkdirFrom, type SubmitOptions } from './submit.js';

const base: SubmitOptions = { env: [], label: [], after: [], interval: '0.5' };

function failure(f: () => unknown): MigpoolError {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(MigpoolError);
    return e as MigpoolError;
  }
  throw new Error('expected a failure');
}

describe('submit -- COMMAND', () => {
  it('names the job after the script, else the program', () => {
    expect(nameOf(['python', 'scripts/train.py', '--lr', '3e-4'])).toBe('train.py');
    expect(nameOf(['/usr/bin/torchrun', '--nproc', '2'])).toBe('torchrun');
    expect(nameOf(['sleep', '10'])).toBe('sleep');
  });

  it('turns the flags into a job spec: resources, env, labels, dependencies, array', () => {
    const spec = specFromFlags(['python', 'train.py'], { ...base, profile: '1g.5gb', env: ['SEED=1', 'X=a=b'], label: ['team=vision'], after: ['4,5', '6'], array: '0-9%2', priority: 'background', preemptible: true, estimate: '2h' }, '/home/u/exp');
    expect(spec).toEqual({
      name: 'train.py',
      command: ['python', 'train.py'],
      workdir: '/home/u/exp',
      env: { SEED: '1', X: 'a=b' },
      resources: { profile: '1g.5gb' },
      priority: 'background',
      preemptible: true,
      estimatedSeconds: '2h',
      labels: { team: 'vision' },
      after: ['4', '5', '6'],
      array: '0-9%2',
    });
    expect(specFromFlags(['true'], { ...base, atLeast: '3g.20gb' }, '/').resources).toEqual({ profile: { atLeast: '3g.20gb' } });
    expect(specFromFlags(['true'], { ...base, memory: '8GiB' }, '/').resources).toEqual({ memory: '8GiB' });
    expect(specFromFlags(['true'], { ...base, gpus: '2' }, '/').resources).toEqual({ gpus: 2 });
    expect(specFromFlags(['true'], base, '/').resources).toEqual({ gpus: 1 });
  });

  it('refuses two resource flags, a bad pair and a bad value with one line naming it', () => {
    expect(failure(() => specFromFlags(['true'], { ...base, profile: '1g.5gb', gpus: '1' }, '/')).message).toContain('at most one of --profile, --at-least, --memory and --gpus');
    expect(failure(() => pairs(['nokey'], '--label')).message).toBe("--label 'nokey' is not KEY=VALUE: write it as --label team=vision");
    const e = failure(() => specFromFlags(['true'], { ...base, profile: '1g' }, '/'));
    expect(e.code).toBe('BAD_INPUT');
    expect(e.message).toBe("--profile '1g': expected a MIG profile such as 1g.5gb");
    expect(failure(() => specFromFlags(['true'], { ...base, after: ['abc'] }, '/')).message).toBe('--after: expected a job id such as 42');
    expect(failure(() => specFromFlags(['true'], { ...base, memory: '0' }, '/')).message).toMatch(/^--memory '0': /);
    expect(failure(() => specFromFlags(['true'], { ...base, array: '5-1' }, '/')).message).toBe("--array '5-1': the range ends before it starts; write it low-high, e.g. 0-99");
    expect(failure(() => pairs(['A B=1'], '--env')).message).toContain("'A B' is not an environment variable name");
  });

  it('takes a relative --workdir from where the user is', () => {
    expect(specFromFlags(['true'], { ...base, workdir: 'runs/a' }, '/home/me')['workdir']).toBe('/home/me/runs/a');
  });
});

describe('submit FILE', () => {
  it("takes a spec file's relative workdir from the file's folder, and leaves absolute and absent ones", () => {
    expect(withWorkdirFrom({ name: 'a', command: ['true'], workdir: 'runs/a' }, '/home/me/exp/job.yaml')['workdir']).toBe('/home/me/exp/runs/a');
    expect(withWorkdirFrom({ name: 'a', command: ['true'], workdir: '.' }, '/home/me/exp/job.yaml')['workdir']).toBe('/home/me/exp');
    expect(withWorkdirFrom({ name: 'a', command: ['true'], workdir: '/srv/x' }, 'job.yaml')['workdir']).toBe('/srv/x');
    expect(withWorkdirFrom({ name: 'a', command: ['true'] }, 'job.yaml')).not.toHaveProperty('workdir');
  });
});
