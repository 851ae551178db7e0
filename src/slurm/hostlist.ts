/**
 * Slurm host lists as slurm.conf and gres.conf write them: `gpu[01-04,07]`, `a,b`,
 * `rack[1-2]-n[1-3]`, `[6818-6819]` (a Port list). Pure.
 */
import { badInput } from '../errors.js';

function splitTop(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of text) {
    if (ch === '[') depth += 1;
    if (ch === ']') depth -= 1;
    if (ch === ',' && depth === 0) {
      parts.push(current);
      current = '';
    } else current += ch;
  }
  parts.push(current);
  return parts.filter((p) => p !== '');
}

function expandOne(name: string, where: string): string[] {
  const open = name.indexOf('[');
  if (open < 0) return [name];
  const close = name.indexOf(']', open);
  if (close < 0) throw badInput(`${where}: '${name}' has '[' without ']'`);
  const head = name.slice(0, open);
  const tails = expandOne(name.slice(close + 1), where);
  const out: string[] = [];
  for (const item of name.slice(open + 1, close).split(',')) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(item.trim());
    if (!m) throw badInput(`${where}: '${item}' in '${name}' is not a number or a range such as 01-04`);
    const from = Number(m[1]);
    const to = m[2] === undefined ? from : Number(m[2]);
    if (to < from || to - from > 100_000) throw badInput(`${where}: range '${item}' in '${name}' runs backwards or is too long`);
    const width = m[1]!.length;
    for (let n = from; n <= to; n += 1) for (const t of tails) out.push(`${head}${String(n).padStart(width, '0')}${t}`);
  }
  return out;
}

/** Every name of a host list, in order (`gpu[01-02],x` -> gpu01, gpu02, x). */
export function expandHostlist(text: string, where = 'host list'): string[] {
  return splitTop(text.trim()).flatMap((p) => expandOne(p, where));
}

/** A host list for the names, runs of numbers folded (`gpu01, gpu02, gpu04` -> `gpu[01-02,04]`). */
export function compressHostlist(names: readonly string[]): string {
  const groups = new Map<string, { head: string; tail: string; width: number; numbers: number[] } | string>();
  for (const name of names) {
    const m = /^(.*?)(\d+)(\D*)$/.exec(name);
    if (!m) {
      groups.set(`=${name}`, name);
      continue;
    }
    const key = `${m[1]}\u0000${m[3]}\u0000${m[2]!.length}`;
    const g = groups.get(key);
    if (g === undefined || typeof g === 'string') groups.set(key, { head: m[1]!, tail: m[3]!, width: m[2]!.length, numbers: [Number(m[2])] });
    else g.numbers.push(Number(m[2]));
  }
  return [...groups.values()]
    .map((g) => {
      if (typeof g === 'string') return g;
      const pad = (n: number) => String(n).padStart(g.width, '0');
      if (g.numbers.length === 1) return `${g.head}${pad(g.numbers[0]!)}${g.tail}`;
      const sorted = [...new Set(g.numbers)].sort((a, b) => a - b);
      const runs: string[] = [];
      for (let i = 0; i < sorted.length; ) {
        let j = i;
        while (j + 1 < sorted.length && sorted[j + 1] === sorted[j]! + 1) j += 1;
        runs.push(i === j ? pad(sorted[i]!) : `${pad(sorted[i]!)}-${pad(sorted[j]!)}`);
        i = j + 1;
      }
      return `${g.head}[${runs.join(',')}]${g.tail}`;
    })
    .join(',');
}
