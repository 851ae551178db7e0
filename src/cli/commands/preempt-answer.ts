import type { JobRecord } from '../../store/types.js';

/**
 * What `migpool preempt` says about the service's answer: asked to stop, or why this preempt moved
 * nothing (the job is being cancelled, is requeued already, or started again since it was asked;
 * see the service's preempt).
 */
export function preemptAnswer(job: JobRecord): string {
  const who = `job ${job.id} (${job.spec.name})`;
  if (job.cancelRequested) return `${who} is being cancelled; not moved`;
  if (job.reason === 'preempting') return `asked ${who} to stop; it will be requeued`;
  if (job.state === 'queued') return `${who} is requeued already${job.reason ? ` (${job.reason})` : ''}; not moved again`;
  return `${who} started attempt ${job.attempt} after this preempt was asked; not moved again`;
}
