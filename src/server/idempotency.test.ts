import { describe, expect, it } from 'vitest';
import { MigpoolError } from '../errors.js';
import { submitOptionsOf } from './idempotency.js';

describe('the Idempotency-Key header', () => {
  it('is optional, and trimmed when given', () => {
    expect(submitOptionsOf({})).toEqual({});
    expect(submitOptionsOf({ 'idempotency-key': ' 8e0f5c1a-key ' })).toEqual({ idempotencyKey: '8e0f5c1a-key' });
  });

  it('refuses an empty, too long, non-ASCII or repeated key with one line naming the header', () => {
    for (const bad of ['', 'a'.repeat(256), 'clé', 'two words', ['a', 'b']]) {
      let e: unknown;
      try {
        submitOptionsOf({ 'idempotency-key': bad });
      } catch (err) {
        e = err;
      }
      expect(e).toBeInstanceOf(MigpoolError);
      expect((e as MigpoolError).code).toBe('BAD_INPUT');
      expect((e as MigpoolError).message).toMatch(/^Idempotency-Key header: give one key of 1 to 255 printable ASCII characters/);
    }
  });
});

