import { createHash, timingSafeEqual } from 'node:crypto';

/** Methods that change something (they need the token, as every read of data does). */
export const MUTATING_METHODS: ReadonlySet<string> = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * Paths anyone who reaches the port may GET: the dashboard's page and its static assets (no data:
 * the page asks for the token and sends it with every call) and the API's description, the same
 * for every installation. Everything else (jobs, their logs and env, GPUs, stats, events,
 * metrics) needs the token.
 */
export function isPublicPath(path: string): boolean {
  return path === '/' || path.startsWith('/assets/') || path === '/v1/openapi.json' || path === '/favicon.ico';
}

/** Shown in place of an environment value in API answers: secrets (API keys) never leave in full. */
export function redactedValue(value: string): string {
  return `[redacted: ${value.length} chars]`;
}

/** A job's `env` with every value redacted (names kept: they say what was set). */
export function redactEnv(env: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.entries(env).map(([k, v]) => [k, redactedValue(v)]));
}

/** The token of an `Authorization: Bearer <token>` header; undefined when there is none. */
export function bearerToken(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
  return m ? m[1] : undefined;
}

/**
 * A checker of tokens sent against one token. Both sides are hashed first so that the comparison
 * is constant-time whatever the lengths (timingSafeEqual needs equal lengths).
 */
export function tokenChecker(token: string): (sent: string) => boolean {
  if (token.length === 0) throw new Error('the service token is empty');
  const expected = createHash('sha256').update(token).digest();
  return (sent) => timingSafeEqual(createHash('sha256').update(sent).digest(), expected);
}

/** A URL with the value of any `token` query parameter replaced, for logs. */
export function redactToken(url: string): string {
  return url.replace(/([?&]token=)[^&#]*/gi, '$1[redacted]');
}
