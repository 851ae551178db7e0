import { describe, expect, it } from 'vitest';
import { printable, renderTable } from './table.js';

describe('tables', () => {
  it('show what a user submitted as text: no escape sequence reaches the terminal and no cell breaks its line', () => {
    const out = renderTable(['ID', 'LABELS'], [['13', 'k=\u001b[2Jclear\nx'], ['14', 'team=\u202eevil\u0007']]);
    expect(out).toBe(['ID  LABELS', '13  k=\\x1b[2Jclear\\nx', '14  team=\\u202eevil\\x07'].join('\n'));
    const acted = [...out].filter((c) => c !== '\n' && (c.charCodeAt(0) < 0x20 || (c.charCodeAt(0) >= 0x7f && c.charCodeAt(0) <= 0x9f) || c === '\u202e'));
    expect(acted).toEqual([]);
  });

  it('leave other text as it is, accents and emoji included', () => {
    expect(printable('héllo 🚀 名前')).toBe('héllo 🚀 名前');
    expect(printable('a\tb\rc\u009bd\u2066')).toBe('a\\tb\\rc\\x9bd\\u2066');
  });
});
