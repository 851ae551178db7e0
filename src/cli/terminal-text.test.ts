import { describe, expect, it } from 'vitest';
import { terminalSafe } from './terminal-text.js';

describe('terminalSafe', () => {
  it('keeps colours, newlines, tabs, carriage returns and backspaces: what training logs draw with', () => {
    const tqdm = 'epoch 1\t\x1b[32m 45%\x1b[0m|####      |\r\x1b[1;31mloss\x1b[m 0.3\b\n';
    expect(terminalSafe(tqdm)).toBe(tqdm);
  });

  it('writes every other control sequence as escapes: clipboard (OSC 52), title, clear screen, cursor moves, 8-bit CSI, BEL', () => {
    expect(terminalSafe('a\x1b]52;c;cm0gLXJmIH4K\x07b')).toBe('a\\x1b]52;c;cm0gLXJmIH4K\\x07b');
    expect(terminalSafe('\x1b]0;pwned\x1b\\')).toBe('\\x1b]0;pwned\\x1b\\');
    expect(terminalSafe('\x1b[2J\x1b[1A\x1b[Kjob ok')).toBe('\\x1b[2J\\x1b[1A\\x1b[Kjob ok');
    expect(terminalSafe('\x9b31m\x00\x7f')).toBe('\\x9b31m\\x00\\x7f');
  });
});
