import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { badInput } from '../../errors.js';
import { decimalValue } from '../../decimal-number.js';
import { splitCommandLine } from '../../exec/argv.js';
import { parseSimulateSpec } from '../../gpu/simulated/spec.js';
import { resolveGpuModel } from '../../mig/catalog/index.js';
import { predict } from '../../perf/model.js';
import { resolveWorkload } from '../../perf/workloads.js';
import { policyHelp, POLICY_NAMES } from '../../sched/registry.js';
import { workloadFiles } from '../workload-file.js';
import type { JobRecord } from '../../store/types.js';
import { defaultDataDir } from '../../server/files.js';
import { writeJson, type Io } from '../io.js';
import { startPool, type RunningPool } from '../pool.js';
import { checkDatabaseUrl, databaseOption, hidePasswordFromPs } from '../database-option.js';

interface ServeFlags {
  dataDir?: string;
  listen: string;
  policy: string;
  simulate?: string;
  database?: string;
  executor: string;
  pollMs: string;
  slurmGresType?: string;
  slurmCpusPerSlice: string;
  slurmMemPerSlice: string;
  sbatchArgs?: string;
  workload: string[];
  dcgmJobMappingDir?: string;
  mpsSlowdownBound: string;
  unmappedUsersAsRoot?: boolean;
}

/** `--workload FILE.yaml`, repeatable: collects the files in order. */
function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** The user workloads `--workload` names (see cli/workload-file.ts). */
export const serveWorkloads = workloadFiles;

/** Resolves when the process is asked to stop (SIGINT, SIGTERM). */
function untilSignal(): Promise<string> {
  return new Promise((resolve) => {
    const on = (sig: string) => {
      process.off('SIGINT', on);
      process.off('SIGTERM', on);
      resolve(sig);
    };
    process.on('SIGINT', on);
    process.on('SIGTERM', on);
  });
}

async function describe(pool: RunningPool): Promise<string> {
  const gpus = await pool.service.gpus();
  const byName = new Map<string, number>();
  for (const g of gpus) byName.set(g.name, (byName.get(g.name) ?? 0) + 1);
  return [...byName].map(([n, c]) => `${c}x ${n}`).join(', ') || 'no MIG GPU migpool knows';
}

