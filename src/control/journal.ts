import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { MigpoolError } from '../errors.js';
import type { PlanOperation } from '../partition/plan.js';

/** Where an apply stands, written before and after every operation so a crash loses nothing. */
export interface ApplyJournal {
  version: 1;
  /** What was being applied: `config-default.yaml#all-balanced`. */
  target: string;
  startedAt: string;
  operations: { op: PlanOperation; status: 'pending' | 'running' | 'done' | 'skipped' | 'failed'; note?: string }[];
  failure?: string;
}

/** The journal file of an apply: kept while it runs, left behind when it stops part way. */
export class JournalFile {
  readonly path: string;

  constructor(path: string) {
    this.path = path;
  }

  /** The journal an earlier apply left, or null. */
  read(): ApplyJournal | null {
    let text: string;
    try {
      text = readFileSync(this.path, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw new MigpoolError('RUNTIME', `cannot read the apply journal ${this.path}: ${(e as Error).message}`);
    }
    try {
      const j = JSON.parse(text) as ApplyJournal;
      if (!isJournal(j)) throw new Error('not a journal');
      return j;
    } catch {
      throw new MigpoolError('BAD_INPUT', `the apply journal ${this.path} is damaged; check the GPUs with 'migpool status', then delete it`);
    }
  }

  write(journal: ApplyJournal): void {
    try {
      mkdirSync(dirname(this.path), { recursive: true });
      const tmp = `${this.path}.${process.pid}.tmp`;
      writeFileSync(tmp, `${JSON.stringify(journal, null, 1)}\n`);
      renameSync(tmp, this.path);
    } catch (e) {
      throw new MigpoolError('BAD_INPUT', `cannot write the apply journal ${this.path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}; pass a writable --state-dir`);
    }
  }

  clear(): void {
    rmSync(this.path, { force: true });
  }
}

/** Whether a parsed journal has every field the next apply reads (a hand-edited one may not). */
function isJournal(j: unknown): j is ApplyJournal {
  const o = j as Partial<ApplyJournal> | null;
  return (
    typeof o === 'object' &&
    o !== null &&
    o.version === 1 &&
    typeof o.target === 'string' &&
    typeof o.startedAt === 'string' &&
    Array.isArray(o.operations) &&
    o.operations.every((x: unknown) => {
      const e = x as { op?: { kind?: unknown; gpu?: unknown }; status?: unknown } | null;
      return typeof e === 'object' && e !== null && typeof e.status === 'string' && typeof e.op === 'object' && e.op !== null && typeof e.op.kind === 'string' && typeof e.op.gpu === 'number';
    })
  );
}

/** One line about an interrupted apply, for the next one to report. */
export function describeInterrupted(j: ApplyJournal): string {
  const done = j.operations.filter((o) => o.status === 'done').length;
  const running = j.operations.find((o) => o.status === 'running' || o.status === 'failed');
  const where = running ? `, stopping at ${running.op.kind} on GPU ${running.op.gpu}` : '';
  return `an earlier apply of ${j.target} (started ${j.startedAt}) stopped after ${done} of ${j.operations.length} operations${where}${j.failure ? ` (${j.failure})` : ''}`;
}
