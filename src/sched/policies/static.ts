import { badInput } from '../../errors.js';
import { GPU_MODELS } from '../../mig/catalog/index.js';
import { placeProfiles } from '../../mig/geometry.js';
import type { GiProfile, GpuModel } from '../../mig/types.js';
import type { ClusterView, Decision, GpuView, InstanceView, JobSpec, Policy, PolicyContext } from '../types.js';
import { canEverRunWhole, chain, fleetModels, idleInstancesOf, idleMigGpus, isSettled, Picker, reconfiguringGpus, profileAllows, SPEED_TIE, wholeGpusWith } from './common.js';

/** One term of a static layout: `count` instances of `profile` (a name as the user wrote it). */
export interface LayoutTerm {
  readonly profile: string;
  readonly count: number;
}

const PROFILE_START = /^\d+g\./i;

/**
 * Reads a static layout: `+`-separated terms, each `PROFILE` or `COUNTxPROFILE`
 * (`7x1g.5gb`, `3g.20gb+2g.10gb+1g.5gb+1g.5gb`, `1g.5gb+me+6x1g.5gb`: a `+me`/`+gfx` suffix stays with
 * its profile). Every profile must exist on some catalogued GPU.
 */
export function parseStaticLayout(text: string): LayoutTerm[] {
  const tokens = text.trim().split('+');
  const terms: string[] = [];
  for (const tok of tokens) {
    const t = tok.trim();
    const bare = t.replace(/^\d+\s*x\s*/i, '');
    if (terms.length > 0 && t !== '' && !PROFILE_START.test(bare)) terms[terms.length - 1] += `+${t}`;
    else terms.push(t);
  }
  const out: LayoutTerm[] = [];
  for (const term of terms) {
    const m = /^(?:(\d+)\s*x\s*)?(\d+g\.\S+)$/i.exec(term);
    if (!m || m[2] === undefined) throw badInput(`static layout '${text}': '${term}' is not PROFILE or COUNTxPROFILE; write e.g. static:7x1g.5gb or static:3g.20gb+2g.10gb+1g.5gb+1g.5gb`);
    const count = m[1] === undefined ? 1 : Number(m[1]);
    const profile = m[2].toLowerCase();
    if (count < 1 || count > 8) throw badInput(`static layout '${text}': ${count} x ${profile} is not a count a GPU can hold (1 to 8)`);
    if (!GPU_MODELS.some((g) => g.giProfiles.some((p) => p.name === profile))) {
      throw badInput(`static layout '${text}': no catalogued GPU offers profile '${profile}'; see 'migpool gpus' for the profiles of each GPU`);
    }
    out.push({ profile, count });
  }
  return out;
}

/**
 * The profile a layout term means on `model`: the same name, else the closest equivalent: the
 * plain profile (no `+me`/`-me` suffix) with as many compute slices, the smallest memory first.
 */
function profileOnModel(model: GpuModel, name: string): GiProfile | null {
  const exact = model.giProfiles.find((p) => p.name === name);
  if (exact) return exact;
  const slices = Number(/^(\d+)g\./.exec(name)?.[1]);
  const same = model.giProfiles.filter((p) => p.computeSlices === slices && !/[+-]/.test(p.name)).sort((a, b) => (a.memoryGiB ?? 0) - (b.memoryGiB ?? 0));
  return same[0] ?? null;
}

/** A layout resolved on one GPU model: instances (profile, start) in start order. */
export interface ResolvedLayout {
  readonly model: GpuModel;
  readonly instances: readonly { readonly profile: GiProfile; readonly start: number }[];
}

/**
 * Resolves a static layout on a GPU model (see profileOnModel for other models' names) and places
 * it. BAD_INPUT when a term has no equivalent on the model or the profiles do not fit together.
 */