export function registerServe(program: Command, io: Io): void {
  program
    .command('serve')
    .description('run the GPU pool as a service: persistent queue, live scheduling onto MIG slices, HTTP API, dashboard and /metrics')
    .option('--data-dir <dir>', 'where the queue, logs and token live (default $MIGPOOL_DATA_DIR or ~/.local/share/migpool)')
    .option('--listen <host:port>', 'address of the API and dashboard (loopback unless told otherwise)', '127.0.0.1:7070')
    .option('--policy <name>', `scheduling policy (as in \`migpool simulate\`): ${POLICY_NAMES.join(', ')} (see below)`, 'migpool')
    .option('--simulate <spec>', 'simulated GPUs instead of nvidia-smi, e.g. 2xA100-SXM4-40GB (kept in the data dir)')
    .addOption(databaseOption('postgres://user@host/db to keep state in PostgreSQL instead of SQLite in the data dir'))
    .option('--executor <kind>', 'local (processes on this machine) or slurm (each attempt submitted with sbatch)', 'local')
    .option('--poll-ms <ms>', 'slurm executor: milliseconds between squeue polls', '2000')
    .option('--slurm-gres-type <template>', "slurm executor: the GRES type of a MIG profile where the site names its own types, '{profile}' replaced (default: as AutoDetect=nvml names it on the pool's GPUs for the Slurm version sbatch reports, e.g. nvidia_a100_3g.39gb)")
    .option('--slurm-cpus-per-slice <n>', 'slurm executor: --cpus-per-task per compute slice of the job (a whole GPU counts 7); a job may set MIGPOOL_SLURM_CPUS', '2')
    .option('--slurm-mem-per-slice <MiB>', 'slurm executor: --mem in MiB per compute slice (0: no --mem); a job may set MIGPOOL_SLURM_MEM', '8192')
    .option('--sbatch-args <words>', "slurm executor: more sbatch arguments, e.g. '--partition gpu --account ml' (split as a shell would, never run by one)")
    .addHelpText('after', `\n${policyHelp()}`)
    .option('--workload <file.yaml>', "a workload measured with 'migpool bench --out', that jobs may name (repeatable)", collect, [])
    .option('--dcgm-job-mapping-dir <dir>', "keep dcgm-exporter's HPC job mapping files here (one per GPU or MIG instance, holding the ids of the jobs on it), so that DCGM's series carry hpc_job: give dcgm-exporter the same directory with --hpc-job-mapping-dir")
    .option('--mps-slowdown-bound <x>', 'MPS sharing: largest slowdown of a foreground job beside background jobs (its samples/s alone over beside them) before they back off (DeepPool: 1.1)', '1.1')
    .option('--unmapped-users-as-root', "when serve runs as root, run the jobs of users who are no admins and have no --unix-user as root too (they could read the admin's token); without it their submissions are refused until an admin maps them")
    .action(async (f: ServeFlags) => {
      checkDatabaseUrl(f.database);
      const warning = hidePasswordFromPs(f.database, 'serve');
      if (warning !== null) io.err(`migpool serve: ${warning}`);
      const dataDir = f.dataDir ?? defaultDataDir();
      if (f.executor !== 'local' && f.executor !== 'slurm') throw badInput(`--executor '${f.executor}': use local or slurm`);
      const pollMs = decimalValue(f.pollMs);
      if (!(Number.isFinite(pollMs) && pollMs >= 100 && pollMs <= 600_000)) throw badInput(`--poll-ms '${f.pollMs}': give milliseconds from 100 to 600000`);
      const cpusPerSlice = decimalValue(f.slurmCpusPerSlice);
      if (!(Number.isInteger(cpusPerSlice) && cpusPerSlice >= 1 && cpusPerSlice <= 1024)) throw badInput(`--slurm-cpus-per-slice '${f.slurmCpusPerSlice}': give a whole number of CPUs from 1 to 1024`);
      const memPerSliceMiB = decimalValue(f.slurmMemPerSlice);
      if (!(Number.isInteger(memPerSliceMiB) && memPerSliceMiB >= 0)) throw badInput(`--slurm-mem-per-slice '${f.slurmMemPerSlice}': give whole MiB, 0 for no --mem`);
      const slurm = { pollMs, gresType: f.slurmGresType, cpusPerSlice, memPerSliceMiB, sbatchArgs: f.sbatchArgs === undefined ? [] : splitCommandLine(f.sbatchArgs, '--sbatch-args') };
      const workloads = serveWorkloads(f.workload);
      const mpsSlowdownBound = decimalValue(f.mpsSlowdownBound);
      if (!(Number.isFinite(mpsSlowdownBound) && mpsSlowdownBound >= 1 && mpsSlowdownBound <= 100)) throw badInput(`--mps-slowdown-bound '${f.mpsSlowdownBound}': give a ratio from 1 to 100, e.g. 1.1 (the foreground within 10% of its speed alone)`);
      const pool = await startPool({ dataDir, listen: f.listen, policy: f.policy, simulate: f.simulate, database: f.database, executor: f.executor, slurm, workloads, dcgmJobMappingDir: f.dcgmJobMappingDir, mpsSlowdownBound, unmappedUsersAsRoot: f.unmappedUsersAsRoot === true, log: (l) => io.err(`migpool serve: ${l}`) });
      io.err(`migpool serve: ${await describe(pool)}; policy ${f.policy}; ${f.executor === 'slurm' ? 'jobs go to Slurm (sbatch)' : 'jobs run here'}; state in ${f.database ? 'PostgreSQL' : join(dataDir, 'migpool.db')}`);
      io.err(`migpool serve: API and dashboard at ${pool.url}/ (token in ${join(dataDir, 'token')}); Ctrl-C stops the service, jobs keep running`);
      const sig = await untilSignal();
      io.err(`migpool serve: ${sig}: stopping (running jobs are left running and re-adopted at the next start)`);
      await pool.close();
    });
}

