import { badInput } from '../errors.js';
import { IDEMPOTENCY_KEY } from '../control/idempotency.js';
import type { SubmitOptions } from '../control/service-port.js';

/** The request header that carries a submission's idempotency key. */
export const IDEMPOTENCY_HEADER = 'idempotency-key';

/**
 * The submit options a request's headers ask for: its `Idempotency-Key` (absent: none). A key
 * that is not 1 to 255 printable ASCII characters is BAD_INPUT (400) naming the header.
 */
export function submitOptionsOf(headers: Readonly<Record<string, string | string[] | undefined>>): SubmitOptions {
  const raw = headers[IDEMPOTENCY_HEADER];
  if (raw === undefined) return {};
  const key = Array.isArray(raw) ? raw[0] : raw;
  if (key === undefined || !IDEMPOTENCY_KEY.test(key.trim()) || (Array.isArray(raw) && raw.length > 1)) {
    throw badInput('Idempotency-Key header: give one key of 1 to 255 printable ASCII characters (a UUID, say), the same on every retry of one submission', { path: 'Idempotency-Key' });
  }
  return { idempotencyKey: key.trim() };
}