export function resolveStaticLayout(terms: readonly LayoutTerm[], model: GpuModel, spec: string): ResolvedLayout {
  const profiles: GiProfile[] = [];
  for (const t of terms) {
    const p = profileOnModel(model, t.profile);
    if (!p) throw badInput(`static layout '${spec}': ${model.name} has no profile like ${t.profile} (offers ${model.giProfiles.map((q) => q.name).join(', ')})`);
    for (let k = 0; k < t.count; k++) profiles.push(p);
  }
  const placed = placeProfiles(model, profiles);
  if (!placed.valid) throw badInput(`static layout '${spec}' does not fit on ${model.name}: ${placed.reason}`);
  return { model, instances: [...placed.placements].sort((a, b) => a.start - b.start).map((i) => ({ profile: i.profile, start: i.start })) };
}

interface ProfileKey {
  readonly model: GpuModel;
  readonly profile: GiProfile;
}

function sameLayout(g: GpuView, layout: ResolvedLayout): boolean {
  return g.instances.length === layout.instances.length && layout.instances.every((w) => g.instances.some((i) => i.start === w.start && i.profile.name === w.profile.name));
}

/**
 * `static:LAYOUT`: every GPU is partitioned once to one fixed MIG layout and keeps it.
 * - At the start every idle GPU is re-partitioned to the layout (resolved per GPU model: a profile
 *   the model lacks is replaced by its plain profile with as many compute slices; a layout that
 *   does not fit a model is a BAD_INPUT error at the first decision).
 * - Each single-GPU job, in queue order, takes the idle instance that suits it best: its memory
 *   holds the job (and, if the job asked for a profile, it has at least that profile's compute
 *   slices), the performance model gives the highest speed, the smallest instance among equals;
 *   among instances of that profile, one on a GPU already running a job (to keep whole GPUs
 *   free). A job with no instance free waits; later jobs may go ahead of it.
 * - Jobs that need whole GPUs (multi-GPU jobs, and single-GPU jobs no instance of the layout can
 *   hold) are served first come first served: the first one takes GPUs taken out of the layout
 *   (MIG off) and, when there are too few, turns MIG off on GPUs with every instance idle (a
 *   re-partition each way). While it waits, single-GPU jobs go only to GPUs already running a
 *   job, so that it is not starved. GPUs with MIG off that no such job needs go back to the layout.
 */
