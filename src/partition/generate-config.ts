/**
 * `generate-config`: a mig-parted v1 config listing the configs the GPUs present can take, as
 * `nvidia-mig-parted generate-config` builds it (github.com/NVIDIA/mig-parted v0.15
 * pkg/mig/builder/builder.go buildMigConfigSpec, balanced.go, pkg/mig/discovery/discovery.go):
 * - always `all-disabled` (`mig-enabled: false`) and `all-enabled` (MIG on, no devices);
 * - `all-balanced` for each device ID whose base profiles (no `+`/`-` attribute) have a largest
 *   profile of 7 slices (2 x 1g, 1 x 2g, 1 x 3g) or 4 slices (2 x 1g, 1 x 2g), taking for each
 *   size the profile with the highest maximum count (`1g.5gb` over `1g.10gb`);
 * - `all-<profile>` for every GPU instance profile (not compute instance profiles), `+` written
 *   `.` in the name (`all-1g.5gb.me`), filled to the profile's maximum count; one entry per
 *   distinct maximum count;
 * - entries carry a `device-filter` only when the node has GPUs of more than one device ID.
 * The profiles and counts come from migpool's catalogue (what NVML reports: `nvidia-smi mig
 * -lgip`); mig-parted reads them from NVML. Pure: the caller passes the GPUs found.
 */
import { badInput } from '../errors.js';
import type { GiProfile, GpuModel } from '../mig/types.js';
import YAML from 'yaml';

/** A GPU as generate-config sees it. */
export interface GenerateGpu {
  readonly index: number;
  /** `0x20B010DE`, as mig-parted writes device IDs. */
  readonly pciDeviceId: string;
  /** Its catalogued model; null for a GPU that is not MIG-capable (skipped, as by mig-parted). */
  readonly model: GpuModel | null;
}

export interface GeneratedEntry {
  'device-filter'?: string[];
  devices: 'all';
  'mig-enabled': boolean;
  /** null for all-disabled (mig-parted leaves it nil: `{}` in YAML, `null` in JSON). */
  'mig-devices': Record<string, number> | null;
}

export interface GeneratedConfig {
  version: 'v1';
  'mig-configs': Record<string, GeneratedEntry[]>;
}

/** balanced.go balancedFormula: largest profile's slices -> {slices: count}. */
const BALANCED: Readonly<Record<number, Readonly<Record<number, number>>>> = {
  7: { 1: 2, 2: 1, 3: 1 },
  4: { 1: 2, 2: 1 },
};

const isBase = (p: GiProfile): boolean => !/[+-]/.test(p.name);

/**
 * The GPUs' configs, with config names and map keys in the order gopkg.in/yaml.v2 writes them
 * ({@link yamlV2KeyOrder}). Throws BAD_INPUT when no GPU is MIG-capable (mig-parted: "no
 * MIG-capable devices found on the system").
 */
export function generateMigConfig(gpus: readonly GenerateGpu[]): GeneratedConfig {
  const capable = gpus.filter((g): g is GenerateGpu & { model: GpuModel } => g.model !== null);
  if (capable.length === 0) throw badInput('no MIG-capable GPU found on this node; generate-config lists the configs of MIG-capable GPUs');
  const byDevice = new Map<string, GpuModel>();
  for (const g of capable) byDevice.set(g.pciDeviceId.toUpperCase().replace(/^0X/, '0x'), g.model);
  const heterogeneous = byDevice.size > 1;
  const deviceIds = [...byDevice.keys()].sort();
  const configs: Record<string, GeneratedEntry[]> = {
    'all-disabled': [{ devices: 'all', 'mig-enabled': false, 'mig-devices': null }],
    'all-enabled': [{ devices: 'all', 'mig-enabled': true, 'mig-devices': {} }],
  };

  const balanced: GeneratedEntry[] = [];
  for (const id of deviceIds) {
    const model = byDevice.get(id) as GpuModel;
    const base = model.giProfiles.filter(isBase);
    const slots = Math.max(...base.map((p) => p.computeSlices));
    const formula = BALANCED[slots];
    if (!formula) continue;
    const pick = (g: number): GiProfile | undefined =>
      base.filter((p) => p.computeSlices === g).reduce<GiProfile | undefined>((best, p) => (!best || p.maxCount > best.maxCount ? p : best), undefined);
    const chosen = Object.entries(formula).map(([g, n]) => [pick(Number(g)), n] as const);
    if (chosen.some(([p]) => p === undefined)) continue;
    const migDevices = Object.fromEntries(chosen.map(([p, n]) => [(p as GiProfile).name, n]));
    balanced.push({ ...(heterogeneous ? { 'device-filter': [id] } : {}), devices: 'all', 'mig-enabled': true, 'mig-devices': sortKeys(migDevices) });
  }
  if (balanced.length > 0) configs['all-balanced'] = balanced;

  const profiles = new Map<string, Map<string, number>>();
  for (const id of deviceIds) {
    for (const p of (byDevice.get(id) as GpuModel).giProfiles) {
      const m = profiles.get(p.name) ?? new Map<string, number>();
      m.set(id, p.maxCount);
      profiles.set(p.name, m);
    }
  }
  for (const [name, counts] of profiles) {
    const byCount = new Map<number, string[]>();
    for (const [id, n] of counts) byCount.set(n, [...(byCount.get(n) ?? []), id]);
    configs[`all-${name.replaceAll('+', '.')}`] = [...byCount.keys()]
      .sort((a, b) => a - b)
      .map((n) => ({ ...(heterogeneous ? { 'device-filter': (byCount.get(n) ?? []).sort() } : {}), devices: 'all', 'mig-enabled': true, 'mig-devices': { [name]: n } }));
  }
  return { version: 'v1', 'mig-configs': sortKeys(configs) };
}

