/**
 * The site file of `migpool slurm plan|apply` (`--nodes nodes.yaml`): which Slurm nodes migpool may
 * re-partition, their GPUs, and how to reach them.
 *
 * ```yaml
 * defaults:                        # for every node; each node may override any of these
 *   remote: [ssh, "{node}"]        # argv prefix that runs a command on the node ([]: run it here)
 *   migpool: [migpool]             # how migpool is started there
 *   gresConf: /etc/slurm/gres.conf # where this machine sees the gres.conf to rewrite
 *   slurmConf: /etc/slurm/slurm.conf
 *   devices: /dev/nvidia{n}        # File= of the n-th GRES device in gres.conf; absent: AutoDetect=nvml, gres.conf left alone
 *   gresTypes: nvml                # GRES type names as AutoDetect=nvml makes them (nvidia_a100_3g.39gb on an
 *                                  # A100-80GB under Slurm < 23.02.6, nvidia_a100_3g.40gb after); profile (3g.40gb)
 *                                  # only with devices: Slurm drops configured types that are no substring of its own
 *   slurmVersion: "22.05.8"        # the nodes' slurmd version, which fixes the MIG type names (default: each node's
 *                                  # migpool export asks slurmd -V there)
 *   restartSlurmd: [systemctl, restart, slurmd]       # run on the node (through remote)
 *   restartController: [systemctl, restart, slurmctld] # run here
 * nodes:
 *   gpu01: {gpu: A100-SXM4-40GB, count: 8}
 * ```
 */
import { readFileSync, statSync } from 'node:fs';
import YAML from 'yaml';
import { firstDuplicateKey } from '../yaml-keys.js';
import { z } from 'zod';
import { badInput, MigpoolError } from '../errors.js';
import { firstIssue, overLimit, plainWords } from '../schema-words.js';
import { resolveGpuModel } from '../mig/catalog/index.js';
import type { GpuModel } from '../mig/types.js';
import type { SlurmVersion } from '../partition/slurm-gres-type.js';
import { parseSlurmVersionFlag } from './version.js';

export interface SiteNode {
  readonly name: string;
  readonly model: GpuModel;
  readonly count: number;
  readonly remote: readonly string[];
  readonly migpool: readonly string[];
  readonly gresConf: string;
  readonly slurmConf: string;
  readonly devices: string | null;
  readonly gresTypes: 'profile' | 'nvml';
  /** The node's slurmd version as the site file gives it, or null (the node's export finds it). */
  readonly slurmVersion: SlurmVersion | null;
  readonly restartSlurmd: readonly string[];
  readonly restartController: readonly string[];
}

const argv = z.array(z.string());
const settings = z
  .object({
    remote: argv,
    migpool: argv.min(1),
    gresConf: z.string().min(1),
    slurmConf: z.string().min(1),
    devices: z.string().min(1).nullable(),
    gresTypes: z.enum(['profile', 'nvml']),
    slurmVersion: z.union([z.string(), z.number()]),
    restartSlurmd: argv,
    restartController: argv,
  })
  .strict()
  .partial();
/**
 * Most GPUs a node of the site file may list: migpool's own bound, not Slurm's nor the hardware's
 * (a slip such as 800 for 8 is caught), the same as one entry of a simulated machine
 * (gpu/simulated/spec.ts MAX_PER_ENTRY).
 */
const MAX_NODE_GPUS = 64;
const nodeCount = z
  .number()
  .int()
  .min(1)
  .max(MAX_NODE_GPUS, { error: overLimit('GPUs', `a node here holds (at most ${MAX_NODE_GPUS} per node)`, "give the node's GPU count, as `nvidia-smi -L` lists them") });
const nodeSchema = settings.extend({ gpu: z.string().min(1), count: nodeCount }).strict();
const fileSchema = z.object({ defaults: settings.optional(), nodes: z.record(z.string(), nodeSchema) }).strict();

const DEFAULTS = {
  remote: ['ssh', '{node}'],
  migpool: ['migpool'],
  gresConf: '/etc/slurm/gres.conf',
  slurmConf: '/etc/slurm/slurm.conf',
  devices: null,
  gresTypes: 'nvml',
  slurmVersion: null,
  restartSlurmd: ['systemctl', 'restart', 'slurmd'],
  restartController: ['systemctl', 'restart', 'slurmctld'],
} as const;

