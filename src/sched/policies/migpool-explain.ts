import type { ClusterView, PolicyContext } from '../types.js';
import { historyOf } from './common.js';

/** Why migpool left a queued job waiting in its last pass. */
export type WaitReason =
  /** No GPU of the fleet holds it. */
  | { readonly kind: 'never' }
  /** Too few whole GPUs were left after the jobs ahead of it (`free` of `gpus`). */
  | { readonly kind: 'whole'; readonly gpus: number; readonly free: number }
  /** GPUs are being held for a job ahead of it: a starving one, or a big one MIG GPUs are cleared for (`big`). */
  | { readonly kind: 'held'; readonly by: string; readonly big?: boolean }
  /** A big job that waited its turn: MIG GPUs `on` are being cleared into whole GPUs for it (`free` whole GPUs of `gpus` free). */
  | { readonly kind: 'clearing'; readonly gpus: number; readonly free: number; readonly on: readonly number[] }
  /** It has a slice being created (on `gpu` when known). */
  | { readonly kind: 'slice-pending'; readonly gpu?: number }
  /** It asked for exactly one profile and no such slice is idle. */
  | { readonly kind: 'profile'; readonly profile: string }
  /** It is at the preemption cap and jobs with less attained service wait for whole GPUs. */
  | { readonly kind: 'capped' }
  /** It was given resources that were not ready yet: it starts on the next pass. */
  | { readonly kind: 'next' };

/**
 * The pending reason of each queued job migpool has seen, in words, from its last pass: what it
 * waits for and what is ahead of it. Jobs the policy never looked at are left out (the service
 * gives them the generic explanation of src/sched/pending.ts).
 */
export function explainWaiting(
  view: ClusterView,
  _ctx: PolicyContext,
  reasonOf: (id: string) => WaitReason | null,
  blocker: string | null,
  background: { readonly aged: (id: string) => boolean; readonly ageSeconds: number } = { aged: () => false, ageSeconds: Infinity },
  /** Big jobs' turns: whether a big job of the last level waits for its turn ('waiting') or has it ('now'); null: neither. */
  turn: { readonly of: (id: string) => 'waiting' | 'now' | null; readonly gpus: number; readonly afterSeconds: number; readonly clearGpus?: number; readonly clearAfterSeconds?: number; readonly clearMaxGpus?: number } = { of: () => null, gpus: Infinity, afterSeconds: Infinity },
): Map<string, string> {
  const age = background.ageSeconds;
  const until = age === Infinity ? '' : ` until it has waited ${age % 86_400 === 0 ? `${age / 86_400} day${age === 86_400 ? '' : 's'}` : `${Math.round(age / 3600)} h`}`;
  const clearWho = turn.clearGpus === undefined || turn.clearGpus >= view.gpus.length ? 'every GPU here' : `${turn.clearGpus}+ GPUs`;
  const clearAfter = turn.clearAfterSeconds ?? turn.afterSeconds;
  const clearMax = turn.clearMaxGpus ?? Infinity;
    /** Who has MIG GPUs cleared for it, in words: "a job that needs 4+ GPUs[, has waited 12 h] and lacks only one whole GPU". */
  const clearParts = [`needs ${clearWho}`];
  if (clearAfter > 0) clearParts.push(`has waited ${Math.round(clearAfter / 3600)} h`);
  if (clearMax !== Infinity) clearParts.push(`lacks ${clearMax === 1 ? 'only one whole GPU' : `at most ${clearMax} whole GPUs`}`);
  const clearRule = `a job that ${clearParts.length === 1 ? clearParts[0] : `${clearParts.slice(0, -1).join(', ')} and ${clearParts[clearParts.length - 1]}`}`;
  const out = new Map<string, string>();
  for (const job of view.queue) {
    const r = reasonOf(job.id);
    if (r === null) continue;
    const attained = Math.round(historyOf(view, job.id).attainedGpuSeconds);
    const bg =
      job.priority !== 'background'
        ? ''
        : background.aged(job.id)
          ? ' (background, but it has waited long enough to rank as a foreground job)'
          : ` (background: runs on what foreground jobs leave${until})`;
    let text: string;
    switch (r.kind) {
      case 'never':
        text = job.exactProfile === true ? `does not fit any GPU here: no GPU here offers ${job.profile} (or its memory does not hold the job)` : 'does not fit any GPU here';
        break;
      case 'whole':
        text =
          `waiting for ${r.gpus} whole GPU${r.gpus === 1 ? '' : 's'} (${r.free} left after the jobs ahead of it: jobs with less attained service, ` +
          `or running ones in their minimum run or past their preemption limit; it has ${attained} GPU-seconds)`;
        if (blocker === job.id) text += '; it has waited longest: GPUs are held for it as they free';
        else {
          const tn = turn.of(job.id);
          const rule = `jobs of ${turn.gpus}+ GPUs that ran long take turns, first come first served`;
          if (tn === 'waiting') text += `; ${rule}: its turn comes once it has waited ${Math.round(turn.afterSeconds / 3600)} h`;
          else if (tn === 'now') text += `; ${rule}: its turn has come, and it goes ahead of the big running jobs that came after it once their minimum runs end`;
        }
        break;
      case 'held':
        text = r.big === true ? `GPUs are held for job ${r.by}: ${clearRule} has MIG GPUs cleared into whole GPUs for it` : `GPUs are held for job ${r.by}, which has waited longest and goes first`;
        break;
      case 'clearing': {
        const on = r.on.length === 1 ? `GPU ${r.on[0]}` : `GPUs ${r.on.join(', ')}`;
        text =
          `waiting for ${r.gpus} whole GPUs (${r.free} free now); ${clearRule} has MIG GPUs cleared for it: ` +
          `the slice jobs on ${on} (all past their first threshold) are checkpointed and requeued, and ${r.on.length === 1 ? 'it goes' : 'they go'} back to whole GPUs; no whole GPU goes to a job behind it meanwhile`;
        break;
      }
      case 'slice-pending':
        text = `waiting for a MIG slice being created${r.gpu === undefined ? '' : ` on GPU ${r.gpu}`} (jobs wait for whole GPUs, so young jobs share GPUs)`;
        break;
      case 'profile':
        text = `waiting for a ${r.profile} slice (none idle)`;
        break;
      case 'capped': {
        const n = historyOf(view, job.id).preemptions;
        text =
          `it has been preempted ${n === 1 ? 'once' : `${n} times`}, the most allowed, so once started it keeps its GPUs to its end; ` +
          `it waits until no job with less attained service waits for whole GPUs (it has ${attained} GPU-seconds)`;
        break;
      }
      case 'next':
        text = 'starts in the next scheduling pass (its GPU is being prepared)';
        break;
    }
    out.set(job.id, text + bg);
  }
  return out;
}
