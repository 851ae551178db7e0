/**
 * `migpool export`: the current MIG state of a node in the three shapes other tools read: a
 * mig-parted v1 config, what the NVIDIA GPU Operator / k8s-device-plugin shows on the Kubernetes
 * node, and Slurm's gres.conf / slurm.conf lines. Pure functions: the caller reads the GPUs.
 */
import YAML from 'yaml';
import { badInput } from '../errors.js';
import { normalizeProfileName, resolveGpuModel } from '../mig/catalog/index.js';
import type { GpuModel } from '../mig/types.js';
import { slurmGpuType, slurmMigGresType, type SlurmMigNaming } from './slurm-gres-type.js';

/** One GPU of the node as found now. */
export interface ExportGpu {
  /** NVML / nvidia-smi index. */
  index: number;
  uuid: string;
  /** PCI device ID as mig-parted writes it: `0x20B010DE`. */
  pciDeviceId: string;
  /** Product name as NVML (`nvidia-smi --query-gpu=name`) prints it: `NVIDIA A100-SXM4-40GB`. */
  productName: string;
  migEnabled: boolean;
  /** Instances as mig-parted counts them: profile -> count, e.g. {'3g.20gb': 1, '1g.5gb': 2, '1c.3g.20gb': 3}. */
  migDevices: Record<string, number>;
}

// ---------------------------------------------------------------------------------------------
// Profiles
// ---------------------------------------------------------------------------------------------

/** `1c.3g.20gb+me` -> ci 1, g 3, gb 20, suffix `+me`; `3g.20gb` -> ci null. */
interface ParsedProfile {
  readonly name: string;
  readonly ci: number | null;
  readonly g: number;
  readonly gb: number;
  /** `+me`, `-me`, `+gfx`, `+me.all`, or ''. */
  readonly suffix: string;
  /** The GPU instance profile the device lives in: the name without its `Nc.` prefix. */
  readonly giName: string;
}

const PROFILE = /^(?:(\d+)c\.)?(\d+)g\.(\d+)gb([+-][a-z.]+)?$/;

function parseProfile(raw: string, gpu: number): ParsedProfile {
  const name = normalizeProfileName(raw);
  const m = PROFILE.exec(name);
  if (!m) {
    throw badInput(`GPU ${gpu}: '${raw}' is not a MIG profile; write it as mig-parted does ('3g.20gb', '1g.5gb+me', '1c.3g.20gb')`, {
      gpu,
      profile: raw,
    });
  }
  const ci = m[1] === undefined ? null : Number(m[1]);
  const g = Number(m[2]);
  const suffix = m[4] ?? '';
  return { name, ci, g, gb: Number(m[3]), suffix, giName: `${g}g.${m[3]}gb${suffix}` };
}

/** Smaller instances first: compute slices, memory, then a partial CI before the full one, then name. */
function compareProfiles(a: ParsedProfile, b: ParsedProfile): number {
  return a.g - b.g || a.gb - b.gb || (a.ci ?? a.g) - (b.ci ?? b.g) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
}

/** A validated, normalised copy of the input, sorted by GPU index. */
interface CheckedGpu extends ExportGpu {
  /** mig-parted's device filter for this GPU: `0x%04X%04X`. */
  deviceFilter: string;
  /** Instances with a positive count (none when MIG is disabled), in profile order. */
  devices: { profile: ParsedProfile; count: number }[];
}

const PCI_ID = /^0x([0-9a-f]{4})([0-9a-f]{4})$/i;

function checkGpus(gpus: readonly ExportGpu[]): CheckedGpu[] {
  const seen = new Set<number>();
  const out: CheckedGpu[] = [];
  for (const gpu of gpus) {
    if (!Number.isInteger(gpu.index) || gpu.index < 0) {
      throw badInput(`GPU index ${String(gpu.index)} is not a non-negative integer`, { gpu: gpu.index });
    }
    if (seen.has(gpu.index)) throw badInput(`GPU ${gpu.index} is listed twice; give each GPU once`, { gpu: gpu.index });
    seen.add(gpu.index);
    const pci = PCI_ID.exec(gpu.pciDeviceId.trim());
    if (!pci) {
      throw badInput(`GPU ${gpu.index}: PCI device ID '${gpu.pciDeviceId}' is not of the form 0x20B010DE (device then vendor ID)`, {
        gpu: gpu.index,
      });
    }
    const counts = new Map<string, { profile: ParsedProfile; count: number }>();
    for (const [raw, count] of Object.entries(gpu.migDevices)) {
      if (!Number.isInteger(count) || count < 0) {
        throw badInput(`GPU ${gpu.index}: count ${String(count)} of '${raw}' is not a non-negative integer`, { gpu: gpu.index, profile: raw });
      }
      const profile = parseProfile(raw, gpu.index);
      const prev = counts.get(profile.name);
      counts.set(profile.name, { profile, count: (prev?.count ?? 0) + count });
    }
    // mig-parted reads instances only from a MIG-enabled GPU (export/config.go), so a disabled
    // GPU's entries, if any were passed, are ignored like they are there.
    const devices = gpu.migEnabled
      ? [...counts.values()].filter((d) => d.count > 0).sort((a, b) => compareProfiles(a.profile, b.profile))
      : [];
    const deviceFilter = `0x${(pci[1] ?? '').toUpperCase()}${(pci[2] ?? '').toUpperCase()}`;
    out.push({ ...gpu, deviceFilter, devices });
  }
  return out.sort((a, b) => a.index - b.index);
}

