import { describe, expect, it } from 'vitest';
import { FETCH_BAD_PORTS, isFetchBadPort } from './fetch-bad-ports.js';

/** Why this Node's fetch fails on 127.0.0.1:port ('bad port' before connecting, else a connect error). */
async function fetchFailure(port: number): Promise<string> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(2000) });
    await res.body?.cancel();
    return 'answered';
  } catch (e) {
    const err = e as Error & { cause?: { message?: string } };
    return err.cause?.message ?? err.message;
  }
}

describe('FETCH_BAD_PORTS', () => {
  it("is what this Node's fetch refuses: every listed port, and not the ports beside them", async () => {
    const listed = [...FETCH_BAD_PORTS];
    const failures = await Promise.all(listed.map(fetchFailure));
    expect(listed.filter((_, i) => failures[i] !== 'bad port')).toEqual([]);
    const beside = [...new Set(listed.flatMap((p) => [p - 1, p + 1]))].filter((p) => p > 0 && !FETCH_BAD_PORTS.has(p));
    const besideFailures = await Promise.all(beside.map(fetchFailure));
    expect(beside.filter((_, i) => besideFailures[i] === 'bad port')).toEqual([]);
  });

  it('leaves the ports people pick for a service alone', () => {
    expect([6000, 6667, 10080].map(isFetchBadPort)).toEqual([true, true, true]);
    expect([7070, 8080, 0, 65535].map(isFetchBadPort)).toEqual([false, false, false, false]);
  });
});