interface DemoFlags {
  gpus: string;
  jobs: string;
  seconds: string;
  listen: string;
  policy: string;
  exitWhenDone?: boolean;
  json?: boolean;
  keepData?: boolean;
}

/** The study's mix: small, medium and large training jobs in a 6:3:1 ratio, interleaved. */
export function demoMix(n: number): ('small' | 'medium' | 'large')[] {
  const pattern: ('small' | 'medium' | 'large')[] = ['small', 'medium', 'small', 'small', 'medium', 'small', 'large', 'small', 'medium', 'small'];
  return Array.from({ length: n }, (_, i) => pattern[i % pattern.length]!);
}

export function registerDemo(program: Command, io: Io): void {
  program
    .command('demo')
    .description('try migpool: a service on simulated GPUs in a temporary data dir, fed a mix of small, medium and large training jobs that run as real processes at the speed the model predicts for their slice')
    .option('--gpus <spec>', 'simulated GPUs', '2xA100-SXM4-40GB')
    .option('--jobs <n>', 'jobs to submit', '16')
    .option('--seconds <s>', 'seconds a small job takes alone on a whole GPU (medium 2x, large 3x)', '20')
    .option('--listen <host:port>', 'address of the dashboard (port 0: any free port)', '127.0.0.1:0')
    .option('--policy <name>', `scheduling policy: ${POLICY_NAMES.join(', ')} (see below)`, 'migpool')
    .option('--exit-when-done', 'stop once every job has ended, and print a summary')
    .option('--json', 'with --exit-when-done: the summary as JSON')
    .addHelpText('after', `\n${policyHelp()}`)
    .option('--keep-data', 'keep the temporary data dir (jobs, logs, database) after the demo; it is removed by default')
    .action(async (f: DemoFlags) => {
      const count = decimalValue(f.jobs);
      const seconds = decimalValue(f.seconds);
      if (!Number.isInteger(count) || count < 1 || count > 1000) throw badInput(`--jobs '${f.jobs}': give a whole number from 1 to 1000`);
      if (!(seconds > 0) || seconds > 3600) throw badInput(`--seconds '${f.seconds}': give a number of seconds from 1 to 3600`);
      parseSimulateSpec(f.gpus, '--gpus'); // a bad spec names demo's flag, before any data dir or service exists
      const dataDir = mkdtempSync(join(tmpdir(), 'migpool-demo-'));
      const pool = await startPool({ dataDir, listen: f.listen, policy: f.policy, simulate: f.gpus, tickMs: 1000, log: (l) => io.err(`migpool demo: ${l}`) });
      const t0 = Date.now();
      const quiet = f.json === true;
      const say = (line: string) => {
        if (!quiet) io.err(line);
      };
      say(`migpool demo: ${await describe(pool)} (simulated), policy ${f.policy}, data in ${dataDir}`);
      say(`migpool demo: dashboard ${pool.url}/?token=${pool.token}`);
      const worker = fileURLToPath(new URL('../../bench/fake-workload.js', import.meta.url));
      const gpu = resolveGpuModel(f.gpus.replace(/^\d+x/i, '').split(',')[0]!);
      const factor = { small: 1, medium: 2, large: 3 } as const;
      const specs = demoMix(count).map((size, i) => {
        const workload = resolveWorkload(size);
        const iterMs = predict(workload, { kind: 'full', gpu }).iterationMs ?? 100;
        const alone = seconds * factor[size];
        return {
          name: `${size}-${String(i + 1).padStart(2, '0')}`,
          command: [process.execPath, worker, '--workload', size, '--iterations', String(Math.max(1, Math.ceil((alone * 1000) / iterMs))), '--report-ms', '1000'],
          workload: workload.name,
          resources: { gpus: 1 },
          priority: size === 'large' ? 'foreground' : 'background',
          estimatedSeconds: alone,
        };
      });
      await pool.service.submitMany(specs);
      say(`migpool demo: submitted ${count} jobs (${countBy(demoMix(count))}); watch them in the dashboard, Ctrl-C to stop`);
      const stopping = untilSignal();
      let final: JobRecord[];
      /** The job and pending reason last said beside idle slices (null: none said last time). */
      let lastSaid: string | null = null;
      for (;;) {
        const tick = new Promise<'tick'>((r) => setTimeout(() => r('tick'), 5000).unref());
        const why = await Promise.race([tick, stopping]);
        const jobs = await pool.service.listJobs();
        const by = (s: string) => jobs.filter((j) => j.state === s).length;
        const stats = await pool.service.stats();
        const last = stats.timeline.at(-1);
        const layouts = (await pool.service.gpus()).map((g) => `GPU${g.index}[${g.migEnabled ? g.instances.map((i) => `${i.profile}${i.job ? '*' : ''}`).join(' ') : g.wholeGpuJobs.length > 0 ? 'whole*' : 'whole'}]`).join(' ');
        say(
          `t=${Math.round((Date.now() - t0) / 1000)}s  running ${by('running') + by('starting')}, queued ${by('queued')}, done ${by('succeeded')}, failed ${by('failed')}  ` +
            `util ${Math.round((last?.utilization ?? 0) * 100)}%  ${layouts}  (* busy)`,
        );
        // Queued jobs beside idle slices: say why the first of them waits (its pending reason).
        const idleSlice = (await pool.service.gpus()).some((g) => g.migEnabled && g.instances.some((i) => !i.job));
        const waiting = jobs.filter((j) => j.state === 'queued' && j.pending).sort((a, b) => Number(a.id) - Number(b.id))[0];
        // Said once per job and reason: the same line every 5 s buried the status lines.
        const saying = idleSlice && waiting ? `${waiting.id}\n${waiting.pending}` : null;
        if (waiting && saying !== null && saying !== lastSaid) say(`  ${waiting.spec.name} waits beside idle slices: ${waiting.pending}`);
        lastSaid = saying;
        final = jobs;
        if (why !== 'tick') break;
        if (f.exitWhenDone && jobs.every((j) => j.state === 'succeeded' || j.state === 'failed' || j.state === 'cancelled')) break;
      }
      for (const j of final) if (j.state === 'running' || j.state === 'starting' || j.state === 'queued') await pool.service.cancel(j.id);
      await pool.service.idle();
      const stats = await pool.service.stats();
      await pool.close();
      if (f.keepData !== true) rmSync(dataDir, { recursive: true, force: true });
      const summary = {
        dataDir: f.keepData === true ? dataDir : null,
        seconds: Math.round((Date.now() - t0) / 1000),
        jobs: count,
        succeeded: final.filter((j) => j.state === 'succeeded').length,
        failed: final.filter((j) => j.state === 'failed').length,
        reconfigurations: stats.reconfigurations,
        peakUtilization: Math.max(0, ...stats.timeline.map((s) => s.utilization)),
      };
      if (f.json) writeJson(io, summary);
      else io.out(`migpool demo: ${summary.succeeded}/${count} jobs succeeded in ${summary.seconds} s, ${summary.reconfigurations} re-partitions, peak utilisation ${Math.round(summary.peakUtilization * 100)}%`);
    });
}

function countBy(xs: readonly string[]): string {
  const m = new Map<string, number>();
  for (const x of xs) m.set(x, (m.get(x) ?? 0) + 1);
  return [...m].map(([k, v]) => `${v} ${k}`).join(', ');
}
