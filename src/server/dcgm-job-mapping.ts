import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { badInput } from '../errors.js';
import { checkDirectoryPath } from './files.js';
import type { GpuSnapshot, PoolService } from '../control/service-port.js';
import type { EventType } from '../store/types.js';

/**
 * dcgm-exporter's HPC job mapping, kept current by the service: with `--hpc-job-mapping-dir DIR`
 * (or DCGM_HPC_JOB_MAPPING_DIR), dcgm-exporter reads at every collection each file of DIR named
 * `<gpu index>` or, for a MIG instance, `<gpu index>.<GPU instance id>` (the name must match
 * `^\d+(\.\d+)?$`), takes each line as the id of a job running there, and copies the GPU's (or
 * instance's) series once per job with the label `hpc_job="<id>"`. A MIG series looks up
 * `<gpu>.<GPU_I_ID>` only, a whole GPU's `<gpu>` only.
 * Source: NVIDIA/dcgm-exporter internal/pkg/transformation/hpc.go (`validGPUFile`, `readFile`,
 * `Process`; MIG file names since release 4.5.3-4.8.2, PR #602), const.go (`hpcJobAttribute =
 * "hpc_job"`), and its README ("How to include HPC jobs in metric labels").
 */

/** File names dcgm-exporter reads (hpc.go `validGPUFile`); others in the directory are left alone. */
export const MAPPING_FILE_NAME = /^\d+(\.\d+)?$/;

/**
 * The mapping files the GPUs call for: file name to content (job ids, one a line). A GPU whose
 * whole-GPU jobs run on it gets `<index>`; a MIG instance a job holds gets `<index>.<GI id>`
 * (instances whose GI id is unknown get none). GPUs and instances without jobs get no file.
 */
export function jobMappingFiles(gpus: readonly GpuSnapshot[]): Map<string, string> {
  const files = new Map<string, string>();
  const add = (name: string, job: string) => files.set(name, `${files.get(name) ?? ''}${job}\n`);
  for (const g of gpus) {
    for (const job of g.wholeGpuJobs) add(String(g.index), job);
    for (const i of g.instances) if (i.job !== null && i.gpuInstanceId != null) add(`${g.index}.${i.gpuInstanceId}`, i.job);
  }
  return files;
}

/** Events after which jobs may sit elsewhere (or nowhere): a start, an end, a requeue, a re-partition. */
const MOVES: ReadonlySet<EventType> = new Set<EventType>(['job-starting', 'job-started', 'job-finished', 'job-requeued', 'gpu-reconfigured', 'service-started']);

/** A running writer of the mapping files. */
export interface JobMappingWriter {
  /** Resolves once the files match the service as it is now. */
  sync(): Promise<void>;
  /** Stops following the service; the files stay (jobs keep running while the service is down). */
  close(): Promise<void>;
}

/** What the mapping directory is for, in errors about it. */
export const DCGM_DIR_HINT = 'the one dcgm-exporter reads with --hpc-job-mapping-dir';

/**
 * Keeps DIR's mapping files equal to {@link jobMappingFiles} of the service's GPUs: rewritten after
 * every start, end, requeue (preemption) and re-partition, each file replaced atomically (written
 * beside it under a name dcgm-exporter ignores, then renamed over it), files of GPUs and instances
 * without jobs (left by an earlier run, or by jobs that ended) removed. Creates DIR (mode 0755:
 * dcgm-exporter runs as another user). A write that fails is reported through `log` and retried
 * at the next change.
 */
export async function startJobMapping(service: PoolService, dir: string, log?: (line: string) => void): Promise<JobMappingWriter> {
  checkDirectoryPath(dir, '--dcgm-job-mapping-dir', DCGM_DIR_HINT);
  try {
    await mkdir(dir, { recursive: true, mode: 0o755 });
  } catch (e) {
    throw badInput(`--dcgm-job-mapping-dir '${dir}': cannot create it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}); give a writable directory (${DCGM_DIR_HINT})`);
  }
  let chain: Promise<void> = Promise.resolve();
  let queued = false;
  let lastError = '';

  const writeOnce = async (): Promise<void> => {
    const want = jobMappingFiles(await service.gpus());
    const present = (await readdir(dir, { withFileTypes: true })).filter((d) => d.isFile() && MAPPING_FILE_NAME.test(d.name)).map((d) => d.name);
    for (const name of present) if (!want.has(name)) await rm(join(dir, name), { force: true });
    for (const [name, text] of want) {
      const path = join(dir, name);
      const now = await readFile(path, 'utf8').catch(() => null);
      if (now === text) continue;
      const tmp = join(dir, `.${name}.migpool-${process.pid}.tmp`);
      try {
        await writeFile(tmp, text, { mode: 0o644 });
        await rename(tmp, path);
      } catch (e) {
        await rm(tmp, { force: true });
        throw e;
      }
    }
  };

  /** Queues a rewrite (coalesced: at most one waits behind the one running). */
  const sync = (): Promise<void> => {
    if (queued) return chain;
    queued = true;
    chain = chain.then(async () => {
      queued = false;
      try {
        await writeOnce();
        lastError = '';
      } catch (e) {
        const message = `dcgm job mapping: cannot update ${dir}: ${e instanceof Error ? e.message : String(e)}`;
        if (message !== lastError) log?.(message);
        lastError = message;
      }
    });
    return chain;
  };

  await sync();
  if (lastError !== '') throw badInput(`--dcgm-job-mapping-dir '${dir}': ${lastError}; give a directory migpool may write`);
  const unsubscribe = service.subscribe((e) => {
    if (MOVES.has(e.type)) void sync();
  });
  return {
    sync,
    async close() {
      unsubscribe();
      await chain;
    },
  };
}
