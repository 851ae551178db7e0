/**
 * A job's output as a terminal may show it to whoever reads it, an admin reading another user's
 * job among them: colours (SGR: `ESC [ ... m`) and the characters training logs use to draw
 * (newline, tab, carriage return, backspace) pass; every other control character, and the
 * bidirectional formatting characters, are written as escapes (`\x1b`, `\x07`, `\x9b`,
 * `\u202e`), so that the log cannot send the reader's terminal commands: set the clipboard
 * (OSC 52), retitle the window, clear the screen or move the cursor over earlier lines. `less -R` draws the same line between colours and the rest.
 */
import { escapeUnshowableExcept } from './table.js';

/** An SGR sequence (ECMA-48 8.3.117): colours and attributes only. */
// eslint-disable-next-line no-control-regex -- matching escape sequences is this expression's job
const SGR = /^\x1b\[[0-9;:]*m/;

/** Characters training logs use to draw: newline, tab, carriage return, backspace. */
const DRAWING = new Set(['\n', '\t', '\r', '\b']);

/**
 * `text` with every character a terminal acts on (table.ts: controls, and the bidirectional
 * formatting characters) written as an escape, but SGR colours, newline, tab, CR and BS.
 */
export function terminalSafe(text: string): string {
  return escapeUnshowableExcept(text, (c, at) => DRAWING.has(c) || (c === '\x1b' && SGR.test(text.slice(at, at + 64))));
}
