/**
 * A job's output as a terminal may show it to whoever reads it, an admin reading another user's
 * job among them: colours (SGR: `ESC [ ... m`) and the characters training logs use to draw
 * (newline, tab, carriage return, backspace) pass; every other control character is written as
 * an escape (`\x1b`, `\x07`, `\x9b`), so that the log cannot send the reader's terminal commands:
 * set the clipboard (OSC 52), retitle the window, clear the screen or move the cursor over
 * earlier lines. `less -R` draws the same line between colours and the rest.
 */

/** An SGR sequence (ECMA-48 8.3.117): colours and attributes only. */
// eslint-disable-next-line no-control-regex -- matching escape sequences is this expression's job
const SGR = /^\x1b\[[0-9;:]*m/;

/** C0 controls but newline, tab, carriage return and backspace; DEL; C1 controls (8-bit CSI, OSC, DCS...). */
// eslint-disable-next-line no-control-regex -- matching control characters is this expression's job
const CONTROL = /[\x00-\x07\x0b\x0c\x0e-\x1f\x7f-\x9f]/g;

/** `text` with every control character but SGR colours, newline, tab, CR and BS written as an escape. */
export function terminalSafe(text: string): string {
  return text.replace(CONTROL, (c, at: number) => {
    if (c === '\x1b' && SGR.test(text.slice(at, at + 64))) return c;
    return `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`;
  });
}
