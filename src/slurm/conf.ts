/**
 * A node's GPU GRES in Slurm's files: the records (from `migpool export --format slurm` on the
 * node), the `Gres=` value, and the rewriting of its gres.conf lines and its slurm.conf `Gres=`.
 * Pure text functions.
 */
import { badInput } from '../errors.js';
import type { SlurmGres } from '../partition/export.js';
import { compressHostlist, expandHostlist } from './hostlist.js';
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

/** One config file: where it is and its text. */
export interface ConfFile {
  readonly path: string;
  readonly text: string;
}

function lineFields(line: string): { body: string; comment: string } {
  const hash = line.indexOf('#');
  return hash < 0 ? { body: line, comment: '' } : { body: line.slice(0, hash), comment: line.slice(hash) };
}

/** The value of `key=` on a config line (keys are case-insensitive in Slurm's files), or null. */
function fieldOf(line: string, key: string): string | null {
  const m = new RegExp(`(?:^|\\s)${key}=(\\S+)`, 'i').exec(lineFields(line).body);
  return m ? m[1]! : null;
}

function setField(body: string, key: string, value: string | null): string {
  const re = new RegExp(`(^|\\s)(${key})=\\S+`, 'i');
  if (re.test(body)) return value === null ? body.replace(new RegExp(`\\s*\\b${key}=\\S+`, 'i'), '') : body.replace(re, `$1$2=${value}`);
  return value === null ? body : `${body.replace(/\s+$/, '')} ${key}=${value}`;
}

/** The nodes a config line declares (`NodeName=gpu[01-04]`), or null for other lines and `DEFAULT`. */
function nodesOf(line: string, where: string): string[] | null {
  const value = /^\s*NodeName=(\S+)/i.exec(lineFields(line).body)?.[1];
  if (value === undefined || value.toUpperCase() === 'DEFAULT') return null;
  return expandHostlist(value, where);
}

/**
 * Splits `node` out of a line that declares it among other nodes: the line for the others (host
 * list refolded) and one for the node alone, with the node's own NodeHostname / NodeAddr / Port
 * where those are lists as long as NodeName's.
 */
function splitNodeLine(line: string, node: string, where: string): { others: string; own: string } {
  const { body, comment } = lineFields(line);
  const names = nodesOf(line, where)!;
  const at = names.indexOf(node);
  let others = setField(body, 'NodeName', compressHostlist(names.filter((n) => n !== node)));
  let own = setField(body, 'NodeName', node);
  for (const key of ['NodeHostname', 'NodeAddr', 'Port']) {
    const value = fieldOf(line, key);
    if (value === null) continue;
    const list = expandHostlist(value, where);
    if (list.length !== names.length) continue;
    others = setField(others, key, compressHostlist(list.filter((_, i) => i !== at)));
    own = setField(own, key, list[at]!);
  }
  return { others: `${others.replace(/\s+$/, '')}${comment ? ` ${comment}` : ''}`, own: own.replace(/\s+$/, '') };
}

/**
 * gres.conf with the node's `Name=gpu` lines replaced by `lines` (where the first was, else at the
 * end). A `Name=gpu` line for a host list that holds the node keeps the other nodes; the node gets
 * its own lines.
 */
