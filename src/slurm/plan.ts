/**
 * `migpool slurm plan`: from Slurm's waiting jobs and nodes, and each node's MIG layout as its own
 * migpool reports it, the layouts to give the nodes whose GPU slices are all idle. Pure.
 */
import { planLayoutsForDemand, WHOLE_GPU, type DemandGpu, type DemandInstance, type SliceDemand } from '../optimize/demand-layouts.js';
import type { GpuModel } from '../mig/types.js';
import { slurmMigPrefix } from '../partition/slurm-gres-type.js';
import type { MigPartedConfig, MigPartedEntry } from '../partition/export.js';
import { isDrained, type GresItem, type SlurmJob, type SlurmNode } from './parse.js';
import type { SiteNode } from './site.js';

/** The drain reason migpool sets; a node drained for another reason is left alone. */
export const DRAIN_REASON = 'migpool-repartition';

/** One GPU of a node as `migpool status --json` on the node reports it. */
export interface NodeGpuState {
  readonly index: number;
  /** null: MIG off. */
  readonly instances: readonly DemandInstance[] | null;
}

/**
 * The MIG profile of a GRES type: `1g.5gb` itself, or AutoDetect=nvml's `nvidia_a100_1g.5gb`,
 * `nvidia_a100_3g.39gb` (an A100-80GB 3g.40gb, memory rounded as Slurm before 23.02.6 names it),
 * `nvidia_h100_80gb_hbm3_1g.10gb+me`, or a part of one (`a100_3g.39gb`: Slurm matches substrings);
 * `gpu` for an untyped request or a whole-GPU type; null for a MIG type the model does not have
 * (its profile, or its GPU name, is another model's).
 */
export function profileOfGresType(type: string | null, model: GpuModel): string | null {
  if (type === null) return WHOLE_GPU;
  const m = /^(.*?)(?:^|_)((?:\d+c\.)?)(\d+)g\.(\d+)gb((?:\+[\w.]+)?)$/i.exec(type.toLowerCase());
  if (!m) return WHOLE_GPU;
  const prefix = m[1] === '' ? '' : `${m[1]}_`;
  if (prefix !== '' && !model.productNames.some((n) => `${slurmMigPrefix(n)}_`.endsWith(prefix))) return null;
  const exact = `${m[2]}${m[3]}g.${m[4]}gb${m[5]}`;
  if (model.giProfiles.some((p) => p.name === exact.replace(/^\d+c\./, ''))) return exact.replace(/^\d+c\./, '');
  const slices = Number(m[3]);
  const gb = Number(m[4]);
  const byMemory = model.giProfiles.find((p) => p.computeSlices === slices && p.memoryGiB !== null && Math.round(p.memoryGiB) === gb && !p.name.includes('+'));
  return byMemory?.name ?? null;
}

/** Why a node may not be changed now, or null when it may. */
export function blockedReason(node: SlurmNode | undefined, force: boolean): string | null {
  if (node === undefined) return 'Slurm does not know it';
  const state = node.state.toUpperCase();
  if (/DOWN|FAIL|NOT_RESPONDING|POWER/.test(state)) return `it is ${node.state}`;
  if (isDrained(state) && !(node.reason ?? '').startsWith(DRAIN_REASON)) return `it is drained for another reason (${node.reason ?? 'none given'})`;
  const busy = node.gresUsed.filter((g) => g.name === 'gpu').reduce((n, g) => n + g.count, 0);
  if (busy > 0 && !force) return `${busy} GPU GRES in use (--force drains it and waits for them)`;
  return null;
}

export interface SlurmPlanNode {
  readonly name: string;
  readonly model: string;
  readonly changeable: boolean;
  /** Why it stays as it is ('' when changeable). */
  readonly blocked: string;
  readonly current: readonly (readonly DemandInstance[] | null)[];
  readonly planned: readonly (readonly DemandInstance[] | null)[];
  readonly changed: boolean;
}

export interface SlurmPlan {
  /** Waiting GRES requests by profile (`gpu` for whole GPUs). */
  readonly demand: Readonly<Record<string, number>>;
  readonly served: Readonly<Record<string, number>>;
  readonly unserved: Readonly<Record<string, number>>;
  /** Requests that name a type no site node's model has, by type. */
  readonly unknownTypes: Readonly<Record<string, number>>;
  readonly nodes: readonly SlurmPlanNode[];
}

function waiting(job: SlurmJob): boolean {
  return job.state.toUpperCase().startsWith('PENDING') && !/^JobHeld/i.test(job.reason);
}

function gpuItems(job: SlurmJob): GresItem[] {
  return job.gres.filter((g) => g.name === 'gpu');
}

/**
 * Builds the plan. `states` holds each site node's GPUs as its migpool reports them (a node
 * missing there is treated as blocked). Demand: every pending job not held, its `gpu` GRES per
 * type (mapped to profiles with the first site model that has the type).
 */
