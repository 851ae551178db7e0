import { chownSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { privateJobFolders } from './job-folders.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const mode = (p: string) => statSync(p).mode & 0o7777;

describe('privateJobFolders', () => {
  it("makes the jobs' folders of an older data dir private: jobs/ 0711, a job's folder 0700, or 0711 where its checkpoint is another account's; once", () => {
    const data = mkdtempSync(join(tmpdir(), 'migpool-job-folders-'));
    dirs.push(data);
    for (const id of ['1', '2']) mkdirSync(join(data, 'jobs', id, 'checkpoint'), { recursive: true, mode: 0o755 });
    mkdirSync(join(data, 'jobs', '3', '1'), { recursive: true, mode: 0o755 });
    // Job 2 ran as its user's account: its checkpoint folder is theirs (as root; else the service's uid stands for another).
    const root = process.getuid?.() === 0;
    if (root) chownSync(join(data, 'jobs', '2', 'checkpoint'), 65534, 65534);
    const serviceUid = root ? 0 : -1;
    expect(mode(join(data, 'jobs'))).toBe(0o755);
    expect(privateJobFolders(data, serviceUid)).toBe(4);
    expect(mode(join(data, 'jobs'))).toBe(0o711);
    expect(mode(join(data, 'jobs', '1'))).toBe(root ? 0o700 : 0o711);
    expect(mode(join(data, 'jobs', '2'))).toBe(0o711);
    expect(mode(join(data, 'jobs', '3'))).toBe(0o700);
    expect(privateJobFolders(data, serviceUid)).toBe(0);
  });

  it('does nothing on a data dir without jobs', () => {
    const data = mkdtempSync(join(tmpdir(), 'migpool-job-folders-'));
    dirs.push(data);
    expect(privateJobFolders(data)).toBe(0);
  });
});
