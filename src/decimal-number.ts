import { badInput } from './errors.js';

/**
 * Numbers as people type them on a command line or in a list: decimal digits, an optional
 * fraction and exponent (`2`, `0.5`, `.5`, `1e3`). Number() alone also reads `0x10` as 16, `0b11`
 * as 3, `Infinity`, and an empty or blank text as 0, which nobody means for a flag's value.
 */
const DECIMAL = /^\s*[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\s*$/;

/**
 * The value of a decimal number, NaN when `text` is not one (so that a caller's own range check,
 * which NaN fails, words the error); ±Infinity when it is too large for a double (`1e400`).
 */
export function decimalValue(text: string): number {
  return DECIMAL.test(text) ? Number(text) : NaN;
}

/**
 * A decimal number, or BAD_INPUT naming `where` and the text: `--weight '0x10' is not a number:
 * give a decimal such as 2 or 0.5`, or `--weight '1e400' is too large`.
 */
export function parseDecimal(text: string, where: string): number {
  const n = decimalValue(text);
  if (Number.isNaN(n)) throw badInput(`${where} '${text}' is not a number: give a decimal such as 2 or 0.5`);
  if (!Number.isFinite(n)) throw badInput(`${where} '${text}' is too large`);
  return n;
}
