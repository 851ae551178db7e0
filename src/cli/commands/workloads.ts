import type { Command } from 'commander';
import { fitReport } from '../../perf/report.js';
import { builtInWorkloads } from '../../perf/workloads.js';
import { writeJson, type Io } from '../io.js';
import { renderTable } from '../table.js';
import { registerWorkloadsEstimate } from './workloads-estimate.js';

const pct = (v: number) => `${(v * 100).toFixed(1)}%`;

/** `migpool workloads [--fit]`: the performance model's workloads, and how well its curves fit. */
export function registerWorkloads(program: Command, io: Io): void {
  const workloads = program
    .command('workloads')
    .description("list the performance model's built-in workloads; --fit shows each calibrated curve's error")
    .option('--fit', 'fit errors on the calibration points and on points left out of the fit')
    .option('--json', 'print JSON')
    .action((opts: { fit?: boolean; json?: boolean }) => {
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
        if (opts.json) return writeJson(io, { models: report, workloads: errors });
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
        return io.out(
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
