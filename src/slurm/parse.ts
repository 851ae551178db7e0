/**
 * Parsers for what Slurm's commands print: GRES strings, `squeue --json` (and the `squeue -o`
 * fallback), `scontrol show node -o -d`, `sacct --parsable2`. Pure functions over text; the
 * captures they are tested on (test/fixtures/slurm/) come from Debian's Slurm 22.05.8.
 */
import { MigpoolError } from '../errors.js';

/** One GRES item: `gpu:1g.5gb:2` is `{ name: 'gpu', type: '1g.5gb', count: 2 }`; `gpu:2` has type null. */
export interface GresItem {
  readonly name: string;
  readonly type: string | null;
  readonly count: number;
}

/**
 * Parses a GRES list as squeue, scontrol and sinfo print it: `gpu:2g.10gb:1,gpu:1g.5gb:3`,
 * `gres:gpu:1g.5gb:2` (TRES form), `gpu:1g.5gb:2(IDX:1-2)` or `gpu:a100:4(S:0-1)` (with an index or
 * socket suffix), `gpu` (count 1), `(null)`, `N/A` or empty (none). Unparseable items are skipped.
 */
export function parseGres(text: string | null | undefined): GresItem[] {
  if (text === null || text === undefined) return [];
  const trimmed = text.trim();
  if (trimmed === '' || trimmed === '(null)' || trimmed === 'N/A' || trimmed === 'None') return [];
  const items: GresItem[] = [];
  // Commas also appear inside `(IDX:0,2)`: split only outside parentheses.
  let depth = 0;
  let current = '';
  const parts: string[] = [];
  for (const ch of trimmed) {
    if (ch === '(') depth += 1;
    if (ch === ')') depth = Math.max(0, depth - 1);
    if (ch === ',' && depth === 0) {
      parts.push(current);
      current = '';
    } else current += ch;
  }
  parts.push(current);
  for (const raw of parts) {
    const part = raw.replace(/\(.*\)$/, '').trim().replace(/^gres[:/]/, '');
    if (part === '') continue;
    const fields = part.split(':');
    const name = fields[0]!;
    if (!/^[\w.-]+$/.test(name)) continue;
    let type: string | null = null;
    let count = 1;
    if (fields.length === 2) {
      if (/^\d+$/.test(fields[1]!)) count = Number(fields[1]);
      else type = fields[1]!;
    } else if (fields.length >= 3) {
      type = fields.slice(1, -1).join(':');
      const last = fields.at(-1)!;
      if (!/^\d+$/.test(last)) continue;
      count = Number(last);
    }
    items.push({ name, type, count });
  }
  return items;
}

/** GRES items back into Slurm's form: `gpu:1g.5gb:7,gpu:2`. */
export function formatGres(items: readonly GresItem[]): string {
  return items.map((i) => (i.type === null ? `${i.name}:${i.count}` : `${i.name}:${i.type}:${i.count}`)).join(',');
}

/** A job as squeue shows it. */
export interface SlurmJob {
  readonly id: string;
  readonly name: string;
  /** `PENDING`, `RUNNING`, `COMPLETED`, `FAILED`, `CANCELLED`, `TIMEOUT`, ... */
  readonly state: string;
  readonly reason: string;
  /** GRES asked for per node (`--gres`). */
  readonly gres: readonly GresItem[];
  /** Nodes it runs on (a Slurm host list), '' when pending. */
  readonly nodes: string;
  /** Exit status of a finished job; null while it runs or when it was killed by a signal. */
  readonly exitCode: number | null;
  readonly signal: number | null;
  readonly stdout: string | null;
}

function record(value: unknown): Record<string, unknown> | null {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : typeof value === 'number' ? String(value) : '';
}

/** Splits a wait status as squeue --json reports it (`exit_code`: 768 is exit 3; 9 is SIGKILL). */
export function splitWaitStatus(raw: number): { exitCode: number | null; signal: number | null } {
  const signal = raw & 0x7f;
  if (signal !== 0) return { exitCode: null, signal };
  return { exitCode: (raw >> 8) & 0xff, signal: null };
}

const FINAL_STATES = new Set(['COMPLETED', 'FAILED', 'CANCELLED', 'TIMEOUT', 'NODE_FAIL', 'PREEMPTED', 'OUT_OF_MEMORY', 'BOOT_FAIL', 'DEADLINE', 'REVOKED', 'SPECIAL_EXIT']);

/** Whether a job state is an end (Slurm's base states after the job left the queue). */
export function isFinalState(state: string): boolean {
  return FINAL_STATES.has(state.split(/[+ ]/)[0]!.toUpperCase());
}

/**
 * The jobs of `squeue --json` (OpenAPI v0.0.38 as Slurm 22.05 prints it; later versions' shapes,
 * where `job_state` is a list and numbers are `{set, number}` objects, are read as well).
 */
