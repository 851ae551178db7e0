/**
 * NVIDIA mig-parted's v1 config file (`version: v1`, `mig-configs: {name: [entry, ...]}`), read
 * as mig-parted reads it, and the rules by which its entries select GPUs. Pure: the caller reads
 * the file and hands the text over.
 *
 * Sources (github.com/NVIDIA/mig-parted unless said): api/spec/v1/spec.go (fields, required
 * fields, rejections), api/spec/v1/helpers.go (devices / device-filter matching),
 * pkg/types/device.go (device IDs with an optional `:subsystem` part), pkg/types/mig_config.go
 * (counts), go-nvlib pkg/nvlib/device/mig_profile.go (profile-name syntax, which mig-parted's
 * pkg/types/mig_profile.go delegates to), cmd/nvidia-mig-parted/assert/assert.go (config
 * selection, the walk of entries over GPUs), cmd/nvidia-mig-parted/apply/{mode,config}.go
 * (non-MIG-capable GPUs).
 *
 * mig-parted decodes YAML with sigs.k8s.io/yaml (go-yaml v2, YAML 1.1), so this reader uses the
 * YAML 1.1 schema too: `mig-enabled: yes` is true and an unquoted `0x20B010DE` is a number.
 *
 * Deliberately stricter than mig-parted (each of these is accepted by mig-parted but can only
 * be a mistake): an empty file; duplicate keys (go-yaml keeps the last one); `mig-enabled: null`
 * (Go reads false); `null` in a `devices` list (Go reads 0); a null profile count (Go reads 0);
 * a `device-filter` string that is not a PCI device ID (mig-parted ignores the parse error and
 * the entry silently never matches).
 */
import { isAlias, isMap, isScalar, isSeq, LineCounter, parseDocument } from 'yaml';
import type { Document } from 'yaml';
import { firstDuplicateKey } from '../yaml-keys.js';
import { badInput, MigpoolError } from '../errors.js';

/** One entry of a named config: which GPUs it selects and what it wants on them. */
export interface MigConfigEntry {
  /**
   * `all`, or GPU indices (as mig-parted numbers GPUs: PCI order, as nvidia-smi does). Strings
   * are GPU UUIDs (`GPU-...`), a migpool extension that mig-parted itself rejects.
   */
  devices: 'all' | Array<number | string>;
  /**
   * PCI device IDs (`0x20B010DE`, optionally `0x20B010DE:0x145F10DE` with the subsystem ID) as
   * written; a single string is given as a one-element list. null: no filter (also for an empty
   * string or an empty list, which mig-parted treats as no filter).
   */
  deviceFilter: string[] | null;
  migEnabled: boolean;
  /** Profile name to count, as written (zero counts kept; mig-parted ignores them). */
  migDevices: Record<string, number>;
  /** 1-based line of the entry in the file. */
  line: number;
}

/** A parsed config file; `configs` keeps file order. */
export interface MigPartedConfig {
  file: string;
  version: 'v1';
  configs: Map<string, MigConfigEntry[]>;
}

// ---------------------------------------------------------------------------------------------
// A small view of a YAML document: maps, lists and scalars with their line numbers, aliases and
// `<<` merge keys resolved. Shared with hooks.ts.

export type YamlNode = YamlMapNode | YamlSeqNode | YamlScalarNode;
export interface YamlMapNode {
  kind: 'map';
  line: number;
  pairs: YamlPair[];
}
export interface YamlPair {
  /** Scalar keys as strings (`1` -> "1"), as sigs.k8s.io/yaml turns them into JSON keys. */
  key: string;
  line: number;
  value: YamlNode;
}
export interface YamlSeqNode {
  kind: 'seq';
  line: number;
  items: YamlNode[];
}
export interface YamlScalarNode {
  kind: 'scalar';
  line: number;
  value: string | number | boolean | null;
}

/** A user-input error `file:line: field: problem`, with the parts in `details`. */
export function inputError(file: string, line: number, field: string, problem: string): MigpoolError {
  const where = field === '' ? `${file}:${line}` : `${file}:${line}: ${field}`;
  return badInput(`${where}: ${problem}`, { file, line, field });
}

/**
 * Parses YAML text (YAML 1.1, as go-yaml v2 in mig-parted) into a {@link YamlNode}; null for an
 * empty document. Syntax errors, duplicate keys and several documents in one file are BAD_INPUT
 * errors naming `file:line`.
 */
