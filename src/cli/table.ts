/**
 * Characters a terminal acts on instead of showing: C0 controls (newline, ESC, BEL, ...), DEL and
 * C1 controls (Unicode's Cc category), and the bidirectional formatting characters (U+200E,
 * U+200F, U+202A to U+202E, U+2066 to U+2069: Unicode's UAX #9, the "Trojan Source" reordering).
 */
// eslint-disable-next-line no-control-regex -- matching control characters is this expression's job
const UNSHOWABLE = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/**
 * A cell as text a terminal shows as it is: characters it would act on are written as escapes
 * (`\n`, `\t`, `\r`, `\x1b`, `\u202e`), so that text a user submitted (a label, a workdir in a
 * reason) can neither break the table's lines nor send escape sequences to another user's
 * terminal.
 */
export function printable(cell: string): string {
  return cell.replace(UNSHOWABLE, escapeUnshowable);
}

/**
 * `text` with each character a terminal would act on written as its escape, but those `keep`
 * lets through (`at`: the character's index in `text`).
 */
export function escapeUnshowableExcept(text: string, keep: (c: string, at: number) => boolean): string {
  return text.replace(UNSHOWABLE, (c: string, at: number) => (keep(c, at) ? c : escapeUnshowable(c)));
}

/** One such character as an escape: `\n`, `\t`, `\r`, `\x1b`, `\u202e`. */
function escapeUnshowable(c: string): string {
  if (c === '\n') return '\\n';
  if (c === '\t') return '\\t';
  if (c === '\r') return '\\r';
  const code = c.charCodeAt(0);
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
}

/** Renders rows as a plain-text table with a header, columns padded to their widest cell; cells are made {@link printable}. */
export function renderTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const shown = rows.map((r) => r.map(printable));
  const widths = header.map((h, i) => Math.max(h.length, ...shown.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  return [line(header), ...shown.map(line)].join('\n');
}

/** A number, or `?` where the catalogue does not know it. */
export function orUnknown(v: number | null | undefined): string {
  return v === null || v === undefined ? '?' : String(v);
}
