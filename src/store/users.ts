import { badInput } from '../errors.js';
import { checkQuota, checkUserName, checkWeight } from '../sched/user-rules.js';
import type { Dialect } from './records.js';
import type { NewUser, UserPatch, UserRecord } from './types.js';

/**
 * The `users` table, shared by the SQLite and PostgreSQL adapters: argument checks, the SQL both
 * dialects write the same way, and decoding a row. Tokens are never stored, only their SHA-256.
 */

// The name, weight and quota rules are the simulator's too (simulate --users): one rule, beneath both.
export { checkQuota, checkUserName, checkWeight } from '../sched/user-rules.js';

/**
 * A Unix account name as useradd(8) recommends it ("[a-z_][a-z0-9_-]*[$]?", at most 32
 * characters), upper case allowed as Debian's useradd accepts it.
 */
export const UNIX_USER_NAME = /^[A-Za-z_][A-Za-z0-9_-]{0,30}\$?$/;


const TOKEN_HASH = /^[0-9a-f]{64}$/;

/** Checks a Unix account name, or null. */
export function checkUnixUser(unixUser: unknown, where = 'unix user'): string | null {
  if (unixUser === null) return null;
  if (typeof unixUser !== 'string' || !UNIX_USER_NAME.test(unixUser)) {
    throw badInput(`${where} ${JSON.stringify(unixUser)}: give a Unix account name such as alice (letters, digits, _ -; 32 characters at most)`);
  }
  return unixUser;
}

/** Checks a token hash: hex SHA-256, lower case. */
export function checkTokenHash(hash: unknown): string {
  if (typeof hash !== 'string' || !TOKEN_HASH.test(hash)) throw badInput('store: token hash must be a hex SHA-256 (64 lower-case hex digits); hash the token with hashToken');
  return hash;
}

/** A `users` row as either driver returns it. */
export interface UserRow {
  readonly name: string;
  readonly token_hash: string;
  readonly admin: number | boolean;
  readonly weight: number | string;
  readonly quota_gpus: number | string | null;
  readonly unix_user: string | null;
  readonly created_at: number | string;
}

/** The record a `users` row stands for (the hash stays in the store). */
export function userFromRow(row: UserRow): UserRecord {
  return {
    name: row.name,
    admin: Boolean(row.admin),
    weight: Number(row.weight),
    quotaGpus: row.quota_gpus === null ? null : Number(row.quota_gpus),
    unixUser: row.unix_user,
    createdAt: Number(row.created_at),
  };
}

/** `INSERT` of a checked new user, returning the row. */
export function insertUserSql(user: NewUser, tokenHash: string, now: number, d: Dialect): { sql: string; params: unknown[] } {
  const name = checkUserName(user.name);
  const params = [
    name,
    checkTokenHash(tokenHash),
    d.bool(user.admin === true),
    checkWeight(user.weight ?? 1),
    checkQuota(user.quotaGpus ?? null),
    checkUnixUser(user.unixUser ?? null),
    now,
  ];
  return {
    sql: `INSERT INTO users (name, token_hash, admin, weight, quota_gpus, unix_user, created_at) VALUES (${params.map((_, i) => d.param(i + 1)).join(', ')}) RETURNING *`,
    params,
  };
}

/** `UPDATE` of a checked patch, returning the row; null when the patch changes nothing. */
export function updateUserSql(name: string, patch: UserPatch, d: Dialect): { sql: string; params: unknown[] } | null {
  const params: unknown[] = [];
  const bind = (v: unknown): string => {
    params.push(v);
    return d.param(params.length);
  };
  const sets: string[] = [];
  if (patch.admin !== undefined) {
    if (typeof patch.admin !== 'boolean') throw badInput(`store: updateUser: admin must be true or false, got ${JSON.stringify(patch.admin)}`);
    sets.push(`admin = ${bind(d.bool(patch.admin))}`);
  }
  if (patch.weight !== undefined) sets.push(`weight = ${bind(checkWeight(patch.weight))}`);
  if (patch.quotaGpus !== undefined) sets.push(`quota_gpus = ${bind(checkQuota(patch.quotaGpus))}`);
  if (patch.unixUser !== undefined) sets.push(`unix_user = ${bind(checkUnixUser(patch.unixUser))}`);
  if (patch.tokenHash !== undefined) sets.push(`token_hash = ${bind(checkTokenHash(patch.tokenHash))}`);
  if (sets.length === 0) return null;
  return { sql: `UPDATE users SET ${sets.join(', ')} WHERE name = ${bind(name)} RETURNING *`, params };
}

/** The error for a name already taken (a unique-key refusal). */
export function userExists(name: string): Error {
  return badInput(`user ${JSON.stringify(name)} already exists: choose another name, or \`migpool users rotate ${name}\` for a new token`);
}