export function staticPolicy(layoutSpec: string, name = `static:${layoutSpec}`): Policy {
  const terms = parseStaticLayout(layoutSpec);
  const layouts = new Map<string, ResolvedLayout>();
  const layoutOf = (model: GpuModel): ResolvedLayout => {
    let l = layouts.get(model.name);
    if (!l) {
      l = resolveStaticLayout(terms, model, layoutSpec);
      layouts.set(model.name, l);
    }
    return l;
  };
  const keysCache = new WeakMap<readonly GpuView[], readonly ProfileKey[]>();
  const checked = new WeakSet<readonly GpuView[]>();

  const keysOf = (view: ClusterView): readonly ProfileKey[] => {
    let keys = keysCache.get(view.gpus);
    if (!keys) {
      const list: ProfileKey[] = [];
      for (const model of fleetModels(view)) {
        const seen = new Set<string>();
        for (const i of layoutOf(model).instances) {
          if (seen.has(i.profile.name)) continue;
          seen.add(i.profile.name);
          list.push({ model, profile: i.profile });
        }
      }
      keys = list;
      keysCache.set(view.gpus, keys);
    }
    return keys;
  };

  const toLayout = (g: GpuView): Decision => ({
    kind: 'repartition',
    gpu: g.id,
    layout: layoutOf(g.model).instances.map((i) => ({ profile: i.profile.name, start: i.start })),
  });

  const fitsInstance = (ctx: PolicyContext, job: JobSpec, k: ProfileKey): boolean =>
    ctx.fits(job, { kind: 'instance', model: k.model, profile: k.profile.name }) && profileAllows(job, k.profile.name, k.model);

  return {
    name,
    decide(view, ctx): Decision[] {
      const decisions: Decision[] = [];
      const keys = keysOf(view);
      const needsWhole = (job: JobSpec): boolean => job.gpus > 1 || !keys.some((k) => fitsInstance(ctx, job, k));

      // Once per fleet: MIG-on GPUs with another layout go to ours when idle.
      if (!checked.has(view.gpus)) {
        checked.add(view.gpus);
        for (const g of idleMigGpus(view)) if (!sameLayout(g, layoutOf(g.model))) decisions.push(toLayout(g));
      }

      // Jobs that need whole GPUs, first come first served.
      const off = [...wholeGpusWith(view, 0)];
      let offUsed = 0;
      let pendingOff = 0;
      for (const g of reconfiguringGpus(view)) if (!g.migEnabled) pendingOff++;
      let reservedFor = 0;
      for (const job of view.queue) {
        if (!needsWhole(job) || !canEverRunWhole(view, ctx, job)) continue;
        const fits = (g: GpuView): boolean => ctx.fits(job, { kind: 'whole', model: g.model });
        const usable = off.slice(offUsed).filter(fits);
        if (usable.length >= job.gpus) {
          const take = usable.slice(0, job.gpus);
          const taken = new Set(take);
          const rest = off.slice(offUsed).filter((g) => !taken.has(g));
          off.length = offUsed;
          off.push(...take, ...rest);
          offUsed += job.gpus;
          decisions.push({ kind: 'start-on-gpus', job: job.id, gpus: take.map((g) => g.id), sharing: 'exclusive' });
          continue;
        }
        reservedFor = job.gpus;
        let missing = job.gpus - usable.length - pendingOff;
        if (missing > 0) {
          for (const g of idleMigGpus(view)) {
            if (missing <= 0) break;
            if (!fits(g) || !isSettled(g, view.now)) continue;
            decisions.push({ kind: 'repartition', gpu: g.id, layout: null });
            missing--;
          }
        }
        break;
      }
      // MIG-off GPUs nobody waits for go back to the layout.
      const spare = off.slice(offUsed);
      for (const g of spare.slice(reservedFor)) decisions.push(toLayout(g));
      const reserved = reservedFor > 0;

      // Single-GPU jobs on the best idle instance.
      const pickers = new Map<ProfileKey, Picker<InstanceView>>();
      const left = new Map<ProfileKey, number>();
      let total = 0;
      for (const k of keys) {
        const [onBusy, onIdle] = idleInstancesOf(view, k.model.name, k.profile.name);
        pickers.set(k, new Picker(reserved ? onBusy : chain(onBusy, onIdle)));
        const n = onBusy.size + (reserved ? 0 : onIdle.size);
        left.set(k, n);
        total += n;
      }
      for (const job of view.queue) {
        if (total === 0) break;
        if (needsWhole(job)) continue;
        let best: ProfileKey | null = null;
        let bestSpeed = 0;
        for (const k of keys) {
          if ((left.get(k) ?? 0) === 0 || !fitsInstance(ctx, job, k)) continue;
          const s = ctx.speedOn(job, { kind: 'instance', model: k.model, profile: k.profile.name });
          const better =
            best === null ||
            s > bestSpeed * (1 + SPEED_TIE) ||
            (s >= bestSpeed * (1 - SPEED_TIE) && (k.profile.computeSlices < best.profile.computeSlices || (k.profile.computeSlices === best.profile.computeSlices && (k.profile.memoryGiB ?? 0) < (best.profile.memoryGiB ?? 0))));
          if (better) {
            best = k;
            bestSpeed = s;
          }
        }
        if (!best) continue;
        const inst = pickers.get(best)?.take();
        if (!inst) continue;
        left.set(best, (left.get(best) ?? 1) - 1);
        total--;
        decisions.push({ kind: 'start-on-instance', job: job.id, gpu: inst.gpu, start: inst.start });
      }
      return decisions;
    },
  };
}