// ---------------------------------------------------------------------------------------------
// 1. mig-parted v1 config
// ---------------------------------------------------------------------------------------------

/** One entry of a mig-parted v1 config as `export` writes it (api/spec/v1/spec.go field order). */
export interface MigPartedEntry {
  /** Absent when one device filter covers every GPU or only one entry remains. */
  'device-filter'?: string | string[];
  devices: 'all' | number[];
  'mig-enabled': boolean;
  /** Profile -> count, keys sorted as Go marshals a map; `{}` when MIG is disabled. */
  'mig-devices': Record<string, number>;
}

/** A mig-parted v1 config holding one label. */
export interface MigPartedConfig {
  version: 'v1';
  'mig-configs': Record<string, MigPartedEntry[]>;
}

interface Spec {
  filters: Set<string>;
  devices: Set<number>;
  enabled: boolean;
  migDevices: Record<string, number>;
}

/** The values in ascending order (as mig-parted sorts devices and filters). Sets collect them: merging sorted lists GPU by GPU took minutes for 30,000 GPUs. */
function sorted<T extends number | string>(values: Iterable<T>): T[] {
  return [...values].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
}

/** types.MigConfig.Equals in mig-parted pkg/types/mig_config.go: same profiles, same counts. */
function sameMigDevices(a: Record<string, number>, b: Record<string, number>): boolean {
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => (b[k] ?? 0) > 0 && b[k] === a[k]);
}

/**
 * The node's current MIG state as a mig-parted v1 config under `label`, merged exactly as
 * `nvidia-mig-parted export` merges its per-GPU entries (NVIDIA/mig-parted
 * cmd/nvidia-mig-parted/export/config.go, mergeMigConfigSpecs, and its export_test.go cases):
 * - every GPU starts as `{device-filter: [its PCI ID], devices: [its index], mig-enabled,
 *   mig-devices}`; a MIG-disabled GPU gets `mig-devices: {}`;
 * - walking GPUs in index order, a GPU joins the first entry with the same mig-enabled and the
 *   same mig-devices (union of sorted devices and sorted filters), else starts a new entry;
 * - if the node has only one PCI ID, no entry keeps a device filter; otherwise an entry with a
 *   single filter writes it as a string, several as a list;
 * - an entry whose devices are all the GPUs of its filters becomes `devices: all`;
 * - a single remaining entry drops its device filter.
 * The PCI ID is written `0x%04X%04X` (pkg/types/device.go, DeviceID.String).
 */