export function rewriteGresConf(text: string, node: string, lines: readonly string[]): string {
  const out: string[] = [];
  let placed = false;
  const input = text.endsWith('\n') ? text.slice(0, -1).split('\n') : text.split('\n');
  input.forEach((line, i) => {
    const owners = nodesOf(line, `gres.conf:${i + 1}`);
    if (owners === null || !owners.includes(node) || !/(^|\s)Name=gpu(\s|$)/i.test(lineFields(line).body)) {
      out.push(line);
      return;
    }
    if (owners.length > 1) {
      if (/(^|\s)File=\S*\[/i.test(line)) {
        throw badInput(`gres.conf:${i + 1}: '${line.trim()}' gives ${node} a File= range shared with other nodes; give ${node} lines of its own so that migpool can rewrite them`);
      }
      out.push(splitNodeLine(line, node, `gres.conf:${i + 1}`).others);
    }
    if (!placed) out.push(...lines);
    placed = true;
  });
  if (!placed) out.push(...lines);
  return `${out.join('\n')}\n`;
}

/** `ClusterName=` of slurm.conf text, or null. */
export function clusterNameOf(text: string): string | null {
  for (const line of text.split('\n')) {
    const v = /^\s*ClusterName=(\S+)/i.exec(lineFields(line).body)?.[1];
    if (v !== undefined) return v;
  }
  return null;
}

/**
 * The files slurm.conf text includes: lines `Include <path>` (any case), `%c` replaced by the
 * cluster name, a relative path taken from the main file's folder (doc/man/man5/slurm.conf.5,
 * "INCLUDE MODIFIERS").
 */
export function includedPaths(text: string, confDir: string, clusterName: string | null): string[] {
  const out: string[] = [];
  for (const line of text.split('\n')) {
    const m = /^\s*include\s+(\S+)/i.exec(lineFields(line).body);
    if (!m) continue;
    let path = m[1]!;
    if (path.includes('%c')) {
      if (clusterName === null) throw badInput(`slurm.conf: 'Include ${path}' uses %c but no ClusterName= is set`);
      path = path.replaceAll('%c', clusterName);
    }
    out.push(path.startsWith('/') ? path : `${confDir.replace(/\/+$/, '')}/${path}`);
  }
  return out;
}

/**
 * slurm.conf (its files, the main one first, then those it includes) with the node's `Gres=` set to
 * the items (other GRES kept; removed when none is left). A node declared in a host list
 * (`NodeName=gpu[01-04]`) is split out onto a line of its own right after the list's. Returns only
 * the files that change.
 */
export function rewriteSlurmConfGres(files: readonly ConfFile[], node: string, items: readonly GresItem[]): ConfFile[] {
  const gres = formatGres(items);
  for (const file of files) {
    const lines = file.text.split('\n');
    const at = lines.findIndex((line, i) => nodesOf(line, `${file.path}:${i + 1}`)?.includes(node) === true);
    if (at < 0) continue;
    const where = `${file.path}:${at + 1}`;
    const line = lines[at]!;
    const many = nodesOf(line, where)!.length > 1;
    const split = many ? splitNodeLine(line, node, where) : { others: null, own: line };
    const { body, comment } = lineFields(split.own);
    // Other GRES (not gpu) on the line stay.
    const current = fieldOf(body, 'Gres');
    const others = current && current !== '(null)' ? current.split(',').filter((g) => !/^gpu(:|$)/i.test(g)) : [];
    const value = [...others, ...(gres === '' ? [] : [gres])].join(',');
    const own = `${setField(body, 'Gres', value === '' ? null : value).replace(/\s+$/, '')}${comment ? ` ${comment}` : ''}`;
    const next = split.others === null ? [own] : [split.others, own];
    return [{ path: file.path, text: [...lines.slice(0, at), ...next, ...lines.slice(at + 1)].join('\n') }];
  }
  throw badInput(`${files.map((f) => f.path).join(', ') || 'slurm.conf'}: no NodeName= line declares ${node}; add the node to slurm.conf first`);
}

/**
 * Adds `gres/gpu:<type>` for the items' types (and `gres/gpu` itself, which Slurm's docs advise
 * tracking beside typed GPUs) to `AccountingStorageTRES=` where it is set. Returns the changed files
 * and what was added (none when the option is not set: Slurm then tracks no GRES).
 */
export function addAccountingTres(files: readonly ConfFile[], items: readonly GresItem[]): { files: ConfFile[]; added: string[] } {
  for (const file of files) {
    const lines = file.text.split('\n');
    const at = lines.findIndex((l) => /^\s*AccountingStorageTRES=/i.test(lineFields(l).body));
    if (at < 0) continue;
    const current = fieldOf(lines[at]!, 'AccountingStorageTRES')!.split(',').filter((t) => t !== '');
    const have = new Set(current.map((t) => t.toLowerCase()));
    const wanted = ['gres/gpu', ...items.filter((i) => i.name === 'gpu' && i.type !== null).map((i) => `gres/gpu:${i.type}`)];
    const added = [...new Set(wanted)].filter((t) => !have.has(t.toLowerCase()));
    if (added.length === 0) return { files: [], added: [] };
    const { body, comment } = lineFields(lines[at]!);
    lines[at] = `${setField(body, 'AccountingStorageTRES', [...current, ...added].join(',')).replace(/\s+$/, '')}${comment ? ` ${comment}` : ''}`;
    return { files: [{ path: file.path, text: lines.join('\n') }], added };
  }
  return { files: [], added: [] };
}

/** The total GPU count of GRES items. */
export function gpuCount(items: readonly GresItem[]): number {
  return items.filter((i) => i.name === 'gpu').reduce((n, i) => n + i.count, 0);
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
