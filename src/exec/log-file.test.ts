import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readLogChunk } from './log-file.js';

const dir = mkdtempSync(join(tmpdir(), 'migpool-log-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let n = 0;
function file(content: string | Buffer): string {
  const path = join(dir, `log-${++n}`);
  writeFileSync(path, content);
  return path;
}

/** Reads the whole file in chunks of `limit` bytes. */
async function chunks(path: string, limit: number): Promise<string[]> {
  const out: string[] = [];
  let offset = 0;
  for (;;) {
    const { text, nextOffset } = await readLogChunk(path, offset, limit);
    if (nextOffset === offset) return out;
    expect(text).not.toContain('\uFFFD');
    out.push(text);
    offset = nextOffset;
  }
}

describe('readLogChunk', () => {
  it('reads from a byte offset, at most limit bytes', async () => {
    const path = file('hello world\n');
    expect(await readLogChunk(path, 0, 5)).toEqual({ text: 'hello', nextOffset: 5 });
    expect(await readLogChunk(path, 6, 100)).toEqual({ text: 'world\n', nextOffset: 12 });
    expect(await readLogChunk(path, 12, 100)).toEqual({ text: '', nextOffset: 12 });
    expect(await readLogChunk(path, 50, 100)).toEqual({ text: '', nextOffset: 50 });
    expect(await readLogChunk(path, 0, 0)).toEqual({ text: '', nextOffset: 0 });
  });

  it('reads a missing file as empty', async () => {
    expect(await readLogChunk(join(dir, 'missing.log'), 0, 10)).toEqual({ text: '', nextOffset: 0 });
    expect(await readLogChunk(join(dir, 'missing.log'), 7, 10)).toEqual({ text: '', nextOffset: 7 });
  });

  it('never splits a UTF-8 character, whatever the limit', async () => {
    const text = 'a€b😀c é\n日本語';
    const path = file(text);
    for (let limit = 1; limit <= 8; limit++) {
      const parts = await chunks(path, limit);
      expect(parts.join('')).toBe(text);
    }
    expect(await readLogChunk(path, 0, 3)).toEqual({ text: 'a', nextOffset: 1 });
    // A character longer than the limit comes whole rather than never.
    expect(await readLogChunk(path, 5, 1)).toEqual({ text: '😀', nextOffset: 9 });
  });

  it('leaves a character that is still being written for the next read', async () => {
    const euro = Buffer.from('€');
    const path = file(Buffer.concat([Buffer.from('x'), euro.subarray(0, 2)]));
    expect(await readLogChunk(path, 0, 100)).toEqual({ text: 'x', nextOffset: 1 });
    expect(await readLogChunk(path, 1, 1)).toEqual({ text: '', nextOffset: 1 });
    appendFileSync(path, euro.subarray(2));
    expect(await readLogChunk(path, 1, 100)).toEqual({ text: '€', nextOffset: 4 });
  });

  it('rejects negative or fractional offsets and limits', async () => {
    await expect(readLogChunk(join(dir, 'x'), -1, 10)).rejects.toMatchObject({ code: 'BAD_INPUT' });
    await expect(readLogChunk(join(dir, 'x'), 0, 1.5)).rejects.toMatchObject({ code: 'BAD_INPUT' });
  });
});