export function exportMigPartedConfig(gpus: readonly ExportGpu[], label = 'current'): MigPartedConfig {
  if (label.trim() === '') throw badInput('the config label is empty; give a name such as current');
  const specs: Spec[] = checkGpus(gpus).map((g) => ({
    filters: new Set([g.deviceFilter]),
    devices: new Set([g.index]),
    enabled: g.migEnabled,
    migDevices: Object.fromEntries(
      g.devices.map((d) => [d.profile.name, d.count] as const).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
    ),
  }));

  const merged: Spec[] = [];
  for (const s of specs) {
    const into = merged.find((m) => m.enabled === s.enabled && sameMigDevices(m.migDevices, s.migDevices));
    if (into) {
      for (const d of s.devices) into.devices.add(d);
      for (const f of s.filters) into.filters.add(f);
    } else {
      merged.push({ ...s, devices: new Set(s.devices), filters: new Set(s.filters) });
    }
  }

  const devicesOfFilter = new Map<string, Set<number>>();
  for (const s of specs) {
    for (const f of s.filters) {
      const set = devicesOfFilter.get(f) ?? new Set<number>();
      for (const d of s.devices) set.add(d);
      devicesOfFilter.set(f, set);
    }
  }

  const entries: MigPartedEntry[] = merged.map((m) => {
    const devices = sorted(m.devices);
    const filters = sorted(m.filters);
    const entry: MigPartedEntry = { devices, 'mig-enabled': m.enabled, 'mig-devices': m.migDevices };
    if (devicesOfFilter.size > 1 && merged.length > 1) {
      entry['device-filter'] = filters.length === 1 ? (filters[0] ?? '') : filters;
    }
    const covered = sorted(new Set(filters.flatMap((f) => [...(devicesOfFilter.get(f) ?? [])])));
    if (covered.length === devices.length && covered.every((d, i) => d === devices[i])) entry.devices = 'all';
    // Key order of the Go struct: device-filter, devices, mig-enabled, mig-devices.
    return 'device-filter' in entry
      ? { 'device-filter': entry['device-filter'], devices: entry.devices, 'mig-enabled': entry['mig-enabled'], 'mig-devices': entry['mig-devices'] }
      : entry;
  });

  return { version: 'v1', 'mig-configs': { [label]: entries } };
}

/**
 * The config as YAML, laid out like mig-parted's (gopkg.in/yaml.v2) output: block sequences not
 * indented under their key, `devices` and `device-filter` in flow style (`[0, 1]`), PCI IDs
 * double-quoted because they would otherwise read as hex integers.
 */
export function exportMigPartedYaml(gpus: readonly ExportGpu[], label = 'current'): string {
  const doc = new YAML.Document(exportMigPartedConfig(gpus, label));
  YAML.visit(doc, {
    Seq(_key, node, path) {
      const parent = path[path.length - 1];
      if (YAML.isPair(parent) && YAML.isScalar(parent.key) && ['devices', 'device-filter'].includes(String(parent.key.value))) {
        node.flow = true;
      }
    },
  });
  return doc.toString({ indentSeq: false, flowCollectionPadding: false, lineWidth: 0 });
}

/** The config as JSON, indented by two spaces like mig-parted's `-o json` (json.MarshalIndent). */
export function exportMigPartedJson(gpus: readonly ExportGpu[], label = 'current'): string {
  return JSON.stringify(exportMigPartedConfig(gpus, label), null, 2);
}

// ---------------------------------------------------------------------------------------------
// 2. Kubernetes: GPU Operator label and device-plugin resources (mixed strategy)
// ---------------------------------------------------------------------------------------------

/** What Kubernetes shows for the node. */
export interface K8sExport {
  /** The label the GPU Operator's MIG manager watches; its value names a config in the mig-parted ConfigMap. */
  label: { 'nvidia.com/mig.config': string };
  /** Extended resources under migStrategy=mixed: `nvidia.com/gpu` then `nvidia.com/mig-*`, in profile order. */
  resources: Record<string, number>;
  /** Things the device plugin would do differently from what `resources` says. */
  warnings: string[];
  text: string;
}

