import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { learnedFit, type LearnedFit } from '../../control/learning.js';
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
 * its own points. Refuses a data dir with no service database in it (nothing is created).
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
    learned.push(learnedFit(name, base, obs));
  }
  return { learned, unresolved };
}

const pct = (v: number) => `${(v * 100).toFixed(1)}%`;
const num = (v: number | null, digits = 1) => (v === null ? '-' : v.toFixed(digits));

/** The learned workloads as text: one summary table, then each workload's points. */
export function renderLearned(learned: readonly LearnedFit[], unresolved: readonly UnresolvedLearned[]): string {
  if (learned.length === 0 && unresolved.length === 0) return 'learned workloads: none yet (no job of a named workload has reported progress or memory)';
  const parts = [
    'learned workloads (from the jobs the service ran)',
    renderTable(
      ['WORKLOAD', 'POINTS', 'ERR MODEL -> LEARNED', 'MEMORY GiB MODEL -> LEARNED', 'SOURCE'],
      learned.map((l) => [
        l.name,
        String(l.points.length),
        l.error ? `${pct(l.error.model)} -> ${pct(l.error.learned)}` : '-',
        `${l.memoryGiB.model === null ? 'unknown' : l.memoryGiB.model.toFixed(2)} -> ${l.memoryGiB.learned === null ? 'unknown' : l.memoryGiB.learned.toFixed(2)}`,
        l.workload.source.includes('learned:') ? l.workload.source.slice(l.workload.source.indexOf('learned:')) : '-',
      ]),
    ),
  ];
  for (const l of learned) {
    parts.push(
      '',
      `${l.name}: measured points`,
      renderTable(
        ['JOB', 'GPU', 'RESOURCE', 'SAMPLES/S', 'MODEL', 'LEARNED', 'PEAK MiB', 'OOM'],
        l.points.map((p) => [`${p.jobId}/${p.attempt}`, p.gpuModel, p.resource, num(p.samplesPerSecond), num(p.modelSamplesPerSecond), num(p.learnedSamplesPerSecond), num(p.peakMemoryMiB, 0), p.outOfMemory ? 'yes' : '']),
      ),
    );
  }
  for (const u of unresolved) parts.push('', `${u.name}: ${u.observations} observation(s), but no such workload here; give its file with --workload`);
  return parts.join('\n');
}
