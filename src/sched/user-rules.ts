import { badInput } from '../errors.js';

/**
 * What a user of the pool may be called, one rule for every place that names users: the service's
 * store (`migpool users add`, job owners) and the simulator's `--users`. Here, beneath both, since
 * sim/ may not import store/.
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