export function readYamlTree(text: string, file: string): YamlNode | null {
  const lineCounter = new LineCounter();
  // Duplicate keys are found by firstDuplicateKey: the yaml package's own check (uniqueKeys)
  // compares every key with every earlier one of its mapping, which took 10 minutes on 400,000 configs.
  const doc = parseDocument(text, { lineCounter, version: '1.1', prettyErrors: false, uniqueKeys: false });
  const lineOf = (offset: number | undefined): number => (offset === undefined ? 1 : lineCounter.linePos(offset).line);
  const first = doc.errors[0];
  if (first) {
    const message = (first.message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, '');
    throw inputError(file, lineOf(first.pos[0]), '', `not valid YAML: ${message}; fix the YAML syntax`);
  }
  if (doc.contents === null) return null;
  const dup = firstDuplicateKey(doc);
  if (dup) throw inputError(file, lineOf(dup.offset), '', 'not valid YAML: Map keys must be unique; fix the YAML syntax');
  // An alias bomb ("billion laughs": each anchor a list of aliases of the one before) is a few
  // hundred bytes and expands exponentially. The yaml package counts alias expansions in toJS
  // and refuses more than maxAliasCount (its default, 100, as the HTTP API uses through
  // YAML.parse); count first, then walk a document known to be small.
  try {
    doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
  } catch (e) {
    if (e instanceof ReferenceError || (e instanceof Error && /alias/i.test(e.message))) {
      throw inputError(file, 1, '', `too many aliases (more than ${MAX_ALIAS_COUNT} expansions, a YAML "billion laughs"); write the values out or use fewer aliases`);
    }
    throw e;
  }
  return convertNode(doc, doc.contents, lineOf, file, 1, 0);
}

/** The yaml package's default limit on alias expansions (its `maxAliasCount` option). */
const MAX_ALIAS_COUNT = 100;

