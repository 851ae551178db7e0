import type { Command } from 'commander';
import { fitReport } from '../../perf/report.js';
import { builtInWorkloads } from '../../perf/workloads.js';
import { badInput } from '../../errors.js';
import { writeJson, type Io } from '../io.js';
import { renderTable } from '../table.js';
import { hidePasswordFromPs } from '../database-option.js';
import { registerWorkloadsEstimate } from './workloads-estimate.js';
import { readLearned, renderLearned } from './workloads-learned.js';
import { serveWorkloads } from './serve.js';

const pct = (v: number) => `${(v * 100).toFixed(1)}%`;

/** `migpool workloads [--fit]`: the performance model's workloads, and how well its curves fit. */
export function registerWorkloads(program: Command, io: Io): void {
  const workloads = program
    .command('workloads')
    .description("list the performance model's built-in workloads; --fit shows each calibrated curve's error")
    .option('--fit', 'fit errors on the calibration points and on points left out of the fit')
    .option('--json', 'print JSON')
    .option('--data-dir <dir>', "with --fit: also the workloads a service learned from its jobs, read from its data dir (as 'migpool serve --data-dir')")
    .option('--database <url>', 'with --fit: the same from the PostgreSQL database the service keeps its state in (a password goes in $PGPASSWORD, not on the command line, where `ps` shows it)')
    .option('--workload <file.yaml>', 'a user workload the service was given (repeatable), to show what it learned of it', (v: string, p: string[]) => [...p, v], [])
    .action(async (opts: { fit?: boolean; json?: boolean; dataDir?: string; database?: string; workload: string[] }) => {
      const warning = hidePasswordFromPs(opts.database, 'workloads');
      if (warning !== null) io.err(`migpool workloads: ${warning}`);
      if (!opts.fit && (opts.dataDir !== undefined || opts.database !== undefined)) throw badInput('--data-dir and --database go with --fit: migpool workloads --fit --data-dir DIR');
      // It names workloads in what a service learned: without a service's store it was ignored.
      if (opts.workload.length > 0 && opts.dataDir === undefined && opts.database === undefined) {
        throw badInput(`--workload ${opts.workload[0]} goes with --fit and --data-dir or --database (what a service learned of it): migpool workloads --fit --data-dir DIR --workload FILE.yaml`);
      }
      const learnedFrom = opts.dataDir !== undefined || opts.database !== undefined ? await readLearned({ ...(opts.dataDir !== undefined ? { dataDir: opts.dataDir } : {}), ...(opts.database !== undefined ? { database: opts.database } : {}) }, serveWorkloads(opts.workload)) : null;
      if (opts.fit) {
        const report = fitReport();
        const byId = new Map(report.map((r) => [r.id, r]));
        const errors = builtInWorkloads().map((w) => {
          const r = w.calibratedFrom ? byId.get(w.calibratedFrom) : undefined;
          return {
            name: w.name,
            calibratedFrom: w.calibratedFrom ?? null,
            proxy: w.source.startsWith('PROXY'),
            error: r ? { calibrationMean: r.calibration.mean, leaveOutMean: r.leaveOut.mean, leaveOutKind: r.leaveOut.kind } : null,
            memoryGiB: w.memoryGiB,
            memorySource: w.memorySource ?? (w.memoryGiB === null ? 'unknown' : 'not stated'),
          };
        });
        if (opts.json) return writeJson(io, { models: report, workloads: errors, ...(learnedFrom ? { learned: learnedFrom.learned.map(({ workload: _w, ...rest }) => rest), unresolvedLearned: learnedFrom.unresolved } : {}) });
        const rows = report.map((r) => [
          r.id,
          String(r.calibration.points),
          pct(r.calibration.mean),
          pct(r.calibration.max),
          `${pct(r.leaveOut.mean)} / ${pct(r.leaveOut.max)} (${r.leaveOut.kind})`,
          r.notes.join('; '),
        ]);
        io.out(renderTable(['MODEL', 'POINTS', 'MEAN ERR', 'MAX ERR', 'LEFT OUT: MEAN / MAX', 'NOTES'], rows));
        io.out('');
        io.out(
          renderTable(
            ['WORKLOAD', 'CURVE FROM', 'ERR (CAL / LEFT OUT)', 'MEMORY GiB', 'MEMORY SOURCE'],
            errors.map((e) => [
              `${e.name}${e.proxy ? ' (proxy: absolute time unchecked)' : ''}`,
              e.calibratedFrom ?? '-',
              e.error ? `${pct(e.error.calibrationMean)} / ${pct(e.error.leaveOutMean)}` : '-',
              e.memoryGiB === null ? 'unknown' : e.memoryGiB.toFixed(2),
              e.memorySource,
            ]),
          ),
        );
        if (learnedFrom) io.out(`\n${renderLearned(learnedFrom.learned, learnedFrom.unresolved)}`);
        return;
      }
      const workloads = builtInWorkloads();
      if (opts.json) return writeJson(io, { workloads });
      io.out(
        renderTable(
          ['WORKLOAD', 'ALIASES', 'BATCH', 'DATASET', 'MEMORY GiB', 'DESCRIPTION'],
          workloads.map((w) => [w.name, w.aliases.join(','), String(w.batchSize), String(w.datasetSize), w.memoryGiB === null ? 'unknown' : w.memoryGiB.toFixed(2), w.description]),
        ),
      );
    });
  registerWorkloadsEstimate(workloads, io);
}
