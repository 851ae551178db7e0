/** Reading a job's log files in chunks, e.g. for `GET /jobs/:id/logs?offset=` and `migpool logs --follow`. */
import { open } from 'node:fs/promises';
import { badInput } from '../errors.js';

/** Bytes in the UTF-8 sequence that `lead` starts, or 0 when `lead` does not start one. */
function sequenceLength(lead: number): number {
  if (lead < 0x80) return 1;
  if (lead >= 0xc2 && lead <= 0xdf) return 2;
  if (lead >= 0xe0 && lead <= 0xef) return 3;
  if (lead >= 0xf0 && lead <= 0xf4) return 4;
  return 0;
}

const isContinuation = (byte: number | undefined): boolean => byte !== undefined && (byte & 0xc0) === 0x80;

/**
 * Where to cut `bytes` (the `n` bytes read, possibly more than wanted) so that the chunk ends on
 * a character boundary, at most `limit` bytes in.
 */
function cutAt(bytes: Buffer, n: number, limit: number): number {
  let end = Math.min(n, limit);
  if (end < n) {
    // More bytes follow: back off while the next byte continues a character.
    let steps = 0;
    while (end > 0 && steps < 3 && isContinuation(bytes[end])) {
      end--;
      steps++;
    }
  } else {
    // Up to the end of the file: the last character may still be being written.
    let start = end - 1;
    while (start > 0 && end - start < 4 && isContinuation(bytes[start])) start--;
    const length = sequenceLength(bytes[start] ?? 0);
    if (length > 0 && start + length > end) end = start;
  }
  if (end === 0 && n > 0 && limit > 0) {
    // `limit` is smaller than the first character: return that character whole rather than nothing.
    const length = sequenceLength(bytes[0] ?? 0);
    end = length === 0 ? 1 : length <= n ? length : 0;
  }
  return end;
}

/**
 * Reads up to `limit` bytes of a text file from byte `offset`, ending on a UTF-8 character
 * boundary (a character cut by the limit, or not yet completely written, is left for the next
 * chunk; a single character longer than `limit` is returned whole). A missing file reads as
 * empty. Read on from `nextOffset`; it equals `offset` when nothing new was there.
 */
export async function readLogChunk(path: string, offset: number, limit: number): Promise<{ text: string; nextOffset: number }> {
  if (!Number.isSafeInteger(offset) || offset < 0) throw badInput(`log offset ${offset} must be a whole number of bytes >= 0`);
  if (!Number.isSafeInteger(limit) || limit < 0) throw badInput(`log limit ${limit} must be a whole number of bytes >= 0`);
  if (limit === 0) return { text: '', nextOffset: offset };
  let handle;
  try {
    handle = await open(path, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { text: '', nextOffset: offset };
    throw error;
  }
  try {
    const bytes = Buffer.alloc(limit + 3);
    const { bytesRead } = await handle.read(bytes, 0, bytes.length, offset);
    const end = cutAt(bytes, bytesRead, limit);
    return { text: bytes.toString('utf8', 0, end), nextOffset: offset + end };
  } finally {
    await handle.close();
  }
}
