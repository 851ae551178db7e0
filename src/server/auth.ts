import { createHash, timingSafeEqual } from 'node:crypto';

/** Methods that change something and therefore need the bearer token. */
export const MUTATING_METHODS: ReadonlySet<string> = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * A checker for `Authorization: Bearer <token>` headers. Both sides are hashed first so that the
 * comparison is constant-time whatever the lengths (timingSafeEqual needs equal lengths).
 */
export function bearerChecker(token: string): (header: string | undefined) => boolean {
  if (token.length === 0) throw new Error('the service token is empty');
  const expected = createHash('sha256').update(token).digest();
  return (header) => {
    if (header === undefined) return false;
    const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
    if (!m) return false;
    return timingSafeEqual(createHash('sha256').update(m[1]!).digest(), expected);
  };
}

/** A URL with the value of any `token` query parameter replaced, for logs. */
export function redactToken(url: string): string {
  return url.replace(/([?&]token=)[^&#]*/gi, '$1[redacted]');
}