function convertNode(doc: Document, node: unknown, lineOf: (offset: number | undefined) => number, file: string, fallbackLine: number, depth: number): YamlNode {
  if (depth > 100) throw inputError(file, fallbackLine, '', 'YAML nested too deeply (recursive alias?); simplify the document');
  if (node === null || node === undefined) return { kind: 'scalar', line: fallbackLine, value: null };
  if (isAlias(node)) {
    return convertNode(doc, node.resolve(doc), lineOf, file, lineOf(node.range?.[0]), depth + 1);
  }
  if (isScalar(node)) {
    const line = lineOf(node.range?.[0] ?? undefined);
    const v: unknown = node.value;
    if (v === null || typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') return { kind: 'scalar', line, value: v };
    if (typeof v === 'bigint') return { kind: 'scalar', line, value: Number(v) };
    // Timestamps, binary and other 1.1 types: keep what was written.
    return { kind: 'scalar', line, value: node.source ?? String(v) };
  }
  if (isSeq(node)) {
    const line = lineOf(node.range?.[0]);
    return { kind: 'seq', line, items: node.items.map((item) => convertNode(doc, item, lineOf, file, line, depth + 1)) };
  }
  if (isMap(node)) {
    const line = lineOf(node.range?.[0]);
    const pairs: YamlPair[] = [];
    const merged: YamlPair[] = [];
    for (const pair of node.items) {
      const keyNode: unknown = pair.key;
      const keyLine = isScalar(keyNode) || isAlias(keyNode) ? lineOf(keyNode.range?.[0]) : line;
      const value = convertNode(doc, pair.value, lineOf, file, keyLine, depth + 1);
      if (isScalar(keyNode) && typeof keyNode.value === 'symbol') {
        // `<<: *base` or `<<: [*a, *b]`: keys not set explicitly come from the sources, earlier
        // sources first (yaml.org/type/merge.html, supported by go-yaml v2).
        const sources = value.kind === 'seq' ? value.items : [value];
        for (const source of sources) {
          if (source.kind !== 'map') throw inputError(file, keyLine, '<<', 'a merge key needs a mapping or a list of mappings; fix the alias');
          merged.push(...source.pairs);
        }
        continue;
      }
      const key = convertNode(doc, keyNode, lineOf, file, keyLine, depth + 1);
      if (key.kind !== 'scalar') throw inputError(file, keyLine, '', 'mapping keys must be plain strings; write the key as a string');
      pairs.push({ key: key.value === null ? 'null' : String(key.value), line: keyLine, value });
    }
    for (const pair of merged) {
      if (!pairs.some((p) => p.key === pair.key)) pairs.push(pair);
    }
    return { kind: 'map', line, pairs };
  }
  throw inputError(file, fallbackLine, '', 'unsupported YAML node; use plain mappings, lists and scalars');
}

/** How a node reads in a message: `"abc"`, `12`, `a mapping`. */
export function describeNode(node: YamlNode): string {
  if (node.kind === 'map') return 'a mapping';
  if (node.kind === 'seq') return 'a list';
  if (node.value === null) return 'nothing (null)';
  return typeof node.value === 'string' ? JSON.stringify(node.value) : String(node.value);
}

// ---------------------------------------------------------------------------------------------
// MIG profile names.

/** The parts of a MIG profile name such as `1c.3g.20gb`, `1g.5gb+me` or `1g.24gb-me`. */
export interface MigProfileName {
  /** The `Nc.` part (compute slices of a compute instance), null when the name has none. */
  computeSlices: number | null;
  /** The `Ng` part: GPU (compute) slices of the GPU instance. */
  gpuSlices: number;
  /** The `Ngb` part, in GB as NVIDIA names profiles. */
  memoryGB: number;
  /** Attributes after `+`: `me`, `me.all`, `gfx`, ... */
  attributes: string[];
  /** Attributes after `-` (`1g.24gb-me`: without media extensions). */
  negatedAttributes: string[];
}

/** Go's strings.SplitN. */
function splitN(s: string, sep: string, n: number): string[] {
  const parts: string[] = [];
  let rest = s;
  while (parts.length < n - 1) {
    const at = rest.indexOf(sep);
    if (at < 0) break;
    parts.push(rest.slice(0, at));
    rest = rest.slice(at + sep.length);
  }
  parts.push(rest);
  return parts;
}

function profileField(s: string, suffix: string): number | string {
  if (s.trim() !== s) return `leading or trailing spaces on '%d${suffix}'`;
  if (!s.endsWith(suffix)) return `missing '${suffix}' from '%d${suffix}'`;
  const digits = s.slice(0, s.length - suffix.length);
  if (!/^[0-9]+$/.test(digits) || !Number.isSafeInteger(Number(digits))) return `malformed number in '%d${suffix}'`;
  return Number(digits);
}

function profileAttributes(s: string): string[] | string {
  const attrs = s.split(',');
  const seen = new Set<string>();
  for (const a of attrs) {
    if (seen.has(a)) return 'non unique attribute in list';
    if (a === '') return 'empty attribute in list';
    if (a.trim() !== a) return 'leading or trailing spaces in attribute';
    if (/^[0-9]/.test(a)) return 'attribute begins with a number';
    if (a.startsWith('.') || a.endsWith('.')) return 'attribute begins/ends with a dot';
    if (!/^[A-Za-z0-9.]+$/.test(a)) return 'non alpha-numeric character or digit in attribute';
    seen.add(a);
  }
  return attrs;
}

/**
 * Syntax of a profile name, as go-nvlib's parseMigProfile checks it (mig-parted's
 * AssertValidFormat): `[Nc.]Ng.Ngb` then optionally `+attr[,attr]` or `-attr[,attr]`, never
 * both; attributes are letters, digits and inner dots. Values are not checked against any GPU
 * (`0g.0gb` passes, as in mig-parted); that is done where the GPU model is known.
 */
function migProfileSyntax(name: string): MigProfileName | string {
  if (name === '') return 'profile is the empty string';
  const plus = splitN(name, '+', 2);
  const minus = splitN(name, '-', 2);
  if (plus.length === 2 && minus.length === 2) return `profile '${name}' contains both '+/-' attributes`;
  const split = plus.length === 2 ? plus : minus;
  const fields = splitN(split[0] ?? '', '.', 3);
  let c: number | null = null;
  let g: number | string;
  let gb: number | string;
  if (fields.length === 3) {
    const cField = profileField(fields[0] ?? '', 'c');
    if (typeof cField === 'string') return `cannot parse fields of '${name}': ${cField}`;
    c = cField;
    g = profileField(fields[1] ?? '', 'g');
    gb = typeof g === 'string' ? g : profileField(fields[2] ?? '', 'gb');
  } else if (fields.length === 2) {
    g = profileField(fields[0] ?? '', 'g');
    gb = typeof g === 'string' ? g : profileField(fields[1] ?? '', 'gb');
  } else {
    return `cannot parse fields of '${name}': parsed wrong number of fields, expected 2 or 3`;
  }
  if (typeof g === 'string') return `cannot parse fields of '${name}': ${g}`;
  if (typeof gb === 'string') return `cannot parse fields of '${name}': ${gb}`;
  const result: MigProfileName = { computeSlices: c, gpuSlices: g, memoryGB: gb, attributes: [], negatedAttributes: [] };
  if (split.length === 1) return result;
  const attrs = profileAttributes(split[1] ?? '');
  if (typeof attrs === 'string') return `cannot parse attributes of '${name}': ${attrs}`;
  if (minus.length === 2) result.negatedAttributes = attrs;
  else result.attributes = attrs;
  return result;
}

const PROFILE_NAME_HINT = 'write [Nc.]Ng.Ngb with optional +attr or -attr, e.g. 1g.5gb, 1c.3g.20gb, 1g.5gb+me, 1g.24gb+me.all, 1g.24gb-me';

/**
 * Parses a MIG profile name with mig-parted's syntax (see {@link MigProfileName}); throws a
 * BAD_INPUT error saying what is wrong. `MIG 1g.5gb` (nvidia-smi's spelling) is rejected, as by
 * mig-parted.
 */
export function parseMigProfileName(name: string): MigProfileName {
  const parsed = migProfileSyntax(name);
  if (typeof parsed === 'string') throw badInput(`'${name}' is not a MIG profile name (${parsed}); ${PROFILE_NAME_HINT}`, { profile: name });
  return parsed;
}

// ---------------------------------------------------------------------------------------------
// PCI device IDs.

/** A PCI device ID as mig-parted's pkg/types/device.go holds it. */
export interface PciDeviceId {
  device: number;
  vendor: number;
  /** The `:0xSSSSVVVV` part, null when not given. */
  subsystem: { device: number; vendor: number } | null;
}

/** Go's underscoreOK (strconv): `_` only between digits or right after a base prefix. */
function underscoresOk(s: string): boolean {
  let saw = '^';
  let i = 0;
  let hex = false;
  if (s.length >= 2 && s[0] === '0' && /[box]/i.test(s[1] ?? '')) {
    i = 2;
    saw = '0';
    hex = (s[1] ?? '').toLowerCase() === 'x';
  }
  for (; i < s.length; i++) {
    const ch = s[i] ?? '';
    if (/[0-9]/.test(ch) || (hex && /[a-f]/i.test(ch))) {
      saw = '0';
      continue;
    }
    if (ch === '_') {
      if (saw !== '0') return false;
      saw = '_';
      continue;
    }
    if (saw === '_') return false;
    saw = '!';
  }
  return saw !== '_';
}

/** Go's strconv.ParseUint(s, 0, 32): 0x / 0o / 0b / leading-0 octal / decimal, `_` separators. */
function parseUint32(s: string): number | null {
  if (s === '') return null;
  let base = 10;
  let digits = s;
  if (s[0] === '0') {
    const p = (s[1] ?? '').toLowerCase();
    if (s.length >= 3 && p === 'b') [base, digits] = [2, s.slice(2)];
    else if (s.length >= 3 && p === 'o') [base, digits] = [8, s.slice(2)];
    else if (s.length >= 3 && p === 'x') [base, digits] = [16, s.slice(2)];
    else [base, digits] = [8, s.slice(1)];
  }
  let value = 0;
  let underscores = false;
  for (const ch of digits) {
    if (ch === '_') {
      underscores = true;
      continue;
    }
    const d = parseInt(ch, 36);
    if (Number.isNaN(d) || d >= base) return null;
    value = value * base + d;
    if (value > 0xffffffff) return null;
  }
  if (underscores && !underscoresOk(s)) return null;
  return value;
}

/**
 * Parses `0x20B010DE` or `0x20B010DE:0x145F10DE` (device+vendor, then subsystem device+vendor)
 * as mig-parted's NewDeviceIDFromString does; null when malformed.
 */
export function parsePciDeviceId(text: string): PciDeviceId | null {
  const parts = text.split(':');
  if (parts.length > 2) return null;
  const primary = parseUint32(parts[0] ?? '');
  if (primary === null) return null;
  const id: PciDeviceId = { device: primary >>> 16, vendor: primary & 0xffff, subsystem: null };
  if (parts.length === 2) {
    const sub = parseUint32(parts[1] ?? '');
    if (sub === null) return null;
    id.subsystem = { device: sub >>> 16, vendor: sub & 0xffff };
  }
  return id;
}

// ---------------------------------------------------------------------------------------------
// The config file.

const TOP_FIELDS = ['version', 'mig-configs'];
const ENTRY_FIELDS = ['device-filter', 'devices', 'mig-enabled', 'mig-devices'];
const GPU_UUID = /^GPU-[0-9a-f]+(-[0-9a-f]+)*$/i;

/**
 * Parses a mig-parted v1 config. Every rejection is a BAD_INPUT error whose message is one line
 * `file:line: field: problem; fix`, with `details` {file, line, field}. Accepted exactly as
 * mig-parted accepts (api/spec/v1/spec.go) except for the stricter cases listed at the top of
 * this file. A file with only `version: v1` is accepted and has no configs, as in mig-parted.
 */
export function parseMigPartedConfig(text: string, file: string): MigPartedConfig {
  const root = readYamlTree(text, file);
  if (root === null) throw inputError(file, 1, '', 'the file is empty; a mig-parted config starts with "version: v1" and a "mig-configs" mapping');
  if (root.kind !== 'map') throw inputError(file, root.line, '', `expected a mapping with "version" and "mig-configs", got ${describeNode(root)}`);

  const version = root.pairs.find((p) => p.key === 'version');
  if (!version) throw inputError(file, root.line, 'version', 'missing; add "version: v1" (the only version mig-parted knows)');
  if (version.value.kind !== 'scalar' || version.value.value !== 'v1') {
    throw inputError(file, version.line, 'version', `unknown version ${describeNode(version.value)}; the only valid value is v1`);
  }
  const configs = new Map<string, MigConfigEntry[]>();
  for (const pair of root.pairs) {
    if (pair.key === 'version') continue;
    if (!TOP_FIELDS.includes(pair.key)) {
      throw inputError(file, pair.line, pair.key, `unexpected field; the top level holds only ${TOP_FIELDS.join(' and ')}`);
    }
    const value = pair.value;
    if (value.kind === 'scalar' && value.value === null) {
      throw inputError(file, pair.line, 'mig-configs', 'at least one entry is required; add a named config such as "all-disabled: [{devices: all, mig-enabled: false}]"');
    }
    if (value.kind !== 'map') throw inputError(file, value.line, 'mig-configs', `expected a mapping of config names to lists of entries, got ${describeNode(value)}`);
    if (value.pairs.length === 0) {
      throw inputError(file, value.line, 'mig-configs', 'at least one entry is required; add a named config such as "all-disabled: [{devices: all, mig-enabled: false}]"');
    }
    for (const config of value.pairs) configs.set(config.key, parseConfigEntries(config, file));
  }
  return { file, version: 'v1', configs };
}

function parseConfigEntries(config: YamlPair, file: string): MigConfigEntry[] {
  const field = `mig-configs.${config.key}`;
  const list = config.value;
  if (list.kind === 'scalar' && list.value === null) {
    throw inputError(file, config.line, field, 'at least one entry is required; add "- devices: all" with "mig-enabled"');
  }
  if (list.kind !== 'seq') throw inputError(file, list.line, field, `expected a list of entries ("- devices: ..."), got ${describeNode(list)}`);
  if (list.items.length === 0) throw inputError(file, list.line, field, 'at least one entry is required; add "- devices: all" with "mig-enabled"');
  return list.items.map((item, i) => parseEntry(item, file, `${field}[${i}]`));
}

function parseEntry(node: YamlNode, file: string, field: string): MigConfigEntry {
  if (node.kind !== 'map') {
    throw inputError(file, node.line, field, `expected a mapping with devices and mig-enabled (optional device-filter, mig-devices), got ${describeNode(node)}`);
  }
  for (const required of ['devices', 'mig-enabled']) {
    if (!node.pairs.some((p) => p.key === required)) throw inputError(file, node.line, field, `missing required field ${required}`);
  }
  const entry: MigConfigEntry = { devices: 'all', deviceFilter: null, migEnabled: false, migDevices: {}, line: node.line };
  let migDevices: Record<string, number> | null = null;
  for (const pair of node.pairs) {
    const f = `${field}.${pair.key}`;
    switch (pair.key) {
      case 'device-filter':
        entry.deviceFilter = parseDeviceFilter(pair.value, file, f);
        break;
      case 'devices':
        entry.devices = parseDevices(pair.value, file, f);
        break;
      case 'mig-enabled':
        if (pair.value.kind !== 'scalar' || typeof pair.value.value !== 'boolean') {
          throw inputError(file, pair.value.line, f, `must be true or false, got ${describeNode(pair.value)}`);
        }
        entry.migEnabled = pair.value.value;
        break;
      case 'mig-devices':
        migDevices = parseMigDevices(pair.value, file, f);
        break;
      default:
        throw inputError(file, pair.line, f, `unexpected field; an entry holds only ${ENTRY_FIELDS.join(', ')}`);
    }
  }
  if (entry.migEnabled && migDevices === null) {
    throw inputError(file, node.line, `${field}.mig-devices`, 'required when mig-enabled is true; add e.g. mig-devices: {"1g.5gb": 7}, or {} for no MIG devices');
  }
  if (!entry.migEnabled && migDevices !== null && Object.keys(migDevices).length > 0) {
    const line = node.pairs.find((p) => p.key === 'mig-devices')?.line ?? node.line;
    throw inputError(file, line, `${field}.mig-devices`, 'MIG devices given while mig-enabled is false; set mig-enabled: true or remove mig-devices');
  }
  entry.migDevices = migDevices ?? {};
  return entry;
}

function parseDevices(node: YamlNode, file: string, field: string): MigConfigEntry['devices'] {
  const valid = 'valid: all, or a list of GPU indices such as [0, 1] (migpool also takes GPU UUIDs, GPU-...)';
  if (node.kind === 'scalar' && node.value === 'all') return 'all';
  if (node.kind !== 'seq') throw inputError(file, node.line, field, `invalid value ${describeNode(node)}; ${valid}`);
  return node.items.map((item, i) => {
    if (item.kind === 'scalar' && typeof item.value === 'number' && Number.isSafeInteger(item.value)) return item.value;
    if (item.kind === 'scalar' && typeof item.value === 'string' && GPU_UUID.test(item.value)) return item.value;
    throw inputError(file, item.line, `${field}[${i}]`, `invalid device ${describeNode(item)}; ${valid}`);
  });
}

function parseDeviceFilter(node: YamlNode, file: string, field: string): string[] | null {
  const valid = 'write a quoted PCI device ID such as "0x20B010DE" or "0x20B010DE:0x145F10DE" (with subsystem), or a list of them';
  const check = (item: YamlNode, f: string): string => {
    if (item.kind !== 'scalar' || typeof item.value !== 'string') {
      const hint = item.kind === 'scalar' && typeof item.value === 'number' ? ' (an unquoted hex ID reads as a number)' : '';
      throw inputError(file, item.line, f, `must be a string, got ${describeNode(item)}${hint}; ${valid}`);
    }
    if (parsePciDeviceId(item.value) === null) throw inputError(file, item.line, f, `${describeNode(item)} is not a PCI device ID; ${valid}`);
    return item.value;
  };
  if (node.kind === 'scalar' && (node.value === null || node.value === '')) return null;
  if (node.kind === 'seq') {
    const ids = node.items.map((item, i) => check(item, `${field}[${i}]`));
    return ids.length === 0 ? null : ids;
  }
  return [check(node, field)];
}

function parseMigDevices(node: YamlNode, file: string, field: string): Record<string, number> {
  if (node.kind === 'scalar' && node.value === null) return {};
  if (node.kind !== 'map') throw inputError(file, node.line, field, `expected a mapping of profile names to counts such as {"1g.5gb": 7}, got ${describeNode(node)}`);
  const counts: Record<string, number> = {};
  for (const pair of node.pairs) {
    const profile = migProfileSyntax(pair.key);
    if (typeof profile === 'string') throw inputError(file, pair.line, field, `invalid profile name '${pair.key}' (${profile}); ${PROFILE_NAME_HINT}`);
    const v = pair.value;
    if (v.kind !== 'scalar' || typeof v.value !== 'number' || !Number.isSafeInteger(v.value) || v.value < 0) {
      throw inputError(file, v.line, `${field}.${pair.key}`, `invalid count ${describeNode(v)}; counts are whole numbers >= 0`);
    }
    counts[pair.key] = v.value;
  }
  return counts;
}

// ---------------------------------------------------------------------------------------------
// Selecting a config.

/**
 * The config name mig-parted would use (assert.go GetSelectedMigConfig): `name` when given;
 * with no name, the only config of a one-config file. Throws BAD_INPUT listing the names.
 */
export function resolveSelectedConfigName(config: MigPartedConfig, name?: string | null): string {
  const names = [...config.configs.keys()];
  const available = names.length === 0 ? 'the file defines no configs' : `available: ${names.join(', ')}`;
  if (name === undefined || name === null || name === '') {
    const only = names[0];
    if (names.length === 1 && only !== undefined) return only;
    throw badInput(`${config.file}: no config selected and the file has ${names.length}; name one (${available})`, { file: config.file });
  }
  if (!config.configs.has(name)) throw badInput(`${config.file}: no config named '${name}'; ${available}`, { file: config.file, config: name });
  return name;
}

/** The entries of the named config (or of the only config when no name is given). */
export function selectConfig(config: MigPartedConfig, name?: string | null): MigConfigEntry[] {
  return config.configs.get(resolveSelectedConfigName(config, name)) ?? [];
}

// ---------------------------------------------------------------------------------------------
// Which entry applies to which GPU.

/** What matching needs to know of a GPU. */
export interface GpuIdentity {
  /** Index as mig-parted numbers GPUs (PCI bus order, as nvidia-smi). */
  index: number;
  uuid: string;
  /** Device and vendor ID, `0x20B010DE`. */
  pciDeviceId: string;
  /** Subsystem device and vendor ID, `0x145F10DE`; unknown counts as 0x00000000 (device.go). */
  subsystemId?: string | null;
  /** false for a GPU without MIG support; absent or true: MIG-capable. */
  migCapable?: boolean;
}

/** The entry that decides one GPU's state. */
export interface GpuAssignment {
  gpu: GpuIdentity;
  entry: MigConfigEntry;
  /** Index of `entry` in the config's list. */
  entryIndex: number;
  /** Every entry that selects this GPU, in file order (more than one only when they agree). */
  matchedEntries: number[];
}

export interface EntryMatchResult {
  /** One per selected GPU, in the order of `gpus`. */
  assignments: GpuAssignment[];
  /** GPUs that no entry selects: mig-parted leaves them as they are. */
  untouchedGpus: GpuIdentity[];
  /** GPUs skipped because they are not MIG-capable (mig-parted apply/mode.go, config.go). */
  skippedNotMigCapable: { gpu: GpuIdentity; entryIndex: number }[];
  /** Entries that select no GPU here (normal for a config written for several GPU models). */
  unusedEntries: number[];
}

/** Names the config in matching errors; both optional. */
export interface MatchContext {
  file?: string;
  configName?: string;
}

function entrySelects(entry: MigConfigEntry, gpu: GpuIdentity, gpuId: () => PciDeviceId): boolean {
  // helpers.go MatchesDeviceFilter: no filter matches all; otherwise any listed ID that matches
  // (device.go Matches: device+vendor equal, and the subsystem too when the filter names one).
  if (entry.deviceFilter !== null) {
    const hw = gpuId();
    const hit = entry.deviceFilter.some((text) => {
      const f = parsePciDeviceId(text);
      if (f === null || f.device !== hw.device || f.vendor !== hw.vendor) return false;
      if (f.subsystem === null) return true;
      const sub = hw.subsystem ?? { device: 0, vendor: 0 };
      return f.subsystem.device === sub.device && f.subsystem.vendor === sub.vendor;
    });
    if (!hit) return false;
  }
  // helpers.go MatchesDevices: `all`, or the GPU's index in the list; UUIDs are ours.
  if (entry.devices === 'all') return true;
  return entry.devices.some((d) => (typeof d === 'number' ? d === gpu.index : d.toLowerCase() === gpu.uuid.toLowerCase()));
}

function sameSettings(a: MigConfigEntry, b: MigConfigEntry): boolean {
  if (a.migEnabled !== b.migEnabled) return false;
  // types.MigConfig.Equals: zero counts count as absent.
  const nonZero = (m: Record<string, number>): string[] => Object.entries(m).filter(([, n]) => n > 0).map(([k, n]) => `${k}=${n}`).sort();
  return nonZero(a.migDevices).join(',') === nonZero(b.migDevices).join(',');
}

/**
 * Decides, as mig-parted does, which entry of a selected config applies to each GPU.
 *
 * mig-parted (assert.go WalkSelectedMigConfigForEachGPU) walks the entries in file order and
 * applies each to every GPU whose PCI ID passes the entry's device-filter and whose index is in
 * `devices` (or `devices: all`). A GPU selected by several entries therefore gets each in turn,
 * the last one winning; when they disagree, `mig-parted apply` fails (mode.go/config.go refuse
 * to disable MIG on a GPU an earlier entry enabled) or leaves a state that `mig-parted assert`
 * never accepts. So entries that select the same GPU must agree: then the last one is the
 * assignment; otherwise this throws BAD_INPUT naming both lines.
 *
 * Non-MIG-capable GPUs (`migCapable: false`) are skipped by `devices: all` entries and by entries
 * with mig-enabled false; an entry naming one by index with mig-enabled true is a BAD_INPUT
 * error, as mig-parted fails with "cannot set MIG mode on non MIG-capable GPU".
 *
 * A config that selects none of the GPUs is reported by throwing BAD_INPUT (mig-parted would
 * do nothing and report success); GPUs left unselected when others are selected are returned in
 * `untouchedGpus`. A GPU whose own `pciDeviceId` is malformed is also BAD_INPUT.
 */
export function matchEntries(entries: readonly MigConfigEntry[], gpus: readonly GpuIdentity[], context: MatchContext = {}): EntryMatchResult {
  const file = context.file ?? '(config)';
  const configField = context.configName === undefined ? 'mig-configs' : `mig-configs.${context.configName}`;
  const result: EntryMatchResult = { assignments: [], untouchedGpus: [], skippedNotMigCapable: [], unusedEntries: [] };
  const used = new Set<number>();
  for (const gpu of gpus) {
    let parsed: PciDeviceId | null = null;
    const gpuId = (): PciDeviceId => {
      parsed ??= parsePciDeviceId(gpu.pciDeviceId);
      if (parsed === null) throw badInput(`GPU ${gpu.index}: PCI device ID '${gpu.pciDeviceId}' is malformed; expected e.g. 0x20B010DE`, { gpu: gpu.index });
      if (gpu.subsystemId) {
        const sub = parsePciDeviceId(gpu.subsystemId);
        if (sub === null || sub.subsystem !== null) throw badInput(`GPU ${gpu.index}: subsystem ID '${gpu.subsystemId}' is malformed; expected e.g. 0x145F10DE`, { gpu: gpu.index });
        parsed.subsystem = { device: sub.device, vendor: sub.vendor };
      }
      return parsed;
    };
    const matched: number[] = [];
    entries.forEach((entry, i) => {
      if (!entrySelects(entry, gpu, gpuId)) return;
      used.add(i);
      if (gpu.migCapable === false) {
        if (entry.devices === 'all' || !entry.migEnabled) {
          result.skippedNotMigCapable.push({ gpu, entryIndex: i });
          return;
        }
        throw inputError(file, entry.line, `${configField}[${i}].devices`, `GPU ${gpu.index} is not MIG-capable and cannot have MIG enabled (mig-parted: "cannot set MIG mode on non MIG-capable GPU"); remove it from devices or set mig-enabled: false`);
      }
      matched.push(i);
    });
    const last = matched[matched.length - 1];
    if (last === undefined) {
      if (!result.skippedNotMigCapable.some((s) => s.gpu === gpu)) result.untouchedGpus.push(gpu);
      continue;
    }
    const lastEntry = entries[last] as MigConfigEntry;
    for (const i of matched) {
      const other = entries[i] as MigConfigEntry;
      if (!sameSettings(other, lastEntry)) {
        throw inputError(file, lastEntry.line, `${configField}[${last}]`, `selects GPU ${gpu.index}, which entry [${i}] (line ${other.line}) also selects with different settings; mig-parted applies both in file order and cannot reach a steady state; make their devices or device-filter disjoint`);
      }
    }
    result.assignments.push({ gpu, entry: lastEntry, entryIndex: last, matchedEntries: matched });
  }
  entries.forEach((_, i) => {
    if (!used.has(i)) result.unusedEntries.push(i);
  });
  if (result.assignments.length === 0) {
    const line = entries[0]?.line ?? 1;
    const seen = gpus.map((g) => `${g.index}: ${g.pciDeviceId}${g.migCapable === false ? ' (not MIG-capable)' : ''}`).join(', ');
    const wants = entries
      .map((e) => `[${entries.indexOf(e)}] ${e.deviceFilter ? `device-filter ${e.deviceFilter.join('|')} ` : ''}devices ${e.devices === 'all' ? 'all' : e.devices.join(',')}`)
      .join('; ');
    throw inputError(file, line, configField, `selects none of the ${gpus.length} GPU(s) here (${seen || 'none found'}); its entries want ${wants || 'nothing'}; pick a config written for these GPUs or add their PCI device IDs to device-filter`);
  }
  return result;
}
