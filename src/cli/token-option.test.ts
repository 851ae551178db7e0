import { describe, expect, it } from 'vitest';
import { hideTokenFromPs } from './token-option.js';

describe('hideTokenFromPs', () => {
  it('retitles the process with the token written as *** where the arguments hold it, in either spelling', () => {
    const titles: string[] = [];
    const retitle = (t: string) => void titles.push(t);
    expect(hideTokenFromPs('t0k', ['node', '/x/bin/migpool.js', 'logs', '12', '-f', '--token', 't0k'], retitle)).toBe(true);
    expect(hideTokenFromPs('t0k', ['node', '/x/bin/migpool.js', 'jobs', '--token=t0k'], retitle)).toBe(true);
    expect(titles).toEqual(['migpool logs 12 -f --token ***', 'migpool jobs --token=***']);
  });

  it('leaves the title alone when the token is not among the arguments ($MIGPOOL_TOKEN, or the CLI inside another program)', () => {
    const titles: string[] = [];
    expect(hideTokenFromPs('t0k', ['node', 'vitest', 'run'], (t) => void titles.push(t))).toBe(false);
    expect(titles).toEqual([]);
  });
});