/** A Kubernetes label value: at most 63 characters, alphanumerics with `-_.` inside. */
const LABEL_VALUE = /^(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/;

/**
 * The resource name k8s-device-plugin gives a MIG profile under the mixed strategy:
 * `nvidia.com/` + `mig-<profile>` with every `+` replaced by `.` (NVIDIA/k8s-device-plugin
 * internal/rm/rm.go, AddDefaultResourcesToConfig: `strings.ReplaceAll("mig-"+p.String(), "+", ".")`).
 * So `1g.5gb+me` -> `nvidia.com/mig-1g.5gb.me`, `2g.48gb+me.all` -> `nvidia.com/mig-2g.48gb.me.all`,
 * `1g.24gb-me` -> `nvidia.com/mig-1g.24gb-me`.
 */
export function k8sMigResourceName(profile: string): string {
  return `nvidia.com/mig-${normalizeProfileName(profile)}`.replaceAll('+', '.');
}

/**
 * What the NVIDIA GPU Operator and k8s-device-plugin (migStrategy=mixed) show for the node:
 * - label `nvidia.com/mig.config=<label>` (default `current`, the label `exportMigPartedConfig`
 *   writes; the MIG manager applies the config of that name from its ConfigMap);
 * - `nvidia.com/gpu`: the GPUs with MIG disabled (the plugin skips MIG-enabled GPUs under mixed,
 *   internal/rm/device_map.go buildGPUDeviceMap);
 * - `nvidia.com/mig-<profile>`: one per MIG device (compute instance) across the node
 *   (device_map.go buildMigDeviceMap visits every MIG device).
 * The plugin registers resources only for profiles whose CI fills its GI (rm.go skips C != G), so a
 * partial compute instance (`1c.3g.20gb`) has no resource of its own. Its resource pattern match is
 * an unanchored regular expression (api/config/v1/resources.go, wildCardToRegexp), under which
 * `1c.3g.20gb` matches the `3g.20gb` pattern: such devices are counted under their GPU instance's
 * resource here, with a warning, because that behaviour was read from the code, not observed.
 */
export function exportK8s(gpus: readonly ExportGpu[], label = 'current'): K8sExport {
  if (label.length > 63 || !LABEL_VALUE.test(label) || label === '') {
    throw badInput(
      `'${label}' cannot be a Kubernetes label value: use at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit`,
    );
  }
  const checked = checkGpus(gpus);
  const warnings: string[] = [];
  let wholeGpus = 0;
  const mig = new Map<string, { profile: ParsedProfile; count: number }>();
  for (const g of checked) {
    if (!g.migEnabled) {
      wholeGpus += 1;
      continue;
    }
    if (g.devices.length === 0) {
      warnings.push(
        `GPU ${g.index} has MIG enabled but no MIG devices: the device plugin refuses such a node ("at least one device with migEnabled=true was not configured correctly"); create instances or disable MIG`,
      );
    }
    for (const d of g.devices) {
      if (d.profile.ci !== null && d.profile.ci !== d.profile.g) {
        warnings.push(
          `GPU ${g.index}: ${d.count} x ${d.profile.name} is a partial compute instance; the device plugin registers no resource for it and counted here under ${k8sMigResourceName(d.profile.giName)} (its unanchored pattern match; not confirmed on a node)`,
        );
      }
      const gi = parseProfile(d.profile.giName, g.index);
      const prev = mig.get(gi.name);
      mig.set(gi.name, { profile: gi, count: (prev?.count ?? 0) + d.count });
    }
  }
  const resources: Record<string, number> = {};
  if (wholeGpus > 0) resources['nvidia.com/gpu'] = wholeGpus;
  for (const { profile, count } of [...mig.values()].sort((a, b) => compareProfiles(a.profile, b.profile))) {
    resources[k8sMigResourceName(profile.name)] = count;
  }
  const lines = [
    '# node label: the GPU Operator MIG manager applies the mig-parted config of this name',
    `nvidia.com/mig.config=${label}`,
    '# extended resources advertised by the NVIDIA device plugin (migStrategy=mixed)',
    ...Object.entries(resources).map(([name, n]) => `${name}: ${n}`),
    ...warnings.map((w) => `# warning: ${w}`),
  ];
  return { label: { 'nvidia.com/mig.config': label }, resources, warnings, text: `${lines.join('\n')}\n` };
}

// ---------------------------------------------------------------------------------------------
// 3. Slurm: gres.conf and slurm.conf Gres= (AutoDetect=nvml naming)
// ---------------------------------------------------------------------------------------------

/** One GRES record: a whole GPU, or the MIG devices of one type on one GPU. */
export interface SlurmGres {
  gpuIndex: number;
  /** GRES type as AutoDetect=nvml names it: `nvidia_a100-sxm4-40gb`, `nvidia_a100_3g.20gb`. */
  type: string;
  count: number;
  /** The mig-parted profile for MIG devices (`1g.5gb+me`, `1c.3g.20gb`); null for a whole GPU. */
  profile: string | null;
  /**
   * Device files known from the input: `/dev/nvidia<index>`. For MIG devices Slurm adds the GPU
   * instance's and the compute instance's `/dev/nvidia-caps/nvidia-cap<N>`, whose minors come from
   * `/proc/driver/nvidia-caps/mig-minors` and the instance IDs, which the input does not carry.
   */
  files: string[];
  /** False for MIG devices: their capability files are left to AutoDetect=nvml. */
  filesComplete: boolean;
}

/** gres.conf / slurm.conf for the node. */
export interface SlurmExport {
  nodeName: string;
  gres: SlurmGres[];
  /** The `Gres=` value of the node's slurm.conf line: `gpu:nvidia_a100_1g.5gb:7,...`. */
  gresValue: string;
  /** `NodeName=<node> Gres=...` (merge with the node's other slurm.conf fields). */
  slurmConfLine: string;
  /** gres.conf text. */
  gresConf: string;
  warnings: string[];
  /** gres.conf then the slurm.conf lines. */
  text: string;
}

function modelOf(gpu: ExportGpu): GpuModel | null {
  for (const key of [gpu.pciDeviceId, gpu.productName]) {
    try {
      return resolveGpuModel(key);
    } catch {
      // try the next key
    }
  }
  return null;
}

const NODE_NAME = /^[^\s=,#]+$/;

/**
 * gres.conf and slurm.conf `Gres=` for the node's current instances, with GRES types named as
 * Slurm's NVML autodetection names them under `naming` (see slurm-gres-type.ts for the rule and its
 * sources; `attributes` for Slurm before 23.02.6, `device-name` after):
 * - a whole GPU: the NVML product name lower-cased with spaces turned into `_`
 *   (`NVIDIA A100-SXM4-40GB` -> `nvidia_a100-sxm4-40gb`), `File=/dev/nvidia<minor>`;
 * - a MIG device (one per compute instance): that name cut at its first `-`, then the profile
 *   (`nvidia_a100_3g.39gb` for an A100-80GB 3g.40gb under `attributes`, `nvidia_a100_3g.40gb`
 *   under `device-name`). Its files are `/dev/nvidia<minor>` plus
 *   `/dev/nvidia-caps/nvidia-cap<GI minor>,/dev/nvidia-caps/nvidia-cap<CI minor>` (a MultipleFiles=
 *   record).
 * The GPU's device minor is taken to be its index (Slurm logs when they differ). The MIG
 * capability minors need GPU and compute instance IDs the input does not have, so gres.conf
 * keeps `AutoDetect=nvml` and writes MIG records as comments with placeholders; slurm.conf's
 * `Gres=` is complete.
 */
export function exportSlurm(gpus: readonly ExportGpu[], nodeName: string, naming: SlurmMigNaming = 'attributes'): SlurmExport {
  if (!NODE_NAME.test(nodeName)) {
    throw badInput(`'${nodeName}' is not a Slurm node name: give the NodeName from slurm.conf, without spaces, '=', ',' or '#'`);
  }
  const warnings: string[] = [];
  const gres: SlurmGres[] = [];
  const conf: string[] = [
    `# gres.conf for ${nodeName}, from its current MIG state (migpool export)`,
    '# MIG devices need AutoDetect=nvml: their /dev/nvidia-caps files depend on instance IDs',
    'AutoDetect=nvml',
  ];
  for (const g of checkGpus(gpus)) {
    const name = slurmGpuType(g.productName);
    const dev = `/dev/nvidia${g.index}`;
    if (!g.migEnabled) {
      gres.push({ gpuIndex: g.index, type: name, count: 1, profile: null, files: [dev], filesComplete: true });
      conf.push(`NodeName=${nodeName} Name=gpu Type=${name} File=${dev}`);
      continue;
    }
    if (g.devices.length === 0) {
      warnings.push(`GPU ${g.index} has MIG enabled but no MIG devices: slurmd with AutoDetect=nvml stops ("MIG mode is enabled, but no MIG devices were found"); create instances or disable MIG`);
    }
    const model = modelOf(g);
    conf.push(`# GPU ${g.index} (${g.productName}), MIG enabled: AutoDetect=nvml finds these devices`);
    for (const d of g.devices) {
      const { type, caveat } = slurmMigGresType(g.productName, d.profile.name, naming, model);
      if (caveat !== null && !warnings.includes(`GPU ${g.index}: ${caveat}`)) warnings.push(`GPU ${g.index}: ${caveat}`);
      gres.push({ gpuIndex: g.index, type, count: d.count, profile: d.profile.name, files: [dev], filesComplete: false });
      for (let i = 0; i < d.count; i += 1) {
        conf.push(
          `# NodeName=${nodeName} Name=gpu Type=${type} MultipleFiles=${dev},/dev/nvidia-caps/nvidia-cap<gi>,/dev/nvidia-caps/nvidia-cap<ci>  # ${d.profile.name}`,
        );
      }
    }
  }
  const totals = new Map<string, number>();
  for (const r of gres) totals.set(r.type, (totals.get(r.type) ?? 0) + r.count);
  const gresValue = [...totals].map(([type, n]) => `gpu:${type}:${n}`).join(',');
  const slurmConfLine = gresValue === '' ? `NodeName=${nodeName}` : `NodeName=${nodeName} Gres=${gresValue}`;
  const gresConf = `${conf.join('\n')}\n`;
  const text = [
    gresConf,
    '# slurm.conf',
    'GresTypes=gpu',
    slurmConfLine,
    ...warnings.map((w) => `# warning: ${w}`),
  ].join('\n');
  return { nodeName, gres, gresValue, slurmConfLine, gresConf, warnings, text: `${text}\n` };
}
