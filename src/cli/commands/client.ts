import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import YAML from 'yaml';
import { parseJobSpec } from '../../jobs/job-spec.js';
import { badInput } from '../../errors.js';
import { decimalValue } from '../../decimal-number.js';
import { firstDuplicateKey } from '../../yaml-keys.js';
import { FINAL_STATES, JOB_STATES, type JobPlacement, type JobRecord, type JobState } from '../../store/types.js';
import { ServiceClient, type ConnectOptions } from '../client.js';
import { writeJson, type Io } from '../io.js';
import { renderTable } from '../table.js';
import { terminalSafe } from '../terminal-text.js';
import { preemptAnswer } from './preempt-answer.js';
import { throughRestarts, type Outage } from '../through-restarts.js';

/** Adds --data-dir, --url and --token to a command that talks to `migpool serve`. */
export function withServiceOptions(cmd: Command): Command {
  return cmd
    .option('--data-dir <dir>', 'the data dir of `migpool serve`, for its address and token (default $MIGPOOL_DATA_DIR or ~/.local/share/migpool)')
    .option('--url <url>', 'the service URL (default $MIGPOOL_URL, else server.json in the data dir)')
    .option('--token <token>', "your user's token, for every call (default $MIGPOOL_TOKEN, else the admin's token file in the data dir; $MIGPOOL_TOKEN keeps it out of ps, which shows it here until the command starts)");
}

/** One job spec read from a file, with where it came from for messages. */
export interface SpecFromFile {
  readonly where: string;
  readonly spec: unknown;
}

/**
 * Reads job specs from a YAML or JSON file: a file may hold one spec, a list of specs, or (YAML)
 * several documents. Errors name the file (and line, column for syntax errors); each spec is
 * checked with the job spec schema so that nothing is submitted when one of them is wrong.
 */
export async function readSpecFile(file: string): Promise<SpecFromFile[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    throw badInput(`cannot read '${file}': ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}; give a YAML or JSON job spec file`);
  }
  const values: unknown[] = [];
  if (/\.json$/i.test(file)) {
    try {
      values.push(JSON.parse(text));
    } catch (e) {
      throw badInput(`${file}: not valid JSON (${(e as Error).message}); fix it, or write the spec as YAML`);
    }
  } else {
    // Duplicate keys are found by firstDuplicateKey (linear), not by the yaml package's check (quadratic).
    const lines = new YAML.LineCounter();
    for (const doc of YAML.parseAllDocuments(text, { uniqueKeys: false, lineCounter: lines })) {
      const problem = 'errors' in doc ? doc.errors[0] : undefined;
      if (problem) {
        const pos = problem.linePos?.[0];
        throw badInput(`${file}${pos ? `:${pos.line}:${pos.col}` : ''}: not valid YAML: ${problem.message.split('\n')[0]}`);
      }
      const dup = firstDuplicateKey(doc);
      if (dup) {
        const pos = lines.linePos(dup.offset);
        throw badInput(`${file}:${pos.line}:${pos.col}: not valid YAML: Map keys must be unique ('${dup.key}' is written twice); keep one`);
      }
      let value: unknown;
      try {
        value = doc.toJS();
      } catch (e) {
        // An alias bomb: the yaml package stops past 100 alias expansions (maxAliasCount).
        if (e instanceof ReferenceError) throw badInput(`${file}: not valid YAML: ${e.message}; write the values out instead of aliases`);
        throw e;
      }
      if (value !== null && value !== undefined) values.push(value);
    }
  }
  const specs = values.flatMap((v) => (Array.isArray(v) ? (v as unknown[]) : [v]));
  if (specs.length === 0) throw badInput(`${file}: no job spec in the file: write one as a mapping with name, command and resources`);
  const many = specs.length > 1;
  return specs.map((spec, k) => {
    const where = many ? `${file}: job ${k + 1}` : file;
    parseJobSpec(spec, where);
    return { where, spec };
  });
}

