import type { GpuModel } from '../../mig/types.js';
import type { ClusterView, GpuView, InstanceView, JobSpec, PolicyContext } from '../types.js';
import { chain, fleetModels, idleInstancesOf, isInstanceUsable, Picker, profileAllows, reconfiguringGpus } from './common.js';

/**
 * ASSUMPTION (a design choice, not a measurement): packing single-GPU jobs onto a GPU's smallest
 * slices must give at least this much more work per second than one job on the whole GPU to be
 * worth slowing each of them down. The performance model gives 3.2x for `small` on seven A100
 * 1g.5gb slices (7 x 0.45); `medium` and `large` do not fit a 1g.5gb slice.
 */
export const PACK_GAIN = 1.5;

/** One instance of a layout. */
export interface LayoutEntry {
  readonly profile: string;
  readonly start: number;
}

/** A plain profile (no `+me`/`-me` variants) smaller than the whole GPU. */
function plainSlices(model: GpuModel): GpuModel['giProfiles'] {
  return model.giProfiles.filter((p) => !/[+-]/.test(p.name) && p.computeSlices < model.computeSlices);
}

/**
 * As many instances of `profile` as a GPU of `model` holds: placements taken in the order the
 * driver lists them (src/mig/catalog, from `nvidia-smi mig -lgipp`) where they overlap no memory
 * slice already taken, while compute slices last. Empty for a profile the model does not offer.
 */
export function denseLayout(model: GpuModel, profile: string): LayoutEntry[] {
  const p = model.giProfiles.find((q) => q.name === profile);
  if (!p) return [];
  const taken: { start: number; end: number }[] = [];
  const out: LayoutEntry[] = [];
  let compute = 0;
  for (const pl of p.placements) {
    if (compute + p.computeSlices > model.computeSlices || out.length >= p.maxCount) break;
    const end = pl.start + pl.size;
    if (taken.some((t) => pl.start < t.end && t.start < end)) continue;
    taken.push({ start: pl.start, end });
    out.push({ profile: p.name, start: pl.start });
    compute += p.computeSlices;
  }
  return out;
}

const packCache = new WeakMap<GpuModel, { profile: string; count: number } | null>();
/**
 * The profile migpool packs young jobs onto on `model`: the plain profile the most instances of
 * which fit one GPU (1g.5gb on an A100-40GB: seven), fewest compute slices on a tie; null for a
 * model without MIG.
 */
export function packProfile(model: GpuModel): { profile: string; count: number } | null {
  let best = packCache.get(model);
  if (best === undefined) {
    best = null;
    for (const p of plainSlices(model)) {
      const count = denseLayout(model, p.name).length;
      if (count > 1 && (best === null || count > best.count)) best = { profile: p.name, count };
    }
    packCache.set(model, best);
  }
  return best;
}

/**
 * Whether packing pays for a job on `model`: it may run on the pack profile (memory, the profile
 * it asked for) and a full GPU of such slices does at least PACK_GAIN times its work alone.
 */
export function packs(job: JobSpec, model: GpuModel, ctx: PolicyContext): boolean {
  let byModel = packsCache.get(job);
  if (!byModel) packsCache.set(job, (byModel = new Map()));
  let v = byModel.get(model);
  if (v === undefined) byModel.set(model, (v = packsNow(job, model, ctx)));
  return v;
}
const packsCache = new WeakMap<JobSpec, Map<GpuModel, boolean>>();

function packsNow(job: JobSpec, model: GpuModel, ctx: PolicyContext): boolean {
  const pack = packProfile(model);
  if (!pack || job.gpus !== 1 || !profileAllows(job, pack.profile, model)) return false;
  const on = { kind: 'instance', model, profile: pack.profile } as const;
  return ctx.fits(job, on) && pack.count * ctx.speedOn(job, on) >= PACK_GAIN;
}

/** A profile that suits a job, with its picker key. */
interface Suit {
  readonly model: GpuModel;
  readonly profile: string;
  readonly key: string;
}
const suitCache = new WeakMap<JobSpec, readonly Suit[]>();
const sizeCache = new WeakMap<GpuModel, GpuModel['giProfiles']>();
/** A model's profiles, fewest compute slices first, then least memory. */
function bySize(model: GpuModel): GpuModel['giProfiles'] {
  let out = sizeCache.get(model);
  if (!out) sizeCache.set(model, (out = [...model.giProfiles].sort((a, b) => a.computeSlices - b.computeSlices || (a.memoryGiB ?? 0) - (b.memoryGiB ?? 0))));
  return out;
}

/** An idle instance handed to a job. */
export interface SliceGrant {
  readonly gpu: number;
  readonly start: number;
  readonly profile: string;
}

/**
 * The idle slices of one pass: instances that jobs may start on now (handed out once each, on
 * GPUs already running jobs first, the smallest that suits a job first), and slices being created
 * (by a re-partition still in progress, or one decided in this pass) that jobs wait for.
 */
