import { describe, expect, it } from 'vitest';
import { checkDatabaseUrl, hidePasswordFromPs, withoutPassword } from './database-option.js';

describe('withoutPassword', () => {
  it('writes a URL password as *** and leaves the rest', () => {
    expect(withoutPassword('postgres://ml:s3cret@db.example:5432/migpool')).toBe('postgres://ml:***@db.example:5432/migpool');
    expect(withoutPassword('postgres://ml@db.example/migpool')).toBe('postgres://ml@db.example/migpool');
    expect(withoutPassword('not a url')).toBe('not a url');
  });
});

describe('hidePasswordFromPs', () => {
  const url = 'postgres://ml:s3cret@db/migpool';
  it('retitles the process without the password and warns, when the password is on the command line', () => {
    const titles: string[] = [];
    const warning = hidePasswordFromPs(url, 'serve', ['node', 'migpool', 'serve', '--database', url], (t) => titles.push(t));
    expect(titles).toEqual(['migpool serve --database postgres://ml:***@db/migpool']);
    expect(warning).toMatch(/ps.*PGPASSWORD.*MIGPOOL_DATABASE/);
    const joined: string[] = [];
    hidePasswordFromPs(url, 'users', ['node', 'migpool', 'users', 'list', `--database=${url}`], (t) => joined.push(t));
    expect(joined).toHaveLength(1);
  });
  it('leaves the title alone when the URL came from the environment or has no password', () => {
    const titles: string[] = [];
    expect(hidePasswordFromPs(url, 'serve', ['node', 'migpool', 'serve'], (t) => titles.push(t))).toBeNull();
    expect(hidePasswordFromPs('postgres://ml@db/migpool', 'serve', ['node', 'migpool', 'serve', '--database', 'postgres://ml@db/migpool'], (t) => titles.push(t))).toBeNull();
    expect(hidePasswordFromPs(undefined, 'serve', [], (t) => titles.push(t))).toBeNull();
    expect(titles).toEqual([]);
  });
});

describe('checkDatabaseUrl', () => {
  it('names --database when the URL was typed, and $MIGPOOL_DATABASE when it came from there', () => {
    expect(() => checkDatabaseUrl('mysql://ml:pw@db/x', ['node', 'migpool', 'serve', '--database', 'mysql://ml:pw@db/x'])).toThrow(
      /^--database mysql:\/\/ml:\*\*\*@db\/x: only postgres:\/\/ and postgresql:\/\/ URLs are accepted; fix it, or leave --database out/,
    );
    expect(() => checkDatabaseUrl('junk', ['node', 'migpool', 'serve', '--database=junk'])).toThrow(/^--database junk:/);
    expect(() => checkDatabaseUrl('junk', ['node', 'migpool', 'serve'])).toThrow(/^\$MIGPOOL_DATABASE is junk: .*unset MIGPOOL_DATABASE to use SQLite/);
  });
  it('lets PostgreSQL URLs and no URL through', () => {
    expect(() => checkDatabaseUrl('postgres://ml@db/x', [])).not.toThrow();
    expect(() => checkDatabaseUrl('POSTGRESQL://ml@db/x', [])).not.toThrow();
    expect(() => checkDatabaseUrl(undefined, [])).not.toThrow();
  });
});
