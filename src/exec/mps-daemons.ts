import { join } from 'node:path';
import { quitMpsDaemon, startMpsDaemon } from './mps.js';

/** Where one device's MPS daemon keeps its pipes and logs; what its clients get in their environment. */
export interface MpsDirs {
  readonly pipeDir: string;
  readonly logDir: string;
}

/** Options of {@link MpsDaemons}. */
export interface MpsDaemonsOptions {
  /** The service's data dir: daemons live under `<dataDir>/mps/<device>/{pipe,log}`. */
  readonly dataDir: string;
  /** Environment the daemons start from (PATH finds nvidia-cuda-mps-control) [process.env at each start]. */
  readonly env?: () => NodeJS.ProcessEnv;
}

interface Daemon {
  readonly dirs: MpsDirs;
  readonly stop: () => Promise<void>;
  /** Started by an earlier service process (found at recovery), not by this one. */
  readonly adopted: boolean;
}

/**
 * The MPS control daemons of the service: one per device set (a GPU or a MIG instance, by UUID),
 * started when the first client there needs it and stopped when the last one is gone. Each runs
 * with CUDA_VISIBLE_DEVICES set to its device and its own pipe and log directories
 * (CUDA_MPS_PIPE_DIRECTORY, CUDA_MPS_LOG_DIRECTORY: NVIDIA's MPS documentation, "Appendix:
 * Environment Variables", lets several daemons run side by side when each has its own pipe
 * directory), so one device's clients never reach another device's daemon.
 *
 * Not thread-safe by itself: the service calls it under its lock.
 */
export class MpsDaemons {
  private readonly daemons = new Map<string, Daemon>();

  constructor(private readonly o: MpsDaemonsOptions) {}

  /** The directories of the daemon of `devices` (whether it runs or not). */
  dirsOf(devices: readonly string[]): MpsDirs {
    const dir = join(this.o.dataDir, 'mps', keyOf(devices).replace(/[^A-Za-z0-9._-]/g, '_'));
    return { pipeDir: join(dir, 'pipe'), logDir: join(dir, 'log') };
  }

  /**
   * Starts the daemon of `devices` unless it runs already; returns its directories.
   * @throws MigpoolError DEVICE when nvidia-cuda-mps-control is missing or fails
   */
  async ensure(devices: readonly string[]): Promise<MpsDirs> {
    const key = keyOf(devices);
    const found = this.daemons.get(key);
    if (found) return found.dirs;
    const dirs = this.dirsOf(devices);
    const env = { ...(this.o.env?.() ?? process.env), CUDA_VISIBLE_DEVICES: key };
    const stop = await startMpsDaemon(dirs.pipeDir, env, dirs.logDir);
    this.daemons.set(key, { dirs, stop, adopted: false });
    return dirs;
  }

  /**
   * After a service restart: the daemon of `devices` that an earlier service process started for
   * clients still running is taken as running (a second `-d` on the same pipe directory would
   * only fail), and stopped like the others once its clients are gone.
   */
  adopt(devices: readonly string[]): MpsDirs {
    const key = keyOf(devices);
    const found = this.daemons.get(key);
    if (found) return found.dirs;
    const dirs = this.dirsOf(devices);
    const env = { ...(this.o.env?.() ?? process.env), CUDA_VISIBLE_DEVICES: key, CUDA_MPS_PIPE_DIRECTORY: dirs.pipeDir, CUDA_MPS_LOG_DIRECTORY: dirs.logDir };
    this.daemons.set(key, { dirs, stop: () => quitMpsDaemon(env), adopted: true });
    return dirs;
  }

  /** Stops the daemons of device sets not in `needed` (keys as {@link keyOf} makes them); returns the keys stopped. */
  async keepOnly(needed: ReadonlySet<string>): Promise<string[]> {
    const stopped: string[] = [];
    for (const [key, d] of [...this.daemons]) {
      if (needed.has(key)) continue;
      this.daemons.delete(key);
      await d.stop();
      stopped.push(key);
    }
    return stopped;
  }

  /** Stops every daemon (service shutdown). */
  async stopAll(): Promise<void> {
    await this.keepOnly(new Set());
  }

  /** Device sets with a running daemon. */
  running(): string[] {
    return [...this.daemons.keys()];
  }
}

/** The key of a device set: its UUIDs joined by commas, as CUDA_VISIBLE_DEVICES takes them. */
export function keyOf(devices: readonly string[]): string {
  return devices.join(',');
}
