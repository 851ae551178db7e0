import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { firstIssue, overLimit, plainWords } from './schema-words.js';

const said = (schema: z.ZodType, value: unknown): string | undefined => {
  const r = schema.safeParse(value, { error: plainWords });
  return r.success ? undefined : firstIssue(r.error.issues)?.message;
};

describe('schema words for limits', () => {
  it("names a whole number's own limit, not zod's safe-integer bound checked beside it", () => {
    expect(said(z.number().int().min(0).max(10), 1e308)).toBe('expected a number of at most 10, got 1e+308');
    expect(said(z.number().int().min(1).max(10), -1e308)).toBe('expected a number of at least 1, got -1e+308');
  });

  it('words the safe-integer bound plainly where a field has no bound of its own', () => {
    expect(said(z.number().int(), 1e308)).toBe('expected a whole number of at most 9007199254740991 (a whole number beyond it is not held exactly), got 1e+308');
    expect(said(z.number().int(), -1e308)).toBe('expected a whole number of at least -9007199254740991 (a whole number beyond it is not held exactly), got -1e+308');
  });

  it('says why a bound is there and what to do, where the schema gives the reason', () => {
    const gpus = z.number().int().max(64, { error: overLimit('GPUs', 'a job may ask for (at most 64 per job)', 'ask for 64 or fewer') });
    expect(said(gpus, 65)).toBe('65 is more GPUs than a job may ask for (at most 64 per job); ask for 64 or fewer');
    expect(said(gpus, 1e308)).toBe('1e+308 is more GPUs than a job may ask for (at most 64 per job); ask for 64 or fewer');
  });
});

describe('schema words for the keys of a mapping', () => {
  it("says what is wrong with a key in the key schema's own words, not zod's 'Invalid key in record'", () => {
    const env = z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'environment variable names are letters, digits and _'), z.string());
    expect(said(env, { 'A=B': 'c' })).toBe("'A=B' is not a valid key: environment variable names are letters, digits and _");
    expect(said(env, { '': 'c' })).toBe("'' is not a valid key: environment variable names are letters, digits and _");
    expect(said(z.record(z.string().max(3), z.string()), { toolong: 'x' })).toBe("'toolong' is not a valid key: expected text of at most 3 characters, got 'toolong'");
  });
});
