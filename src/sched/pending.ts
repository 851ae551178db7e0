import type { GiProfile, GpuModel } from '../mig/types.js';
import type { ClusterView, GpuView, InstanceView, JobSpec, PolicyContext } from './types.js';
import { memoryOf } from './context.js';
import { durationText } from './duration-text.js';
import { canEverRun, expectedRemaining, expectedWork, foreignPidsOf, foreignText, memoryNeed, profileAllows } from './policies/common.js';

/**
 * Why each queued job waits, in words, from the view alone (no policy's private reasoning): the
 * generic answer to "why is my job waiting?", which a policy's own `explain` may refine. Pure.
 *
 * In order, the first that holds: it does not fit any GPU here; a multi-GPU job waits for N whole
 * GPUs (K idle; with K >= N the policy chose not to start it); an idle slice or GPU that suits the
 * job is there, so the policy chose to keep it waiting (behind higher-priority jobs, or in line);
 * a GPU is being re-partitioned; a job that asked for exactly one profile waits for such a slice
 * (held by job X); idle slices are there but too small for the job, and then either a GPU's idle
 * slices could be re-cut into one that holds it (the policy has not) or which busy jobs stand in
 * the way of such a slice (whether they may be moved, when they are expected to end); else all is
 * busy.
 *
 * A policy's own words (`own`, from its `explain`) stand for the jobs they name, with the idle
 * slices beside a job added where its words leave them out.
 *
 * @param policy the policy's name, for the reasons that are its choice
 */