/** `12s`, `5m`, `3h`, `2d` since `then`; `-` when null. */
export function ageText(then: number | null, now: number): string {
  if (then === null) return '-';
  const s = Math.max(0, Math.round((now - then) / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 172_800) return `${Math.floor(s / 3600)}h ago`;
  return `${Math.floor(s / 86_400)}d ago`;
}

/** `gpu 0 3g.20gb@4`, `gpu 0,1`, `gpu 2 (timeslice)`, `gpu 2 (mps low 50% with 7)`; `-` when none. */
export function placementText(p: JobPlacement | null): string {
  if (p === null) return '-';
  if (p.kind === 'instance') return `gpu ${p.gpu} ${p.profile}@${p.start}`;
  const mps = p.mps ? `${p.mps.clientPriority === 1 ? ' low' : ''}${p.mps.activeThreadPercentage !== null ? ` ${p.mps.activeThreadPercentage}%` : ''}${p.mps.neighbours.length > 0 ? ` with ${p.mps.neighbours.join(',')}` : ''}` : '';
  return `gpu ${p.gpus.join(',')}${p.sharing === 'exclusive' ? '' : ` (${p.sharing}${mps})`}`;
}

/** `45% 1200 samples/s eta 3m` for a running job that reports progress; why a queued job waits or a failed or cancelled one ended; `-` otherwise. */
export function noteText(j: JobRecord): string {
  if (j.state === 'queued' && j.pending) return j.pending;
  // Why it ended badly (its exit status, max runtime, a program or workdir that was missing).
  if ((j.state === 'failed' || j.state === 'cancelled') && j.reason) return j.reason;
  const p = j.progress;
  if (!p || (j.state !== 'running' && j.state !== 'starting')) return '-';
  const parts = [p.fraction !== null ? `${Math.floor(p.fraction * 100)}%` : `${p.samples} samples`];
  if (p.samplesPerSecond !== null) parts.push(`${p.samplesPerSecond.toFixed(p.samplesPerSecond < 10 ? 1 : 0)} samples/s`);
  if (p.etaSeconds !== null) parts.push(`eta ${durationText(p.etaSeconds)}`);
  return parts.join(' ');
}

/** `team=vision,exp=7`; `-` when the job has no labels. */
export function labelsText(j: JobRecord): string {
  const l = Object.entries(j.spec.labels ?? {});
  return l.length === 0 ? '-' : l.map(([k, v]) => `${k}=${v}`).join(',');
}

function durationText(seconds: number): string {
  const s = Math.round(seconds);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${s % 60 > 0 ? ` ${s % 60}s` : ''}`;
  return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
}

function parseStates(value: string | undefined): JobState[] | undefined {
  if (value === undefined) return undefined;
  const states = value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  for (const s of states) if (!(JOB_STATES as readonly string[]).includes(s)) throw badInput(`--state '${s}' is not a job state: use one or more of ${JOB_STATES.join(', ')}, separated by commas`);
  return states.length > 0 ? (states as JobState[]) : undefined;
}

function positive(value: string, flag: string, integer: boolean): number {
  const n = decimalValue(value);
  if (!Number.isFinite(n) || n <= 0 || (integer && !Number.isInteger(n))) throw badInput(`${flag} '${value}' is not a positive ${integer ? 'whole number' : 'number'}`);
  return n;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface JobsOptions extends ConnectOptions {
  state?: string;
  priority?: string;
  limit: string;
  after?: string;
  json?: boolean;
}

interface LogsOptions extends ConnectOptions {
  stderr?: boolean;
  follow?: boolean;
  interval: string;
  json?: boolean;
  raw?: boolean;
}

/** The client commands of `migpool serve`: jobs, logs, preempt, cancel (submit: `submit.ts`). */
export function registerClient(program: Command, io: Io): void {
  withServiceOptions(program.command('jobs').description('list the jobs of `migpool serve`, newest first, a page at a time'))
    .option('--state <states>', `only jobs in these states (comma-separated: ${JOB_STATES.join(', ')})`)
    .option('--priority <priority>', 'only foreground or background jobs')
    .option('--limit <n>', 'show at most N jobs (a page)', '50')
    .option('--after <id>', 'the next page: jobs older than job ID (the last ID of the page before)')
    .option('--json', 'print JSON: {jobs, next} (next: the --after of the next page, or null)')
    .action(async (opts: JobsOptions) => {
      const states = parseStates(opts.state);
      if (opts.priority !== undefined && opts.priority !== 'foreground' && opts.priority !== 'background') throw badInput(`--priority '${opts.priority}' is not foreground or background`);
      const limit = positive(opts.limit, '--limit', true);
      if (opts.after !== undefined && !/^\d+$/.test(opts.after)) throw badInput(`--after '${opts.after}' is not a job id: give the last ID of the page before`);
      const client = await ServiceClient.connect(opts);
      // The service answers pages of at most 10000: a bigger --limit follows them.
      const { jobs, next } = await client.collectJobs({
        ...(states ? { states } : {}),
        ...(opts.priority ? { priority: opts.priority as 'foreground' | 'background' } : {}),
        ...(opts.after !== undefined ? { after: opts.after } : {}),
        limit,
        order: 'desc',
      });
      if (opts.json) return writeJson(io, { jobs, next });
      if (jobs.length === 0) return io.out('no jobs');
      const now = Date.now();
      const withLabels = jobs.some((j) => Object.keys(j.spec.labels ?? {}).length > 0);
      io.out(
        renderTable(
          ['ID', 'NAME', 'USER', 'STATE', 'PRIORITY', 'PLACEMENT', 'ATTEMPT', 'SUBMITTED', 'STARTED', 'ENDED', 'EXIT', ...(withLabels ? ['LABELS'] : []), 'NOTE'],
          jobs.map((j) => [
            j.id,
            j.spec.name,
            j.owner ?? '-',
            j.cancelRequested && !FINAL_STATES.includes(j.state) ? `${j.state} (stopping)` : j.state,
            j.spec.priority,
            placementText(j.placement),
            String(j.attempt),
            ageText(j.submittedAt, now),
            ageText(j.startedAt, now),
            ageText(j.endedAt, now),
            j.exitCode === null ? '-' : String(j.exitCode),
            ...(withLabels ? [labelsText(j)] : []),
            noteText(j),
          ]),
        ),
      );
      if (next !== null) io.out(`more: migpool jobs --after ${next}`);
    });

  withServiceOptions(program.command('logs').description("print a job's log (stdout, or stderr with --stderr)").argument('<id>', 'job id'))
    .option('--stderr', 'the standard error log instead of standard output')
    .option('-f, --follow', 'keep printing until the job has ended and its log is read')
    .option('--interval <seconds>', 'seconds between polls with --follow', '1')
    .option('--json', 'print {id, stream, text, nextOffset, done} once read')
    .option('--raw', "to a terminal too, every byte as the job wrote it (by default a terminal gets its colours but no other control sequence: another user's job must not command the reader's terminal)")
    .action(async (id: string, opts: LogsOptions) => {
      const intervalMs = positive(opts.interval, '--interval', false) * 1000;
      // To a terminal, the log's control sequences but colours are shown as escapes (terminal-text.ts); to a pipe or file, as they are.
      const shown = process.stdout.isTTY === true && opts.raw !== true ? terminalSafe : (text: string) => text;
      const stream = opts.stderr ? 'stderr' : 'stdout';
      const client = await ServiceClient.connect(opts);
      let offset = 0;
      let pending = '';
      let all = '';
      let done: boolean;
      // Following, a restart of the service is waited through (through-restarts.ts).
      const outage: Outage = { since: null };
      const read = () => client.readLog(id, stream, offset);
      for (;;) {
        const chunk = opts.follow ? await throughRestarts(read, outage, (line) => io.err(line)) : await read();
        offset = chunk.nextOffset;
        done = chunk.done;
        if (opts.json) all += chunk.text;
        else {
          // io.out ends what it prints with a newline: print whole lines, keep the rest for later.
          pending += chunk.text;
          const end = pending.lastIndexOf('\n');
          if (end >= 0) {
            io.out(shown(pending.slice(0, end + 1)));
            pending = pending.slice(end + 1);
          }
        }
        if (done) break;
        if (chunk.text !== '') continue;
        if (!opts.follow) break;
        await sleep(intervalMs);
      }
      if (opts.json) return writeJson(io, { id, stream, text: all, nextOffset: offset, done });
      if (pending !== '') io.out(shown(pending));
    });

  withServiceOptions(program.command('preempt').description('stop a running job whose spec says preemptible: true; it is requeued and resumes from its checkpoint').argument('<id>', 'job id'))
    .option('--json', 'print the job as JSON')
    .action(async (id: string, opts: ConnectOptions & { json?: boolean }) => {
      const client = await ServiceClient.connect(opts);
      const job = await client.preempt(id);
      if (opts.json) return writeJson(io, job);
      io.out(preemptAnswer(job));
    });

  withServiceOptions(program.command('cancel').description('cancel a queued job, or stop a running one').argument('<id>', 'job id'))
    .option('--json', 'print the job as JSON')
    .action(async (id: string, opts: ConnectOptions & { json?: boolean }) => {
      const client = await ServiceClient.connect(opts);
      const job = await client.cancel(id);
      if (opts.json) return writeJson(io, job);
      const label = `job ${job.id} (${job.spec.name})`;
      if (job.state === 'cancelled') io.out(`cancelled ${label}`);
      else if (FINAL_STATES.includes(job.state)) io.out(`${label} had already ended: ${job.state}`);
      else io.out(`asked ${label} to stop: it is ${job.state}`);
    });
}
