import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { learnedFit, observationsFor, type LearnedFit } from '../../control/learning.js';
import { badInput } from '../../errors.js';
import type { Workload } from '../../perf/types.js';
import { resolveWorkload } from '../../perf/workloads.js';
import { openStore } from '../../store/open.js';
import type { WorkloadObservation } from '../../store/types.js';
import { renderTable } from '../table.js';

/** Where `workloads --fit` reads what a service learned: serve's data dir, or its PostgreSQL database. */
export interface LearnedSource {
  readonly dataDir?: string;
  readonly database?: string;
}

/** A workload the service learned of that this migpool cannot resolve (a user workload not given with --workload). */
export interface UnresolvedLearned {
  readonly name: string;
  readonly observations: number;
}

/**
 * The workloads a service learned from its jobs (store observations), each refitted and judged on
 * its own points: per workload the shared fit (every user's jobs are placed by it: the
 * observations of admins' jobs and of jobs of no user), then one fit per user whose own jobs
 * taught it more (the shared observations and theirs, what their jobs are placed by). Refuses a data dir with no service database in it (nothing is created).
 */
export async function readLearned(source: LearnedSource, extra: readonly Workload[]): Promise<{ learned: LearnedFit[]; unresolved: UnresolvedLearned[] }> {
  if (source.database === undefined && source.dataDir !== undefined && !existsSync(join(source.dataDir, 'migpool.db'))) {
    throw badInput(`--data-dir ${source.dataDir}: no migpool.db there; give the folder 'migpool serve --data-dir' uses`);
  }
  const store = await openStore({ dataDir: source.dataDir ?? '.', ...(source.database !== undefined ? { databaseUrl: source.database } : {}) });
  let observations: WorkloadObservation[];
  try {
    observations = await store.listObservations();
  } finally {
    await store.close();
  }
  const byName = new Map<string, WorkloadObservation[]>();
  for (const o of observations) byName.set(o.workload, [...(byName.get(o.workload) ?? []), o]);
  const learned: LearnedFit[] = [];
  const unresolved: UnresolvedLearned[] = [];
  for (const [name, obs] of [...byName].sort(([a], [b]) => a.localeCompare(b))) {
    let base: Workload;
    try {
      base = resolveWorkload(name, extra);
    } catch {
      unresolved.push({ name, observations: obs.length });
      continue;
    }
    learned.push(learnedFit(name, base, observationsFor(obs, null)));
    const users = [...new Set(obs.filter((o) => !o.shared && o.owner !== null).map((o) => o.owner!))].sort((a, b) => a.localeCompare(b));
    for (const user of users) learned.push(learnedFit(name, base, observationsFor(obs, user), user));
  }
  return { learned, unresolved };
}

/** Whose jobs a fit places: everyone's (shared), or one user's (the shared points and theirs). */
const forWhom = (l: LearnedFit) => (l.user === null ? 'everyone (shared)' : `${l.user} (shared + own)`);

const pct = (v: number) => `${(v * 100).toFixed(1)}%`;
const num = (v: number | null, digits = 1) => (v === null ? '-' : v.toFixed(digits));

/** The learned workloads as text: one summary table, then each workload's points. */
export function renderLearned(learned: readonly LearnedFit[], unresolved: readonly UnresolvedLearned[]): string {
  if (learned.length === 0 && unresolved.length === 0) return 'learned workloads: none yet (no job of a named workload has reported progress or memory)';
  const parts = [
    'learned workloads (from the jobs the service ran)',
    renderTable(
      ['WORKLOAD', 'FOR', 'POINTS', 'ERR MODEL -> LEARNED', 'MEMORY GiB MODEL -> LEARNED', 'SOURCE'],
      learned.map((l) => [
        l.name,
        forWhom(l),
        String(l.points.length),
        l.error ? `${pct(l.error.model)} -> ${pct(l.error.learned)}` : '-',
        `${l.memoryGiB.model === null ? 'unknown' : l.memoryGiB.model.toFixed(2)} -> ${l.memoryGiB.learned === null ? 'unknown' : l.memoryGiB.learned.toFixed(2)}`,
        l.workload.source.includes('learned:') ? l.workload.source.slice(l.workload.source.indexOf('learned:')) : '-',
      ]),
    ),
  ];
  for (const l of learned) {
    // A user's fit lists only their own points (the shared ones are listed under the shared fit).
    const points = l.user === null ? l.points : l.points.filter((p) => !p.shared);
    if (l.user === null && points.length === 0) continue;
    parts.push(
      '',
      l.user === null ? `${l.name}: measured points (shared: by admins' jobs and jobs of no user)` : `${l.name}: ${l.user}'s own points (they move only ${l.user}'s jobs)`,
      renderTable(
        ['JOB', 'OWNER', 'GPU', 'RESOURCE', 'SAMPLES/S', 'MODEL', 'LEARNED', 'PEAK MiB', 'OOM'],
        points.map((p) => [`${p.jobId}/${p.attempt}`, p.owner ?? '-', p.gpuModel, p.resource, num(p.samplesPerSecond), num(p.modelSamplesPerSecond), num(p.learnedSamplesPerSecond), num(p.peakMemoryMiB, 0), p.outOfMemory ? 'yes' : '']),
      ),
    );
  }
  for (const u of unresolved) parts.push('', `${u.name}: ${u.observations} observation(s), but no such workload here; give its file with --workload`);
  return parts.join('\n');
}
