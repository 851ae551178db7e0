/** Renders rows as a plain-text table with a header, columns padded to their widest cell. */
export function renderTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

/** A number, or `?` where the catalogue does not know it. */
export function orUnknown(v: number | null | undefined): string {
  return v === null || v === undefined ? '?' : String(v);
}
