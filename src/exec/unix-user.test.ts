import { describe, expect, it } from 'vitest';
import { lookupUnixUser, parsePasswdLine } from './unix-user.js';

describe('Unix accounts', () => {
  it('reads passwd(5) lines', () => {
    expect(parsePasswdLine('alice:x:1001:1002:Alice,,,:/home/alice:/bin/bash')).toEqual({ name: 'alice', uid: 1001, gid: 1002, home: '/home/alice' });
    for (const bad of ['', 'alice:x:1001', 'alice:x:abc:1:g:/h:/s', ':x:1:1:g:/h:/s', 'a:x:-1:1:g:/h:/s']) expect(parsePasswdLine(bad)).toBeNull();
  });

  it('looks accounts up in the system user database', async () => {
    expect(await lookupUnixUser('root')).toMatchObject({ name: 'root', uid: 0, gid: 0 });
    expect(await lookupUnixUser('no-such-account-migpool')).toBeNull();
  });
});