/**
 * gopkg.in/yaml.v2's map key order (sorter.go keyList.Less), which mig-parted's YAML output
 * follows: runs of digits compare as numbers (`1g.5gb` before `1g.10gb`), other characters
 * before letters, letters by code point, a prefix first.
 */
export function yamlV2KeyOrder(a: string, b: string): number {
  const letter = (c: string): boolean => /\p{L}/u.test(c);
  const digit = (c: string): boolean => c >= '0' && c <= '9';
  const ar = [...a];
  const br = [...b];
  for (let i = 0; i < ar.length && i < br.length; i++) {
    const x = ar[i] as string;
    const y = br[i] as string;
    if (x === y) continue;
    const xl = letter(x);
    const yl = letter(y);
    if (xl && yl) return x < y ? -1 : 1;
    if (xl || yl) return yl ? -1 : 1;
    let ai = i;
    let bi = i;
    let an = 0;
    let bn = 0;
    // A run that continues non-zero digits before i counts as a number already under way.
    if (x === '0' || y === '0') {
      for (let j = i - 1; j >= 0 && digit(ar[j] as string); j--) {
        if (ar[j] !== '0') {
          an = 1;
          bn = 1;
          break;
        }
      }
    }
    for (; ai < ar.length && digit(ar[ai] as string); ai++) an = an * 10 + Number(ar[ai]);
    for (; bi < br.length && digit(br[bi] as string); bi++) bn = bn * 10 + Number(br[bi]);
    if (an !== bn) return an < bn ? -1 : 1;
    if (ai !== bi) return ai < bi ? -1 : 1;
    return x < y ? -1 : 1;
  }
  return ar.length - br.length;
}

function sortKeys<T>(record: Record<string, T>): Record<string, T> {
  return Object.fromEntries(Object.entries(record).sort(([a], [b]) => yamlV2KeyOrder(a, b)));
}

/** As mig-parted writes it with `-o yaml` (gopkg.in/yaml.v2): sequences not indented, lists in flow style. */
export function formatGeneratedYaml(config: GeneratedConfig): string {
  const plain = { version: config.version, 'mig-configs': Object.fromEntries(Object.entries(config['mig-configs']).map(([k, es]) => [k, es.map((e) => ({ ...e, 'mig-devices': e['mig-devices'] ?? {} }))])) };
  const doc = new YAML.Document(plain);
  YAML.visit(doc, {
    Seq(_key, node, path) {
      const parent = path[path.length - 1];
      if (YAML.isPair(parent) && YAML.isScalar(parent.key) && String(parent.key.value) === 'device-filter') node.flow = true;
    },
  });
  return doc.toString({ indentSeq: false, flowCollectionPadding: false, lineWidth: 0 });
}

/** As mig-parted writes it with `-o json` (json.MarshalIndent, two spaces; map keys sorted bytewise). */
export function formatGeneratedJson(config: GeneratedConfig): string {
  const bytewise = <T>(r: Record<string, T>): Record<string, T> => Object.fromEntries(Object.entries(r).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  const configs = bytewise(
    Object.fromEntries(
      Object.entries(config['mig-configs']).map(([k, es]) => [k, es.map((e) => ({ ...e, 'mig-devices': e['mig-devices'] === null ? null : bytewise(e['mig-devices']) }))]),
    ),
  );
  return JSON.stringify({ version: config.version, 'mig-configs': configs }, null, 2);
}
