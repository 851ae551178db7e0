import { MigpoolError } from '../errors.js';

/**
 * How long a client that follows a job (`submit --wait`, `logs -f`) keeps asking a service that
 * does not answer: 5 minutes, long enough for a restart of `migpool serve` (an upgrade, a crash
 * and its restart by systemd), after which the job is still there (a choice).
 */
export const RESTART_PATIENCE_MS = 300_000;
/** Pause between two asks of a service that does not answer, ms (a choice). */
export const RESTART_RETRY_MS = 1000;

/** One follower's outage: when the service stopped answering (null: it answers). */
export interface Outage {
  since: number | null;
}

export interface ThroughRestartsOptions {
  readonly now?: () => number;
  readonly sleep?: (ms: number) => Promise<void>;
  readonly patienceMs?: number;
}

/**
 * Runs `call`, asking again while the service does not answer (the client's `unanswered`
 * errors), for up to {@link RESTART_PATIENCE_MS} from the first failure of the outage; says once
 * when it starts waiting and once when the service answers again. Other errors, and the last one
 * after the patience, are thrown as they are.
 */
export async function throughRestarts<T>(call: () => Promise<T>, outage: Outage, say: (line: string) => void, options: ThroughRestartsOptions = {}): Promise<T> {
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const patience = options.patienceMs ?? RESTART_PATIENCE_MS;
  for (;;) {
    try {
      const value = await call();
      if (outage.since !== null) say('migpool: the service answers again');
      outage.since = null;
      return value;
    } catch (e) {
      if (!(e instanceof MigpoolError) || e.details['unanswered'] !== true) throw e;
      if (outage.since === null) {
        outage.since = now();
        say(`migpool: ${e.message}; asking again for up to ${Math.round(patience / 60_000)} min (a restarting service keeps the job)`);
      } else if (now() - outage.since >= patience) throw e;
      await sleep(RESTART_RETRY_MS);
    }
  }
}
