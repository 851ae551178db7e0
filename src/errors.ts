/**
 * The one error class of migpool. Every error a user can cause or meet carries a stable `code`
 * (callers branch on it, the CLI maps it to an exit status) and a one-line message that says what
 * was wrong, where, and how to fix it.
 */
export type MigpoolErrorCode =
  /** Bad input from the user: an unknown GPU, profile, flag value or file content. Exit 2. */
  | 'BAD_INPUT'
  /** A check the user asked for came out negative (e.g. profiles that do not fit). Exit 1. */
  | 'CHECK_FAILED'
  /** A device or runtime failure. Exit 3. */
  | 'DEVICE'
  | 'RUNTIME';

export class MigpoolError extends Error {
  readonly code: MigpoolErrorCode;
  readonly details: Readonly<Record<string, unknown>>;

  constructor(code: MigpoolErrorCode, message: string, details: Record<string, unknown> = {}) {
    super(message);
    this.name = 'MigpoolError';
    this.code = code;
    this.details = details;
  }
}

/** Shorthand for a user-input error. */
export function badInput(message: string, details: Record<string, unknown> = {}): MigpoolError {
  return new MigpoolError('BAD_INPUT', message, details);
}

/** The process exit status the CLI uses for an error code (see DESIGN.md, Conventions). */
export function exitCodeFor(code: MigpoolErrorCode): number {
  switch (code) {
    case 'BAD_INPUT':
      return 2;
    case 'CHECK_FAILED':
      return 1;
    case 'DEVICE':
    case 'RUNTIME':
      return 3;
  }
}