/** Parses a site file's text (`where` names it in errors). */
export function parseSiteFile(text: string, where: string, env: NodeJS.ProcessEnv = process.env): SiteNode[] {
  let doc: unknown;
  try {
    // Duplicate keys are found by firstDuplicateKey (linear), not by the yaml package's check (quadratic in a mapping's keys).
    const parsed = YAML.parseDocument(text, { uniqueKeys: false });
    const first = parsed.errors[0];
    if (first) throw first;
    const dup = firstDuplicateKey(parsed);
    if (dup) throw new Error(`Map keys must be unique ('${dup.key}' is written twice)`);
    doc = parsed.toJS();
  } catch (e) {
    throw badInput(`${where}: not YAML (${(e as Error).message.split('\n')[0]}); see README's Slurm section for the format`);
  }
  const parsed = fileSchema.safeParse(doc, { error: plainWords });
  if (!parsed.success) {
    const issue = firstIssue(parsed.error.issues)!;
    throw badInput(`${where}: ${issue.path.join('.') || 'the file'}: ${issue.message}; see README's Slurm section for the format`);
  }
  const defaults = { ...DEFAULTS, ...parsed.data.defaults };
  return Object.entries(parsed.data.nodes).map(([name, n]) => {
    if (!/^[^\s=,#[\]]+$/.test(name)) throw badInput(`${where}: nodes.${name}: not a single Slurm node name; list each node by its NodeName`);
    let model: GpuModel;
    try {
      model = resolveGpuModel(n.gpu);
    } catch (e) {
      throw badInput(`${where}: nodes.${name}.gpu: ${(e as Error).message}`);
    }
    const s = { ...defaults, ...n };
    if (s.gresTypes === 'profile' && s.devices === null) {
      throw badInput(
        `${where}: nodes.${name}: gresTypes: profile names types such as 3g.40gb, which slurmd with AutoDetect=nvml drops unless they are a substring of its own names (nvidia_a100_3g.39gb on an A100-80GB before Slurm 23.02.6); use gresTypes: nvml, or give devices: for gres.conf File= lines`,
      );
    }
    const slurmVersion = s.slurmVersion === null ? null : parseSlurmVersionFlag(String(s.slurmVersion), `${where}: nodes.${name}.slurmVersion`);
    const expand = (words: readonly string[]) => words.map((w) => w.replaceAll('{node}', name));
    return {
      name,
      model,
      count: n.count,
      remote: expand(s.remote),
      migpool: expand(s.migpool),
      gresConf: s.gresConf.replaceAll('{node}', name),
      slurmConf: (env['SLURM_CONF'] !== undefined && parsed.data.defaults?.slurmConf === undefined && n.slurmConf === undefined ? env['SLURM_CONF'] : s.slurmConf).replaceAll('{node}', name),
      devices: s.devices,
      gresTypes: s.gresTypes,
      slurmVersion,
      restartSlurmd: expand(s.restartSlurmd),
      restartController: expand(s.restartController),
    };
  });
}

/**
 * The largest site file read: 1 MiB, some 20,000 nodes at 50 bytes a line. The yaml package
 * compares each key of a mapping with every earlier one (its duplicate-key check), so `nodes:` of
 * 400,000 entries (21 MB) ran for over a minute; 1 MiB (23,000 nodes) took 6 s on a busy machine.
 */
const MAX_SITE_FILE_BYTES = 1024 * 1024;

export function loadSiteFile(path: string): SiteNode[] {
  let text: string;
  try {
    const stat = statSync(path);
    const size = stat.size;
    if (stat.isFile() && size > MAX_SITE_FILE_BYTES) throw badInput(`--nodes ${path}: ${size} bytes, over the limit of ${MAX_SITE_FILE_BYTES} (1 MiB, some 20,000 nodes); give the site file that lists the GPU nodes`);
    text = readFileSync(path, 'utf8');
  } catch (e) {
    if (e instanceof MigpoolError) throw e;
    throw badInput(`--nodes ${path}: cannot read it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}); give the site file that lists the GPU nodes`);
  }
  return parseSiteFile(text, path);
}