export class SlicePool {
  private readonly pickers = new Map<string, Picker<InstanceView>>();
  /** Idle slices being created (not usable yet), per `model|profile`. */
  private readonly pending = new Map<string, { readonly model: GpuModel; readonly profile: string; n: number }>();
  /** GPUs an idle instance of which was handed out or is awaited (not to be turned back to whole). */
  readonly wanted = new Set<number>();
  /** GPUs being cleared into whole GPUs: their idle instances are not handed out. */
  readonly closed = new Set<number>();
  private readonly models: readonly GpuModel[];
  /** Idle usable instances not handed out yet (all profiles). */
  private idleLeft = 0;
  /** Slices being created not promised yet (all profiles). */
  private pendingLeft = 0;

  constructor(
    private readonly view: ClusterView,
    private readonly ctx: PolicyContext,
  ) {
    this.models = fleetModels(view).filter((m) => packProfile(m) !== null);
    for (const m of this.models) {
      for (const p of m.giProfiles) {
        const [busy, idle] = idleInstancesOf(view, m.name, p.name);
        this.idleLeft += busy.size + idle.size;
      }
    }
    for (const g of reconfiguringGpus(view)) {
      if (!g.migEnabled) continue;
      for (const i of g.instances) {
        if (i.job !== null || isInstanceUsable(g, i, view.now)) continue;
        this.addPending(g.model, i.profile.name, 1);
        this.wanted.add(g.id);
      }
    }
  }

  /** Whether the fleet has any MIG-capable model. */
  get any(): boolean {
    return this.models.length > 0;
  }

  /** An idle, usable instance that suits the job (profile asked, memory), or null. */
  take(job: JobSpec): SliceGrant | null {
    if (this.idleLeft === 0) return null;
    for (const { model, profile, key } of this.suiting(job)) {
      const inst = this.closed.size === 0 ? this.picker(model.name, profile, key).take() : this.picker(model.name, profile, key).take((i) => !this.closed.has(i.gpu));
      if (inst) {
        this.idleLeft--;
        this.wanted.add(inst.gpu);
        return { gpu: inst.gpu, start: inst.start, profile };
      }
    }
    return null;
  }

  /** The profiles that suit a job (it may run there, it fits), smallest first, cached per job. */
  private suiting(job: JobSpec): readonly Suit[] {
    let out = suitCache.get(job);
    if (!out) {
      const list: Suit[] = [];
      for (const m of this.models) {
        for (const p of bySize(m)) {
          if (profileAllows(job, p.name, m) && this.ctx.fits(job, { kind: 'instance', model: m, profile: p.name })) list.push({ model: m, profile: p.name, key: `${m.name}|${p.name}` });
        }
      }
      suitCache.set(job, (out = list));
    }
    return out;
  }

  /** Takes a slice being created that suits the job; false when none. */
  takePending(job: JobSpec): boolean {
    if (this.pendingLeft === 0) return false;
    for (const e of this.pending.values()) {
      if (e.n > 0 && profileAllows(job, e.profile, e.model) && this.ctx.fits(job, { kind: 'instance', model: e.model, profile: e.profile })) {
        e.n--;
        this.pendingLeft--;
        return true;
      }
    }
    return false;
  }

  /**
   * Where a job could have a GPU cut for it: for a job that asked for exactly one profile, the
   * first model offering it that holds the job; else the first model it packs onto; or null.
   */
  cutFor(job: JobSpec): { model: GpuModel; profile: string } | null {
    if (job.exactProfile === true && job.profile !== null) {
      const m = this.models.find((x) => x.giProfiles.some((p) => p.name === job.profile) && this.ctx.fits(job, { kind: 'instance', model: x, profile: job.profile! }));
      return m ? { model: m, profile: job.profile } : null;
    }
    const m = this.models.find((x) => packs(job, x, this.ctx));
    return m ? { model: m, profile: (packProfile(m) as { profile: string }).profile } : null;
  }

  /** Notes `n` slices of `profile` being created on a GPU of `model` (for jobs to wait for). */
  addPending(model: GpuModel, profile: string, n: number): void {
    this.pendingLeft += n;
    const key = `${model.name}|${profile}`;
    const e = this.pending.get(key);
    if (e) e.n += n;
    else this.pending.set(key, { model, profile, n });
  }

  private picker(model: string, profile: string, key: string): Picker<InstanceView> {
    let p = this.pickers.get(key);
    if (!p) {
      const [busy, idle] = idleInstancesOf(this.view, model, profile);
      p = new Picker<InstanceView>(chain(busy, idle));
      this.pickers.set(key, p);
    }
    return p;
  }
}

/** The GPU with this id. */
export function gpuAt(view: ClusterView, id: number): GpuView {
  return (view.gpus[id]?.id === id ? view.gpus[id] : view.gpus.find((g) => g.id === id)) as GpuView;
}