export function explainPending(view: ClusterView, ctx: PolicyContext, policy = 'the policy', own?: ReadonlyMap<string, string>, recutRule?: string): Map<string, string> {
  const out = new Map<string, string>();
  const settled = (g: GpuView) => g.busyUntil === null || g.busyUntil <= view.now;
  const idleGpus = view.gpus.filter((g) => settled(g) && g.wholeGpuJobs.length === 0 && foreignPidsOf(g).length === 0 && g.instances.every((i) => i.job === null && foreignPidsOf(i).length === 0));
  const foreignGpus = view.gpus.filter((g) => foreignPidsOf(g).length > 0);
  const changing = view.gpus.filter((g) => !settled(g)).map((g) => g.id);
  const holders = new Map<string, string[]>();
  for (const g of view.gpus) for (const i of g.instances) if (i.job !== null) holders.set(i.profile.name, [...(holders.get(i.profile.name) ?? []), i.job]);
  const idleSlices = view.gpus.filter(settled).flatMap((g) => g.instances.filter((i) => i.job === null && foreignPidsOf(i).length === 0).map((i) => ({ g, i })));
  const foreignSlices = view.gpus.flatMap((g) => g.instances.filter((i) => foreignPidsOf(i).length > 0).map((i) => ({ g, i })));
  const foregroundQueued = view.queue.filter((j) => j.priority === 'foreground').length;
  const by = policy === 'the policy' ? policy : `policy ${policy}`;
  let foregroundAhead = 0;
  let ahead = 0;
  const runnable = new Map<string, boolean>();
  for (const job of view.queue) {
    const key = `${job.gpus}|${job.profile ?? ''}|${job.exactProfile === true}|${job.memoryGiB ?? ''}|${job.workload.name}`;
    let ok = runnable.get(key);
    if (ok === undefined) runnable.set(key, (ok = canEverRun(view, ctx, job)));
    const mine = own?.get(job.id);
    out.set(job.id, withForeign(job, mine === undefined ? reason(job, ok, job.priority === 'foreground' ? foregroundAhead : ahead) : withIdle(job, mine)));
    if (job.priority === 'foreground') foregroundAhead++;
    ahead++;
  }
  return out;

  /**
   * The words with the GPUs and slices that would hold the job but run processes migpool did not
   * start: for a whole-GPU job, a MIG-off GPU that runs some, and a MIG GPU one of whose slices
   * does (it cannot go back to MIG off under them); for a slice job, such a slice, and a MIG-off
   * GPU that runs some (it cannot be cut into slices under them).
   */
  function withForeign(job: JobSpec, words: string): string {
    if (foreignGpus.length === 0 && foreignSlices.length === 0) return words;
    const wholeOk = !(job.profile !== null && job.exactProfile === true);
    const whole = wholeOk ? foreignGpus.filter((g) => ctx.fits(job, { kind: 'whole', model: g.model })) : [];
    const wholeMig = wholeOk ? foreignSlices.filter(({ g }) => ctx.fits(job, { kind: 'whole', model: g.model })).map(({ i }) => i) : [];
    // A job of unknown memory that named no profile is put on no slice (see reason()): no slice holds it.
    const onSlices = job.gpus === 1 && !(memoryOf(job) === null && job.profile === null);
    const slices = onSlices ? foreignSlices.filter(({ g, i }) => suits(job, g.model, i.profile)).map(({ i }) => i) : [];
    const uncut = onSlices ? foreignGpus.filter((g) => g.model.giProfiles.some((p) => suits(job, g.model, p))) : [];
    const held = [...new Set<GpuView | InstanceView>([...whole, ...uncut, ...wholeMig, ...slices])];
    if (held.length === 0) return words;
    const one = held.length === 1 && foreignPidsOf(held[0]!).length === 1;
    return `${words}; ${held.map(foreignText).join('; ')}: it starts no job there until ${one ? 'it ends' : 'they end'}`;
  }

  function reason(job: JobSpec, fits: boolean, before: number): string {
    const inLine = aheadInLine(before);
    if (!fits) return job.exactProfile === true ? `does not fit any GPU here: no GPU here offers ${job.profile} (or its memory does not hold the job)` : 'does not fit any GPU here';
    if (job.gpus > 1) {
      const idle = idleGpus.filter((g) => ctx.fits(job, { kind: 'whole', model: g.model })).length;
      return `waiting for ${job.gpus} whole GPUs (${idle} idle)${idle >= job.gpus ? `: ${by} did not start it in the last pass` : ''}`;
    }
    const usable = usableNow(job);
    if (usable !== '') {
      if (job.priority === 'background' && foregroundQueued > 0) {
        return `behind ${foregroundQueued} job${foregroundQueued === 1 ? '' : 's'} of higher priority: idle ${usable} would hold it, but ${by} serves those first`;
      }
      return `waiting: idle ${usable} would hold it, but ${by} did not start it in the last pass; ${inLine}`;
    }
    if (changing.length > 0) return `re-partitioning GPU ${changing.join(', ')}`;
    if (job.exactProfile === true && job.profile !== null) {
      const held = holders.get(job.profile) ?? [];
      return `waiting for a ${job.profile} slice (it asked for exactly that profile${held.length > 0 ? `; held by job ${held.slice(0, 3).join(', ')}${held.length > 3 ? ', ...' : ''}` : ''})`;
    }
    if (idleSlices.length === 0) return `waiting for a free slice or GPU (all busy; ${inLine})`;
    if (memoryOf(job) === null && job.profile === null) {
      return `waiting for a whole GPU: its memory is unknown, so no slice is chosen for it on a guess (idle: ${countList(idleSlices.map((x) => x.i.profile.name))}); give resources.memory or a profile to let it use one`;
    }
    return `waiting for a whole GPU or a larger slice: the idle slices (${countList(idleSlices.map((x) => x.i.profile.name))}) are too small for it${needOf(job)}; ${larger(job, inLine)}`;
  }

  /**
   * The policy's words for a single-GPU job, with what the view says of the idle slices beside it
   * when the words do not mention them: why those slices do not serve it (too small, and what a
   * big enough one waits for), or that they would and the policy keeps it off them.
   */
  function withIdle(job: JobSpec, words: string): string {
    if (job.gpus > 1 || idleSlices.length === 0 || /\bidle\b/i.test(words)) return words;
    const usable = usableNow(job);
    if (usable !== '') return `${words}; idle ${usable} would hold it: ${by} keeps it off them`;
    if (job.exactProfile === true) return words;
    // The policy's words say what goes ahead of it in its own order; the queue's is arrival order.
    return `${words}; the idle slices (${countList(idleSlices.map((x) => x.i.profile.name))}) are too small for it${needOf(job)}; ${larger(job, jobsBefore(view.queue.indexOf(job), 'queued before it'))}`;
  }

  /** The idle resources that would hold the job now, in words ('' for none). */
  function usableNow(job: JobSpec): string {
    const fitting = idleSlices.filter(({ g, i }) => suits(job, g.model, i.profile));
    const slices = fitting.map(({ i }) => i.profile.name);
    const whole = job.exactProfile === true ? 0 : idleGpus.filter((g) => ctx.fits(job, { kind: 'whole', model: g.model })).length;
    // What a slice costs the job, a fact a policy weighs (a whole GPU may be worth waiting for).
    const speed = Math.max(0, ...fitting.map(({ g, i }) => ctx.speedOn(job, { kind: 'instance', model: g.model, profile: i.profile.name }) / Math.max(ctx.speedOn(job, { kind: 'whole', model: g.model }), 1e-9)));
    const slow = whole === 0 && slices.length > 0 && speed < 0.995 ? ` (at ${speed.toFixed(2)}x its speed on a whole GPU)` : '';
    const parts = [...(slices.length > 0 ? [`${countList(slices)} slice${slices.length === 1 ? '' : 's'}${slow}`] : []), ...(whole > 0 ? [`${whole} whole GPU${whole === 1 ? '' : 's'}`] : [])];
    return parts.join(' and ');
  }

  /** Where a slice that holds the job could come from: a re-cut of idle slices, or which busy jobs stand in the way. */
  function larger(job: JobSpec, inLine: string): string {
    let best: { g: GpuView; p: GiProfile; busy: InstanceView[] } | null = null;
    for (const g of view.gpus) {
      if (!settled(g) || !g.migEnabled || g.wholeGpuJobs.length > 0) continue;
      for (const p of g.model.giProfiles) {
        if (!suits(job, g.model, p)) continue;
        for (const at of p.placements) {
          const busy = g.instances.filter((i) => i.job !== null && i.start < at.start + at.size && at.start < i.start + i.size);
          if (best === null || busy.length < best.busy.length || (busy.length === best.busy.length && p.memorySlices < best.p.memorySlices)) best = { g, p, busy };
        }
      }
    }
    if (best === null) return `no GPU here can be cut into a slice that holds it: it waits for a whole GPU (${inLine})`;
    if (best.busy.length === 0) return `GPU ${best.g.id}'s idle slices could be re-cut into a ${best.p.name} that holds it, which ${by} has not chosen to do${recutRule === undefined ? '' : `: ${recutRule}`}`;
    const jobs = best.busy.map((i) => i.job as string);
    const fixed = jobs.filter((id) => view.running.get(id)?.spec.preemptible === false);
    const ends = jobs.map((id) => {
      const r = view.running.get(id);
      return r ? expectedRemaining(r.spec, r.done) / Math.max(r.speed, 1e-9) : Number.NaN;
    });
    const last = Math.max(...ends);
    const when = Number.isFinite(last) ? `, expected to end in about ${durationText(last, { rough: true })} ${basisOf(jobs)}` : '';
    const moved = fixed.length === 0 ? '' : fixed.length === jobs.length ? `, which may not be moved` : ` (job ${fixed.join(', ')} may not be moved)`;
    return `a ${best.p.name} on GPU ${best.g.id} needs the slice${jobs.length === 1 ? '' : 's'} of job ${jobs.join(', ')}${moved}${when}`;
  }

  /**
   * What the expected end rests on (expectedRemaining): the jobs' estimates, the prior for a job
   * that gave none (UNKNOWN_ESTIMATE_SECONDS), or, past either, as long again as it has run.
   */
  function basisOf(jobs: readonly string[]): string {
    const kinds = new Set(
      jobs.map((id) => {
        const r = view.running.get(id);
        if (!r) return 'estimate';
        if (r.done >= expectedWork(r.spec)) return 'overrun';
        return r.spec.estimate === null ? 'prior' : 'estimate';
      }),
    );
    const one = jobs.length === 1;
    if (kinds.size > 1) return 'by their estimates (where given; else a one-hour prior, and a job past it runs as long again as it has)';
    if (kinds.has('prior')) return `by a one-hour prior (${one ? 'it gave' : 'they gave'} no estimate)`;
    if (kinds.has('overrun')) return `if ${one ? 'it runs' : 'they run'} as long again as so far (past ${one ? 'its estimate' : 'their estimates'})`;
    return one ? 'by its estimate' : 'by their estimates';
  }

  function suits(job: JobSpec, model: GpuModel, p: GiProfile): boolean {
    return profileAllows(job, p.name, model) && ctx.fits(job, { kind: 'instance', model, profile: p.name });
  }
}

/** `it needs 15.5 GiB` where the job's memory need is known, else ''. */
function needOf(job: JobSpec): string {
  const gib = memoryNeed(job);
  const floor = job.profile !== null ? `at least a ${job.profile}` : null;
  if (gib === null) return floor === null ? '' : ` (it asked for ${floor})`;
  return ` (it needs ${Number(gib.toFixed(1))} GiB${floor === null ? '' : ` and ${floor}`})`;
}

function aheadInLine(n: number): string {
  return jobsBefore(n, 'ahead in line');
}

/** `3 jobs ahead in line`, `1 job queued before it`. */
function jobsBefore(n: number, where: string): string {
  return `${n} job${n === 1 ? '' : 's'} ${where}`;
}

/** `2x1g.5gb, 1x2g.10gb` in first-seen order. */
function countList(names: readonly string[]): string {
  const n = new Map<string, number>();
  for (const x of names) n.set(x, (n.get(x) ?? 0) + 1);
  return [...n].map(([k, v]) => `${v}x${k}`).join(', ');
}