export function planSlurm(site: readonly SiteNode[], nodes: readonly SlurmNode[], jobs: readonly SlurmJob[], states: ReadonlyMap<string, readonly NodeGpuState[]>, force = false): SlurmPlan {
  const demand = new Map<string, number>();
  const unknownTypes: Record<string, number> = {};
  const models = [...new Map(site.map((s) => [s.model.name, s.model])).values()];
  for (const job of jobs.filter(waiting)) {
    for (const g of gpuItems(job)) {
      const profile = models.map((m) => profileOfGresType(g.type, m)).find((p) => p !== null) ?? null;
      if (profile === null) unknownTypes[g.type ?? 'gpu'] = (unknownTypes[g.type ?? 'gpu'] ?? 0) + g.count;
      else demand.set(profile, (demand.get(profile) ?? 0) + g.count);
    }
  }
  const byName = new Map(nodes.map((n) => [n.name, n]));
  const gpus: DemandGpu[] = [];
  const meta: { site: SiteNode; blocked: string; current: (readonly DemandInstance[] | null)[] }[] = [];
  for (const s of site) {
    const node = byName.get(s.name);
    const state = states.get(s.name);
    let blocked = blockedReason(node, force) ?? '';
    if (blocked === '' && state === undefined) blocked = 'its migpool did not report its GPUs';
    if (blocked === '' && state !== undefined && state.length !== s.count) blocked = `its migpool reports ${state.length} GPUs, the site file says ${s.count}`;
    const current = state ? [...state].sort((a, b) => a.index - b.index).map((g) => g.instances) : [];
    // Free slices of a node that stays: Slurm's totals less its use, per profile, laid on its GPUs in order.
    const free = new Map<string, number>();
    if (node) {
      for (const g of node.gres.filter((x) => x.name === 'gpu')) {
        const p = profileOfGresType(g.type, s.model);
        if (p !== null) free.set(p, (free.get(p) ?? 0) + g.count);
      }
      for (const g of node.gresUsed.filter((x) => x.name === 'gpu')) {
        const p = profileOfGresType(g.type, s.model);
        if (p !== null) free.set(p, (free.get(p) ?? 0) - g.count);
      }
    }
    current.forEach((layout, i) => {
      const gpuFree: Record<string, number> = {};
      const have = new Map<string, number>();
      if (layout === null) have.set(WHOLE_GPU, 1);
      else for (const inst of layout) have.set(inst.profile, (have.get(inst.profile) ?? 0) + 1);
      for (const [p, n] of have) {
        const left = Math.max(0, free.get(p) ?? 0);
        const here = Math.min(n, left);
        if (here > 0) gpuFree[p] = here;
        free.set(p, left - here);
      }
      gpus.push({ key: `${s.name}/${i}`, model: s.model, current: layout, changeable: blocked === '', free: gpuFree });
    });
    meta.push({ site: s, blocked, current });
  }
  const plan = planLayoutsForDemand(gpus, [...demand].map(([profile, count]): SliceDemand => ({ profile, count })));
  const planned = new Map(plan.gpus.map((g) => [g.key, g]));
  return {
    demand: Object.fromEntries(demand),
    served: plan.served,
    unserved: plan.unserved,
    unknownTypes,
    nodes: meta.map(({ site: s, blocked, current }) => {
      const after = current.map((layout, i) => planned.get(`${s.name}/${i}`)?.layout ?? layout);
      const changed = current.some((_, i) => planned.get(`${s.name}/${i}`)?.changed === true);
      return { name: s.name, model: s.model.name, changeable: blocked === '', blocked, current, planned: after, changed };
    }),
  };
}

/** A node's planned layouts as a mig-parted v1 config (one entry per GPU) named `label`. */
export function nodeMigPartedConfig(planned: readonly (readonly DemandInstance[] | null)[], label: string): MigPartedConfig {
  const entries = planned.map((layout, i): MigPartedEntry => {
    const counts: Record<string, number> = {};
    for (const inst of layout ?? []) counts[inst.profile] = (counts[inst.profile] ?? 0) + 1;
    const sorted = Object.fromEntries(Object.entries(counts).sort(([a], [b]) => (a < b ? -1 : 1)));
    return { devices: [i], 'mig-enabled': layout !== null, 'mig-devices': sorted };
  });
  return { version: 'v1', 'mig-configs': { [label]: entries } };
}

/** A layout in words: `2g.10gb+3x1g.5gb`, `whole GPU`. */
export function layoutText(layout: readonly DemandInstance[] | null): string {
  if (layout === null) return 'whole GPU';
  if (layout.length === 0) return 'MIG, empty';
  const counts = new Map<string, number>();
  for (const i of [...layout].sort((a, b) => a.start - b.start)) counts.set(i.profile, (counts.get(i.profile) ?? 0) + 1);
  return [...counts].map(([p, n]) => (n === 1 ? p : `${n}x${p}`)).join('+');
}
