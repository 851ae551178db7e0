/**
 * A node's GPU GRES in Slurm's files: the records (from `migpool export --format slurm` on the
 * node), the `Gres=` value, and the rewriting of its gres.conf lines and its slurm.conf `Gres=`.
 * Pure text functions.
 */
import { badInput } from '../errors.js';
import type { SlurmGres } from '../partition/export.js';
import { formatGres, type GresItem } from './parse.js';

/** The GPU GRES items of a node: typed as the site names them (profile or nvml), whole GPUs untyped under profile naming. */
export function gresItems(records: readonly SlurmGres[], naming: 'profile' | 'nvml'): GresItem[] {
  const totals = new Map<string, number>();
  for (const r of records) {
    const type = naming === 'nvml' ? r.type : r.profile === null ? '' : r.profile.replace(/^\d+c\./, '').replace(/\+.*$/, '');
    totals.set(type, (totals.get(type) ?? 0) + r.count);
  }
  return [...totals].map(([type, count]) => ({ name: 'gpu', type: type === '' ? null : type, count }));
}

/** gres.conf lines of a node, one device per line, `File=` from the `{n}` template (n counts from 0). */
export function gresConfLines(node: string, items: readonly GresItem[], devices: string): string[] {
  const lines: string[] = [];
  let n = 0;
  for (const item of items) {
    for (let i = 0; i < item.count; i += 1) {
      const file = devices.replaceAll('{n}', String(n));
      lines.push(`NodeName=${node} Name=gpu${item.type === null ? '' : ` Type=${item.type}`} File=${file}`);
      n += 1;
    }
  }
  return lines;
}

function nodeNameOf(line: string): string | null {
  return /^\s*NodeName=(\S+)/.exec(line)?.[1] ?? null;
}

/** gres.conf with the node's `Name=gpu` lines replaced by `lines` (where the first was, else at the end). */
export function rewriteGresConf(text: string, node: string, lines: readonly string[]): string {
  const out: string[] = [];
  let placed = false;
  const input = text.endsWith('\n') ? text.slice(0, -1).split('\n') : text.split('\n');
  for (const line of input) {
    const owner = nodeNameOf(line);
    if (owner !== null && owner !== node && owner.split(',').includes(node)) {
      throw badInput(`gres.conf: '${line.trim()}' names ${node} among other nodes; give ${node} lines of its own so that migpool can rewrite them`);
    }
    if (owner === node && /\bName=gpu\b/.test(line)) {
      if (!placed) out.push(...lines);
      placed = true;
      continue;
    }
    out.push(line);
  }
  if (!placed) out.push(...lines);
  return `${out.join('\n')}\n`;
}

/** slurm.conf with the node's `Gres=` set to the items (removed when there are none). */
export function rewriteSlurmConfGres(text: string, node: string, items: readonly GresItem[]): string {
  const gres = formatGres(items);
  let found = false;
  const lines = text.split('\n').map((line) => {
    const owner = nodeNameOf(line);
    if (owner === null) return line;
    if (owner !== node) {
      if (owner.split(',').includes(node) || (owner.includes('[') && owner.startsWith(node.replace(/\d+$/, '')))) {
        throw badInput(`slurm.conf: '${line.trim().slice(0, 60)}' may declare ${node} with other nodes; give ${node} a NodeName= line of its own so that migpool can set its Gres=`);
      }
      return line;
    }
    found = true;
    // Other GRES (not gpu) on the line stay.
    const current = /\bGres=(\S+)/.exec(line)?.[1];
    const others = current ? current.split(',').filter((g) => !/^gpu(:|$)/.test(g)) : [];
    const value = [...others, ...(gres === '' ? [] : [gres])].join(',');
    if (current !== undefined) return value === '' ? line.replace(/\s*\bGres=\S+/, '') : line.replace(/\bGres=\S+/, `Gres=${value}`);
    return value === '' ? line : `${line.replace(/\s+$/, '')} Gres=${value}`;
  });
  if (!found) throw badInput(`slurm.conf has no NodeName=${node} line; add the node to slurm.conf first`);
  return lines.join('\n');
}

/** Whether Slurm's view of a node's GPU GRES matches the items (same totals per type). */
export function sameGres(a: readonly GresItem[], b: readonly GresItem[]): boolean {
  const key = (items: readonly GresItem[]) => {
    const m = new Map<string, number>();
    for (const i of items.filter((x) => x.name === 'gpu')) m.set(i.type ?? '', (m.get(i.type ?? '') ?? 0) + i.count);
    return [...m]
      .filter(([, n]) => n > 0)
      .map(([t, n]) => `${t}:${n}`)
      .sort()
      .join(',');
  };
  return key(a) === key(b);
}
