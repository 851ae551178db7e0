import { badInput } from '../errors.js';

/**
 * What a user of the pool may be called and the share they may be given, one rule for every place
 * that names users: the service's store (`migpool users add|set`, job owners) and the simulator's
 * `--users`. Here, beneath both, since sim/ may not import store/.
 */

/** A user name: a letter, then letters, digits, `_ . -`; 64 characters at most. */
export const USER_NAME = /^[A-Za-z][A-Za-z0-9_.-]{0,63}$/;

/** Checks a user name (BAD_INPUT naming `where` and the rule). */
export function checkUserName(name: unknown, where = 'user name'): string {
  if (typeof name !== 'string' || !USER_NAME.test(name)) {
    throw badInput(`${where} ${JSON.stringify(name)}: use a letter, then letters, digits, _ . - (64 characters at most)`);
  }
  return name;
}

/** Largest weight accepted: a million times the default share is already "everything". */
export const MAX_WEIGHT = 1e6;
/** Largest quota accepted, in GPUs: far beyond any one pool, catches a slip of the unit. */
export const MAX_QUOTA_GPUS = 1e6;

/** Checks a weight: a positive number up to a million (BAD_INPUT naming `where`; a huge one is "too large"). */
export function checkWeight(weight: unknown, where = 'weight'): number {
  const rule = `give a positive number (1 is the default share; 2 is twice that) up to ${MAX_WEIGHT}`;
  if (typeof weight === 'number' && weight > MAX_WEIGHT) throw badInput(`${where} ${String(weight)} is too large: ${rule}`);
  if (typeof weight !== 'number' || !Number.isFinite(weight) || weight <= 0) throw badInput(`${where} ${JSON.stringify(weight)}: ${rule}`);
  return weight;
}

/** Checks a quota in GPUs (fractions allowed: a 3g slice of an A100 is 3/7 GPU), or null. */
export function checkQuota(quota: unknown, where = 'quota'): number | null {
  if (quota === null) return null;
  const rule = `give a number of GPUs, 0 or more (fractions allowed, e.g. 0.5) up to ${MAX_QUOTA_GPUS}, or no quota`;
  if (typeof quota === 'number' && quota > MAX_QUOTA_GPUS) throw badInput(`${where} ${String(quota)} is too large: ${rule}`);
  if (typeof quota !== 'number' || !Number.isFinite(quota) || quota < 0) throw badInput(`${where} ${JSON.stringify(quota)}: ${rule}`);
  return quota;
}
