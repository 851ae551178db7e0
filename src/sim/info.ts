import { badInput } from '../errors.js';
import { createRandom } from '../random.js';

/**
 * The information model: what a policy learns of a job's length in the simulator. In production
 * nobody knows how long a training job will run; a trace does. The simulator runs every job by its
 * true work, and hands policies only an estimate made from the truth by one of these modes:
 *
 * - `exact`: the truth (an oracle; for reference runs only: no production scheduler has it).
 * - `noisy`: truth x e^N(0,1), one draw per job (a user's guess: the median is right, a quarter of
 *   the guesses are off by 2x or more).
 * - `overestimate`: truth x U(1,10), rounded up to a power of two hours (2^k h, k a whole number,
 *   negative too): what a wall-time limit looks like (users ask for far more than they use).
 * - `none`: null for every job (a policy knows nothing of lengths).
 * - `progress`: null until the job has run PROGRESS_REVEAL_SECONDS in all, then the truth: what a
 *   job that reports its total steps through the progress protocol reveals once it has run a
 *   while.
 *
 * Draws come from their own seeded source (`seed`), one per job in arrival order, so that the
 * estimates are the same for every policy of one run.
 */
export type InfoMode = 'exact' | 'noisy' | 'overestimate' | 'none' | 'progress';

/** The modes, for help texts and checks. */
export const INFO_MODES: readonly InfoMode[] = ['exact', 'noisy', 'overestimate', 'none', 'progress'];

/** The CLI's default: what a user's guess is worth. */
export const DEFAULT_INFO_MODE: InfoMode = 'noisy';

/**
 * Seconds a job must have run (over all its runs) before `progress` reveals its length: about the
 * time a training job takes to load its data, start and print a few progress lines with its total.
 */
export const PROGRESS_REVEAL_SECONDS = 300;

/** An information model: a mode and the seed of its draws. */
export interface InfoModel {
  readonly mode: InfoMode;
  readonly seed: number;
}

/** Parses `--info`. */
export function parseInfoMode(text: string): InfoMode {
  const m = text.trim().toLowerCase();
  if (!(INFO_MODES as readonly string[]).includes(m)) throw badInput(`--info '${text}': unknown information model; use one of ${INFO_MODES.join(', ')}`);
  return m as InfoMode;
}

/** Per job, what the policy is told: a fixed estimate, or (progress) one revealed after a while. */
export interface Estimator {
  /** The estimate for a job of true work `work` that has run `ranSeconds` so far. */
  estimate(index: number, work: number, ranSeconds: number): number | null;
  /** Whether estimates change as a job runs (progress): the simulator re-reads them then. */
  readonly dynamic: boolean;
}

/** A standard normal draw (Box-Muller) from a uniform source. */
function normal(random: () => number): number {
  const u = Math.max(random(), Number.MIN_VALUE);
  const v = random();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
}

/** Rounds seconds up to a power of two hours. */
export function roundUpToPowerOfTwoHours(seconds: number): number {
  const hours = seconds / 3600;
  return 3600 * 2 ** Math.ceil(Math.log2(hours));
}

/** The estimator of a model, for `works` (true work of each job, in arrival order). */
export function createEstimator(model: InfoModel, works: readonly number[]): Estimator {
  switch (model.mode) {
    case 'exact':
      return { dynamic: false, estimate: (_i, work) => work };
    case 'none':
      return { dynamic: false, estimate: () => null };
    case 'progress':
      return { dynamic: true, estimate: (_i, work, ran) => (ran >= PROGRESS_REVEAL_SECONDS ? work : null) };
    case 'noisy': {
      const random = createRandom(model.seed);
      const factors = works.map(() => Math.exp(normal(random)));
      return { dynamic: false, estimate: (i, work) => work * (factors[i] as number) };
    }
    case 'overestimate': {
      const random = createRandom(model.seed);
      const factors = works.map(() => 1 + 9 * random());
      return { dynamic: false, estimate: (i, work) => roundUpToPowerOfTwoHours(work * (factors[i] as number)) };
    }
  }
}
