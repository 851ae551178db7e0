import type { UserShare } from '../sched/types.js';
import { mkdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { badInput, MigpoolError } from '../errors.js';
import { PoolServiceImpl } from '../control/service.js';
import type { Executor } from '../exec/executor.js';
import { createLocalExecutor } from '../exec/local-executor.js';
import { createSlurmExecutor } from '../exec/slurm-executor.js';
import { parsePolicy } from '../sched/registry.js';
import { buildServer } from '../server/app.js';
import { DCGM_DIR_HINT, startJobMapping, type JobMappingWriter } from '../server/dcgm-job-mapping.js';
import { lockDataDir, type DataDirLock } from './data-dir-lock.js';
import { checkDirectoryPath, loadOrCreateToken, removeServerInfo, tokenPath, writeServerInfo, SERVER_INFO_FILE } from '../server/files.js';
import { checkStoreFile, openStore } from '../store/open.js';
import { adoptTokenAsAdmin, FIRST_ADMIN, storeCallers } from '../server/users.js';
import type { Store } from '../store/types.js';
import type { GpuPort } from '../gpu/port.js';
import type { Workload } from '../perf/types.js';
import { openGpuPort, simulatorStatePath } from './device.js';
import { isFetchBadPort } from './fetch-bad-ports.js';
import type { MultiplexOptions } from '../control/multiplex.js';

/** What `migpool serve` (and `migpool demo`) start with; defaults in brackets. */
export interface PoolOptions {
  readonly dataDir: string;
  /** `HOST:PORT` [127.0.0.1:7070]; port 0 picks a free one. */
  readonly listen?: string;
  /** [migpool] */
  readonly policy?: string;
  /** Simulated GPUs (`2xA100-SXM4-40GB`), kept in the data dir; absent: real GPUs through nvidia-smi. */
  readonly simulate?: string;
  /** `postgres://...`; absent: SQLite in the data dir. */
  readonly database?: string;
  readonly tickMs?: number;
  /** Accept jobs but start none (see ServiceOptions.hold) [false]. */
  readonly hold?: boolean;
  /** Where attempts run: processes here, or jobs handed to Slurm with sbatch [local]. */
  readonly executor?: 'local' | 'slurm';
  /**
   * Slurm executor: ms between squeue polls [2000]; GRES type of a profile as a template holding
   * `{profile}` [none: named as AutoDetect=nvml names it on the pool's GPUs]; CPUs and MiB of memory
   * per compute slice [2, 8192]; more sbatch arguments.
   */
  readonly slurm?: { readonly pollMs?: number; readonly gresType?: string; readonly cpusPerSlice?: number; readonly memPerSliceMiB?: number; readonly sbatchArgs?: readonly string[] };
  /** Workloads besides the built-in ones (`migpool serve --workload FILE.yaml`). */
  readonly workloads?: readonly Workload[];
  /** Keep dcgm-exporter's HPC job mapping files (its --hpc-job-mapping-dir) in this directory [none]. */
  readonly dcgmJobMappingDir?: string;
  readonly log?: (line: string) => void;
  /** Largest slowdown of a foreground job beside background MPS clients before they back off [1.1]. */
  readonly mpsSlowdownBound?: number;
  /** Run jobs of unmapped users who are no admins as root when the service is root (ServiceOptions.unmappedUsersAsRoot) [false]. */
  readonly unmappedUsersAsRoot?: boolean;
}

/** A running pool: the service, its HTTP server, and how to stop both. */
export interface RunningPool {
  readonly service: PoolServiceImpl;
  readonly app: FastifyInstance;
  readonly store: Store;
  readonly url: string;
  readonly token: string;
  readonly dataDir: string;
  close(): Promise<void>;
}

/** `127.0.0.1:7070` → host and port; a bare port means loopback. */
export function parseListen(text: string): { host: string; port: number } {
  const m = /^(?:(\[[0-9a-fA-F:]+\]|[\w.-]+):)?(\d{1,5})$/.exec(text.trim());
  const port = m ? Number(m[2]) : NaN;
  if (!m || port > 65535) throw badInput(`--listen '${text}': expected HOST:PORT such as 127.0.0.1:7070 (or a port)`);
  const host = (m[1] ?? '127.0.0.1').replace(/^\[|\]$/g, '');
  if (isFetchBadPort(port)) {
    throw badInput(`--listen '${text}': port ${port} is one that fetch() and browsers refuse (a "bad port" of the Fetch standard), so neither migpool's client nor the dashboard could reach the service; pass another port, e.g. --listen ${m[1] ?? '127.0.0.1'}:8080`);
  }
  return { host, port };
}

/**
 * The names a loopback listener answers to (its own address, localhost, 127.0.0.1, ::1); null for
 * any other address, whose names the service cannot know.
 */
export function loopbackNames(host: string): string[] | null {
  const loopback = host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
  return loopback ? [...new Set([host, 'localhost', '127.0.0.1', '::1'])] : null;
}

/**
 * Refuses to start a second service on a data dir whose service is still alive: the pid in
 * server.json runs and its command line is migpool's (a pid reused since a crash is not).
 */
async function checkNotRunning(dataDir: string): Promise<void> {
  const pid = await runningPid(dataDir);
  if (pid !== null) throw badInput(`another migpool service (pid ${pid}) uses ${dataDir}: stop it first, or pass another --data-dir`);
}

/** The pid of the live migpool service that server.json names, or null. */
async function runningPid(dataDir: string): Promise<number | null> {
  let pid: number | null;
  try {
    const info = JSON.parse(await readFile(join(dataDir, SERVER_INFO_FILE), 'utf8')) as { pid?: unknown };
    pid = typeof info.pid === 'number' ? info.pid : null;
  } catch {
    return null;
  }
  if (pid === null || pid === process.pid) return null;
  let cmdline: string;
  try {
    cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return null;
  }
  return cmdline.includes('migpool') ? pid : null;
}

/**
 * Takes the data dir for this service (see data-dir-lock.ts), or refuses: another service holds
 * it, one that may still be starting (no server.json yet) or stopping.
 */
async function takeDataDir(dataDir: string): Promise<DataDirLock> {
  const lock = await lockDataDir(dataDir);
  if (lock !== null) return lock;
  const pid = await runningPid(dataDir);
  throw badInput(`another migpool service ${pid === null ? '(starting or stopping)' : `(pid ${pid})`} uses ${dataDir}: stop it first, or pass another --data-dir`);
}

function openExecutor(o: PoolOptions, gpu: GpuPort): Executor {
  const kind = o.executor ?? 'local';
  if (kind === 'local') return createLocalExecutor();
  if (kind !== 'slurm') throw badInput(`--executor '${String(kind)}': use local or slurm`);
  const template = o.slurm?.gresType;
  if (template !== undefined && !template.includes('{profile}')) throw badInput(`--slurm-gres-type '${template}': the template must hold {profile}, e.g. {profile} or a100_{profile}`);
  return createSlurmExecutor({
    pollMs: o.slurm?.pollMs,
    gresType: template === undefined ? undefined : (p) => template.replaceAll('{profile}', p),
    gpuProducts: async () => (await gpu.listGpus()).map((g) => g.name),
    cpusPerSlice: o.slurm?.cpusPerSlice,
    memPerSliceMiB: o.slurm?.memPerSliceMiB,
    sbatchArgs: o.slurm?.sbatchArgs,
  });
}

/** Opens the store, the GPUs and the executor, starts the live loop and the HTTP server. */
export async function startPool(o: PoolOptions): Promise<RunningPool> {
  const { host, port } = parseListen(o.listen ?? '127.0.0.1:7070');
  const policy = parsePolicy(o.policy ?? 'migpool');
  // A file where a directory should be is refused before anything is created.
  checkDirectoryPath(o.dataDir, '--data-dir');
  if (o.dcgmJobMappingDir !== undefined) checkDirectoryPath(o.dcgmJobMappingDir, '--dcgm-job-mapping-dir', DCGM_DIR_HINT);
  // A migpool.db that is not migpool's is refused before the simulated GPUs' file is written beside it.
  checkStoreFile({ dataDir: o.dataDir, databaseUrl: o.database });
  try {
    mkdirSync(o.dataDir, { recursive: true, mode: 0o700 });
  } catch (e) {
    throw badInput(`cannot create --data-dir '${o.dataDir}': ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}; give a writable directory`);
  }
  const lock = await takeDataDir(o.dataDir);
  try {
    await checkNotRunning(o.dataDir);
    return await startHolding(o, host, port, policy, lock);
  } catch (e) {
    await lock.release();
    throw e;
  }
}

/** {@link startPool} once the data dir is this process's: `close` releases it last. */
async function startHolding(o: PoolOptions, host: string, port: number, policy: ReturnType<typeof parsePolicy>, lock: DataDirLock): Promise<RunningPool> {
  // The simulated machine is shared with `migpool sim attach` and the jobs' fake nvidia-smi: its port reads the file again when they change it, and changes it under the file's lock.
  const gpu = openGpuPort({ simulate: o.simulate, stateDir: o.dataDir }, {});
  const jobEnv: Record<string, string> = o.simulate ? { MIGPOOL_FAKE_NVIDIA_SMI_STATE: simulatorStatePath({ stateDir: o.dataDir }, {}) } : {};
  const store = await openStore({ dataDir: o.dataDir, databaseUrl: o.database });
  const executor = openExecutor(o, gpu);
  // Users' weights and quotas enter the policy's view at every pass (src/sched/shares.ts).
  const users = async (): Promise<ReadonlyMap<string, UserShare>> => new Map((await store.listUsers()).map((u) => [u.name, { weight: u.weight, quotaGpus: u.quotaGpus }]));
  const service = new PoolServiceImpl({ store, executor, gpu, policy, dataDir: o.dataDir, jobEnv, ...(o.tickMs !== undefined ? { tickMs: o.tickMs } : {}), hold: o.hold, users, ...(o.workloads ? { workloads: o.workloads } : {}), log: o.log, multiplex: poolMultiplex(o), unmappedUsersAsRoot: o.unmappedUsersAsRoot ?? false });
  let app: FastifyInstance | null = null;
  let mapping: JobMappingWriter | null = null;
  try {
    await service.start();
    if (o.dcgmJobMappingDir !== undefined) mapping = await startJobMapping(service, o.dcgmJobMappingDir, o.log);
    const token = await loadOrCreateToken(o.dataDir);
    // The first start's token is the admin's; a data dir from before users existed gets its admin too.
    if ((await adoptTokenAsAdmin(store, token, Date.now())) === 'unknown') {
      o.log?.(`the token in ${tokenPath(o.dataDir)} is no user's (users exist and it is none of theirs): \`migpool users rotate ${FIRST_ADMIN}\` writes a new admin token there`);
    }
    app = await buildServer({ service, callers: storeCallers(store), tokenFile: tokenPath(o.dataDir), allowedHosts: loopbackNames(host) ?? undefined });
    let address: string;
    try {
      address = await app.listen({ host, port });
    } catch (e) {
      throw new MigpoolError('RUNTIME', `cannot listen on ${host}:${port}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}; pass another --listen`);
    }
    const url = address.replace('://[::1]', '://localhost');
    await writeServerInfo(o.dataDir, { url, pid: process.pid });
    const opened = app;
    return {
      service,
      app: opened,
      store,
      url,
      token,
      dataDir: o.dataDir,
      async close() {
        const closing = opened.close();
        opened.server.closeIdleConnections();
        await closing;
        await mapping?.close();
        await service.stop();
        await store.close();
        await removeServerInfo(o.dataDir);
        await lock.release();
      },
    };
  } catch (e) {
    await app?.close().catch(() => undefined);
    await mapping?.close().catch(() => undefined);
    await service.stop().catch(() => undefined);
    await store.close().catch(() => undefined);
    throw e;
  }
}

/**
 * MPS in the service: daemons run only for local jobs on real GPUs (simulated GPUs have no MPS;
 * Slurm jobs run on other nodes, where Slurm's own MPS support applies).
 */
function poolMultiplex(o: PoolOptions): MultiplexOptions {
  return { daemons: o.simulate === undefined && o.executor !== 'slurm', ...(o.mpsSlowdownBound !== undefined ? { slowdownBound: o.mpsSlowdownBound } : {}) };
}
