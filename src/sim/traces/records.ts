import { badInput } from '../../errors.js';

/** One data row of a CSV file: its cells by column name and its 1-based line number. */
export interface CsvRow {
  readonly line: number;
  readonly cells: readonly string[];
}

/** A CSV text split into its header and data rows (blank lines and `#` comment lines skipped). */
export interface CsvTable {
  readonly file: string;
  readonly header: readonly string[];
  readonly rows: readonly CsvRow[];
}

/** Splits one CSV line into cells; double-quoted cells may hold commas and `""` quotes. */
export function splitCsvLine(line: string): string[] {
  const cells: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i];
    if (quoted) {
      if (ch === '"' && line[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (ch === '"') quoted = false;
      else cell += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ',') {
      cells.push(cell.trim());
      cell = '';
    } else cell += ch;
  }
  cells.push(cell.trim());
  return cells;
}

/**
 * Reads a CSV text whose first non-blank line is the header. Column names are trimmed and
 * lower-cased. Rows with a different number of cells than the header are an error naming
 * `file:line`.
 */
export function readCsv(text: string, file: string): CsvTable {
  const lines = text.split(/\r?\n/);
  let header: string[] | null = null;
  const rows: CsvRow[] = [];
  for (const [i, raw] of lines.entries()) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const cells = splitCsvLine(line);
    if (header === null) {
      header = cells.map((c) => c.toLowerCase());
      continue;
    }
    if (cells.length !== header.length) {
      throw badInput(`${file}:${i + 1}: expected ${header.length} fields (${header.join(',')}), found ${cells.length}`);
    }
    rows.push({ line: i + 1, cells });
  }
  if (header === null) throw badInput(`${file}: empty file: expected a CSV header line`);
  return { file, header, rows };
}

/**
 * The index of each wanted column in `table`'s header; a missing required one is an error that
 * names the file and the header it expected.
 */
export function columnIndex<K extends string>(table: CsvTable, required: readonly K[], what: string): Record<K, number> {
  const index = {} as Record<K, number>;
  for (const name of required) {
    const at = table.header.indexOf(name);
    if (at < 0) throw badInput(`${table.file}:1: not ${what}: column '${name}' is missing (header: ${table.header.join(',')})`);
    index[name] = at;
  }
  return index;
}

/** The cell of `row` at `index` ('' when out of range, which readCsv rules out). */
export function cell(row: CsvRow, index: number): string {
  return row.cells[index] ?? '';
}
