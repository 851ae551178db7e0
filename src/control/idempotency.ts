import { createHash } from 'node:crypto';

/**
 * Idempotent submission: a client sends an `Idempotency-Key` header with POST /v1/jobs (and
 * /v1/jobs/batch), and a retry of the same request under the same key (the answer was lost, the
 * client timed out) returns the jobs the first one queued instead of queueing them again. The
 * header follows the IETF draft "The Idempotency-Key HTTP Header Field"
 * (draft-ietf-httpapi-idempotency-key-header): a key reused with a different body is refused
 * with 422, as its "Error Scenarios" section says a server SHOULD (the store keeps the keys).
 */

/** Printable ASCII, 1 to 255 characters: what the header may carry (a UUID is typical). */
export const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/** The digest a key is stored with: a SHA-256 of the submitted JSON, to tell a retry from a different request. */
export function fingerprintOf(inputs: readonly unknown[]): string {
  return createHash('sha256').update(JSON.stringify(inputs)).digest('hex');
}