export function parseSqueueJson(json: string): SlurmJob[] {
  let doc: unknown;
  try {
    doc = JSON.parse(json);
  } catch (e) {
    throw new MigpoolError('RUNTIME', `squeue --json printed something that is not JSON (${(e as Error).message})`);
  }
  const jobs = record(doc)?.['jobs'];
  if (!Array.isArray(jobs)) throw new MigpoolError('RUNTIME', `squeue --json printed no "jobs" list`);
  const number = (v: unknown): number | null => {
    if (typeof v === 'number') return v;
    const r = record(v);
    if (r && r['set'] === true && typeof r['number'] === 'number') return r['number'];
    return null;
  };
  return jobs.flatMap((j): SlurmJob[] => {
    const r = record(j);
    if (!r) return [];
    const stateRaw = r['job_state'];
    const state = Array.isArray(stateRaw) ? stateRaw.map(text).join('+') : text(stateRaw);
    const final = isFinalState(state);
    let exitCode: number | null = null;
    let signal: number | null = null;
    const exitRaw = r['exit_code'];
    const exitRecord = record(exitRaw);
    if (final && exitRecord) {
      exitCode = number(exitRecord['return_code']);
      signal = number(record(exitRecord['signal'])?.['id']) || null;
    } else if (final) {
      const raw = number(exitRaw);
      if (raw !== null) ({ exitCode, signal } = splitWaitStatus(raw));
    }
    const gresText = text(r['tres_per_node']) || text(r['tres_per_job']);
    return [
      {
        id: text(r['job_id']),
        name: text(r['name']),
        state,
        reason: text(r['state_reason']),
        gres: parseGres(gresText),
        nodes: text(r['nodes']),
        exitCode,
        signal,
        stdout: text(r['standard_output']) || null,
      },
    ];
  });
}

/** The `squeue -o` format {@link parseSqueueLines} reads, for Slurm without `--json`. */
export const SQUEUE_FORMAT = '%i|%j|%T|%b|%N|%r';

/** Jobs from `squeue -h -o '%i|%j|%T|%b|%N|%r'` (no exit codes: those come from sacct or scontrol). */
export function parseSqueueLines(out: string): SlurmJob[] {
  return out
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((line) => {
      const [id = '', name = '', state = '', gres = '', nodes = '', reason = ''] = line.split('|');
      return { id: id.trim(), name, state, reason, gres: parseGres(gres === 'N/A' ? '' : gres), nodes, exitCode: null, signal: null, stdout: null };
    });
}

/** `sacct --parsable2 -n -X -o JobID,State,ExitCode`: `12|COMPLETED|0:0` → exit code and signal. */
export function parseSacctLines(out: string): { id: string; state: string; exitCode: number | null; signal: number | null }[] {
  return out
    .split('\n')
    .filter((l) => l.trim() !== '')
    .flatMap((line) => {
      const [id = '', state = '', exit = ''] = line.split('|');
      const m = /^(\d+):(\d+)$/.exec(exit.trim());
      if (!m) return [];
      const sig = Number(m[2]);
      return [{ id: id.trim(), state: state.trim().split(' ')[0]!, exitCode: sig === 0 ? Number(m[1]) : null, signal: sig === 0 ? null : sig }];
    });
}

/** A node as `scontrol show node -o -d` shows it. */
export interface SlurmNode {
  readonly name: string;
  /** `IDLE`, `MIXED`, `ALLOCATED`, `IDLE+DRAIN`, `DOWN+NOT_RESPONDING`, ... */
  readonly state: string;
  readonly reason: string | null;
  readonly gres: readonly GresItem[];
  readonly gresUsed: readonly GresItem[];
  readonly features: readonly string[];
}

/**
 * Splits one `scontrol show ... -o` line into its fields. Values may hold spaces (`Reason=maint
 * [root@2026-11-22T09:00:00]`, `OS=Linux 6.1 #1 SMP`): a word that does not start a `Key=` belongs
 * to the value before it.
 */
export function parseScontrolLine(line: string): Map<string, string> {
  const fields = new Map<string, string>();
  let key: string | null = null;
  for (const word of line.trim().split(/\s+/)) {
    const m = /^([A-Za-z][\w/:.]*)=(.*)$/.exec(word);
    if (m) {
      key = m[1]!;
      fields.set(key, m[2]!);
    } else if (key !== null) fields.set(key, `${fields.get(key)} ${word}`);
  }
  return fields;
}

/** The nodes of `scontrol show node -o -d` (one node per line). */
export function parseScontrolNodes(out: string): SlurmNode[] {
  return out
    .split('\n')
    .filter((l) => l.startsWith('NodeName='))
    .map((line) => {
      const f = parseScontrolLine(line);
      const reason = f.get('Reason');
      const features = f.get('AvailableFeatures') ?? '';
      return {
        name: f.get('NodeName')!,
        state: f.get('State') ?? 'UNKNOWN',
        reason: reason === undefined || reason === '(null)' ? null : reason,
        gres: parseGres(f.get('Gres')),
        gresUsed: parseGres(f.get('GresUsed')),
        features: features === '(null)' || features === '' ? [] : features.split(','),
      };
    });
}

/** Whether a node state says drained or draining. */
export function isDrained(state: string): boolean {
  return /\bDRAIN/.test(state.toUpperCase());
}
