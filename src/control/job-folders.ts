import { chmodSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The jobs' folders (`DATA_DIR/jobs/ID/`: attempts with their logs, the checkpoint folder) are
 * private to the service: `jobs/` and each job's folder are made 0700, and become passable (0711,
 * run-as.ts) only where a job runs as its user's Unix account, which must reach its checkpoint
 * folder. A folder others may list or enter would show every local account (a mapped user's job
 * among them) the logs and checkpoints of the jobs that run as the service's own user: the
 * admins' jobs, and every job of a service that does not run as root. Found in an attack round:
 * on a data dir made 0755 (`mkdir /var/lib/migpool`), and on the default 0700 one once a mapped
 * user's job had made it passable, that job listed `jobs/` and read another user's stdout.log.
 */

/** Mode of the folders the service makes under `jobs/` (the mode argument of mkdir). */
export const JOB_FOLDER_MODE = 0o700;

/** Group and others' read and write bits: what a folder others must not list or change drops. */
const GROUP_OTHER_READ_WRITE = 0o066;

/**
 * Makes the jobs' folders of a data dir written before they were private so: `jobs/` loses group
 * and others' read and write (0755 becomes 0711), and each job's folder becomes 0700, or 0711
 * where its checkpoint folder belongs to another account (a job run as its user's account, which
 * must still pass through). Nothing is done when `jobs/` is missing or already private, so a data
 * dir is walked once. Returns how many folders changed.
 */
export function privateJobFolders(dataDir: string, serviceUid: number | null = process.getuid?.() ?? null): number {
  const jobs = join(dataDir, 'jobs');
  let mode: number;
  try {
    mode = statSync(jobs).mode & 0o7777;
  } catch {
    return 0;
  }
  if ((mode & GROUP_OTHER_READ_WRITE) === 0) return 0;
  let changed = 0;
  for (const entry of readdirSync(jobs, { withFileTypes: true })) {
    if (!entry.isDirectory()) continue;
    const dir = join(jobs, entry.name);
    const have = statSync(dir).mode & 0o7777;
    let ownerElsewhere = false;
    try {
      ownerElsewhere = serviceUid !== null && statSync(join(dir, 'checkpoint')).uid !== serviceUid;
    } catch {
      // No checkpoint folder yet: the service's alone.
    }
    const want = ownerElsewhere ? 0o711 : JOB_FOLDER_MODE;
    if (have !== want) {
      chmodSync(dir, want);
      changed++;
    }
  }
  chmodSync(jobs, mode & ~GROUP_OTHER_READ_WRITE);
  return changed + 1;
}
