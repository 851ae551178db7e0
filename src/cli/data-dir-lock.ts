import { createHash } from 'node:crypto';
import { realpathSync } from 'node:fs';
import { createServer, type Server } from 'node:net';

/** A data dir held by this process until {@link DataDirLock.release}. */
export interface DataDirLock {
  release(): Promise<void>;
}

/**
 * The name of the lock of `dataDir`: a Linux abstract-namespace socket (a name that starts with
 * a NUL byte, unix(7)), named after the data dir's real path, so that two spellings of one
 * folder share one lock. The kernel frees the name when its process dies, kill -9 included, so
 * no lock outlives its service.
 */
export function lockName(dataDir: string, purpose: 'serve' | 'apply' = 'serve'): string {
  return `\0migpool-${purpose}-${createHash('sha256').update(realpathSync(dataDir)).digest('hex').slice(0, 40)}`;
}

/**
 * Takes the data dir for this process, atomically: of two services started on one data dir at
 * the same moment, one gets it and the other is told no (null). server.json alone cannot say it:
 * it is written once the service listens, seconds after the first pass may have started jobs.
 */
export async function lockDataDir(dataDir: string, purpose: 'serve' | 'apply' = 'serve'): Promise<DataDirLock | null> {
  const server: Server = createServer((socket) => socket.destroy());
  const taken = await new Promise<boolean>((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) => (e.code === 'EADDRINUSE' ? resolve(false) : reject(e)));
    server.listen(lockName(dataDir, purpose), () => resolve(true));
  });
  if (!taken) return null;
  server.unref();
  return { release: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}
