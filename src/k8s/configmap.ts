/**
 * Edits the mig-parted config held in the MIG manager's ConfigMap: adds migpool's configs and drops
 * the migpool configs no node uses any more, keeping every other config, comment and key order as
 * written. Pure.
 */
import YAML from 'yaml';
import { badInput } from '../errors.js';
import { parseMigPartedConfig } from '../partition/config.js';
import type { MigPartedEntry } from '../partition/export.js';
import { CONFIG_PREFIX } from './plan.js';

export interface ConfigEdit {
  readonly text: string;
  readonly added: readonly string[];
  readonly removed: readonly string[];
}

/**
 * `text` (a mig-parted v1 config) with `add` set under `mig-configs`, and the `migpool-*` configs
 * that are neither added nor in `inUse` removed. The result is checked by parsing it as mig-parted
 * would. `source` names the ConfigMap in messages.
 */
export function editMigConfigs(text: string, add: Readonly<Record<string, MigPartedEntry[]>>, inUse: ReadonlySet<string>, source: string): ConfigEdit {
  parseMigPartedConfig(text, source);
  // Duplicate keys were refused just above (in linear time); the yaml package's own check is quadratic.
  const doc = YAML.parseDocument(text, { version: '1.1', uniqueKeys: false });
  const configs = doc.get('mig-configs', true);
  if (!YAML.isMap(configs)) throw badInput(`${source}: mig-configs is not a mapping; fix the ConfigMap`);
  const removed: string[] = [];
  for (const item of [...configs.items]) {
    const key = YAML.isScalar(item.key) ? String(item.key.value) : String(item.key);
    if (key.startsWith(CONFIG_PREFIX) && !inUse.has(key) && !(key in add)) {
      configs.delete(key);
      removed.push(key);
    }
  }
  const added: string[] = [];
  for (const [name, entries] of Object.entries(add)) {
    if (!configs.has(name)) added.push(name);
    const node = doc.createNode(entries);
    YAML.visit(node, {
      Seq(_key, seq, path) {
        const parent = path[path.length - 1];
        if (YAML.isPair(parent) && YAML.isScalar(parent.key) && ['devices', 'device-filter'].includes(String(parent.key.value))) seq.flow = true;
      },
    });
    configs.set(name, node);
  }
  const out = doc.toString({ lineWidth: 0 });
  parseMigPartedConfig(out, source);
  return { text: out, added, removed };
}
