import type { z } from 'zod';

/**
 * Schema problems in plain words, for files and specs users write. Pass `plainWords` as the error
 * map of a parse (`schema.safeParse(value, { error: plainWords })`): a message the schema gives
 * itself still wins (zod takes a schema's own message over the parse's map), the rest say what was
 * expected and what was found (`expected a number greater than 0, got -3`) instead of zod's
 * wording (`Too small: expected number to be >0`). `fieldPath` names the field as a user would
 * write it: `points[2].iterationMs`.
 */

/** What a zod type name stands for, as a user reads it. */
const KIND_WORDS: Readonly<Record<string, string>> = {
  number: 'a number',
  int: 'a whole number',
  string: 'text',
  boolean: 'true or false',
  array: 'a list',
  object: 'a mapping (field: value)',
  record: 'a mapping (field: value)',
  null: 'null',
};

function kindWords(expected: string): string {
  return KIND_WORDS[expected] ?? expected;
}

/** A value as the user wrote it, shortened. */
function shown(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  const text = typeof value === 'string' ? `'${value}'` : String(value);
  return text.length > 40 ? `${text.slice(0, 37)}...` : text;
}

/** What a size bound means for the kind of value it bounds. */
function boundWords(issue: { origin: string; inclusive?: boolean }, bound: number | bigint, side: 'least' | 'most'): string {
  const n = String(bound);
  switch (issue.origin) {
    case 'string':
      if (side === 'least' && n === '1') return 'text, not empty';
      return `text of at ${side} ${n} characters`;
    case 'array':
    case 'set':
      return `a list of at ${side} ${n} item${n === '1' ? '' : 's'}`;
    default:
      if (issue.inclusive === false) return `a number ${side === 'least' ? 'greater' : 'less'} than ${n}`;
      return `a number of at ${side} ${n}`;
  }
}

/**
 * A bound that says why, for a schema's own message where plainWords would give only the number:
 * `.max(64, { error: overLimit('GPUs', 'a job may ask for (at most 64 per job)', 'ask for 64 or fewer') })`
 * says `1e+308 is more GPUs than a job may ask for (at most 64 per job); ask for 64 or fewer`.
 */
export function overLimit(what: string, limit: string, fix: string): (issue: { readonly input?: unknown }) => string {
  return (issue) => `${shown(issue.input)} is more ${what} than ${limit}; ${fix}`;
}

/**
 * zod's own bound on whole numbers (`.int()`): the safe integers, ±(2^53 - 1), the largest whole
 * numbers a JavaScript (and JSON) number holds exactly (ECMAScript's Number.MAX_SAFE_INTEGER). A
 * field with a smaller bound of its own says that one; this one is worded for fields without.
 */
function safeIntegerWords(side: 'least' | 'most', got: unknown): string {
  const bound = side === 'most' ? Number.MAX_SAFE_INTEGER : Number.MIN_SAFE_INTEGER;
  return `expected a whole number of at ${side} ${bound} (a whole number beyond it is not held exactly), got ${shown(got)}`;
}

/** The zod error map that words an issue plainly (see the module comment); undefined leaves zod's. */
export const plainWords: z.core.$ZodErrorMap = (issue) => {
  const got = 'input' in issue ? issue.input : undefined;
  switch (issue.code) {
    case 'invalid_type':
      if (got === undefined) return `missing: give ${kindWords(issue.expected)}`;
      return `expected ${kindWords(issue.expected)}, got ${shown(got)}`;
    case 'too_small':
      if (issue.origin === 'int' && issue.minimum === Number.MIN_SAFE_INTEGER) return safeIntegerWords('least', got);
      return `expected ${boundWords(issue, issue.minimum, 'least')}, got ${shown(got)}`;
    case 'too_big':
      if (issue.origin === 'int' && issue.maximum === Number.MAX_SAFE_INTEGER) return safeIntegerWords('most', got);
      return `expected ${boundWords(issue, issue.maximum, 'most')}, got ${shown(got)}`;
    case 'invalid_value':
      return `expected ${issue.values.map((v) => String(v)).join(' or ')}, got ${shown(got)}`;
    case 'invalid_key': {
      // A record's key that its key schema refused: that schema's own words (zod's default says only 'Invalid key in record').
      const inner = issue.issues[0]?.message;
      return inner === undefined ? undefined : `${shown(got)} is not a valid key: ${inner}`;
    }
    case 'unrecognized_keys':
      return `unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `'${k}'`).join(', ')}: remove ${issue.keys.length > 1 ? 'them' : 'it'} or check the spelling`;
    default:
      return undefined;
  }
};

/**
 * The issue to tell a user of a failed parse: the first, except that zod's safe-integer bound on a
 * whole number (`.int()`, checked beside the field's own bounds) yields to another issue of the
 * same field, so that `retries: 1e308` hears the field's limit (10), not 9007199254740991.
 */
export function firstIssue<T extends { readonly code: string; readonly path: readonly PropertyKey[]; readonly origin?: string }>(issues: readonly T[]): T | undefined {
  const safeBound = (i: T) => (i.code === 'too_big' || i.code === 'too_small') && i.origin === 'int' && isSafeBound(i);
  const first = issues[0];
  if (first === undefined || !safeBound(first)) return first;
  const same = (i: T) => i.path.length === first.path.length && i.path.every((k, n) => k === first.path[n]);
  return issues.find((i) => i !== first && same(i) && !safeBound(i)) ?? first;
}

function isSafeBound(issue: object): boolean {
  const bound = (issue as { maximum?: unknown; minimum?: unknown }).maximum ?? (issue as { minimum?: unknown }).minimum;
  return bound === Number.MAX_SAFE_INTEGER || bound === Number.MIN_SAFE_INTEGER;
}

/** A field path as a user writes it: `points[2].iterationMs`; `the file` when empty. */
export function fieldPath(path: readonly PropertyKey[], whole = 'the file'): string {
  let out = '';
  for (const key of path) out += typeof key === 'number' ? `[${key}]` : `${out === '' ? '' : '.'}${String(key)}`;
  return out === '' ? whole : out;
}
