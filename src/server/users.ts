import { createHash } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { PoolService } from '../control/service-port.js';
import type { EventRecord, JobRecord, Store } from '../store/types.js';
import { tokenChecker } from './auth.js';
import { newToken } from './files.js';

/**
 * Users of the HTTP API: who a request is made by, and what they may see. Every call but the
 * public ones (the dashboard's page and assets, the API description) is made as a user, named by
 * the bearer token it sends. A user sees, cancels and reads the logs of their own jobs only;
 * another user's job answers 404 as if it did not exist (its id says nothing then). Admins see
 * and act on every job.
 */

/** Who a request is made by. */
export interface Caller {
  readonly name: string;
  readonly admin: boolean;
}

/** Finds the user a bearer token belongs to; null for no user's token. */
export type CallerLookup = (token: string) => Promise<Caller | null>;

export { newToken };

/** What the store keeps of a token: its SHA-256, hex. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/**
 * The users of a store as a {@link CallerLookup}, read at every request, so that `migpool users
 * add|remove|rotate` run against the data dir take effect at once in a running service.
 *
 * The token itself is never compared: its SHA-256 is looked up. Whatever the lookup's timing
 * reveals is about the hash of the attacker's own guess, which says nothing about any stored
 * token's value (SHA-256 is preimage resistant), so no comparison of secrets leaks through time.
 */
export function storeCallers(store: Pick<Store, 'userByTokenHash'>): CallerLookup {
  return async (token) => {
    const user = await store.userByTokenHash(hashToken(token));
    return user ? { name: user.name, admin: user.admin } : null;
  };
}

/**
 * One token, one admin (a server built without a user store, e.g. in unit tests): compared in
 * constant time by `tokenChecker`.
 */
export function singleTokenCaller(token: string, name = 'admin'): CallerLookup {
  const check = tokenChecker(token);
  return async (sent) => (check(sent) ? { name, admin: true } : null);
}

/** What became of the data dir's token at start (see {@link adoptTokenAsAdmin}). */
export type AdoptedToken = 'created-admin' | 'known' | 'unknown';

/** Name of the admin user the data dir's first token becomes. */
export const FIRST_ADMIN = 'admin';

/**
 * Makes the data dir's token (created at the first start, see `loadOrCreateToken`) the token of
 * an admin user named `admin` when the store has no user yet: a new data dir, or one written
 * before users existed. `known`: the token is some user's already; `unknown`: users exist and the
 * token is none of theirs (e.g. the file was deleted and made anew): the file's token is refused.
 */
export async function adoptTokenAsAdmin(store: Pick<Store, 'userByTokenHash' | 'listUsers' | 'insertUser'>, token: string, now: number): Promise<AdoptedToken> {
  const hash = hashToken(token);
  if (await store.userByTokenHash(hash)) return 'known';
  if ((await store.listUsers()).length > 0) return 'unknown';
  await store.insertUser({ name: FIRST_ADMIN, admin: true }, hash, now);
  return 'created-admin';
}

/** True when `caller` may see `job`: it is theirs, or they are an admin. */
export function canSee(caller: Caller, job: Pick<JobRecord, 'owner'>): boolean {
  return caller.admin || job.owner === caller.name;
}

/** The caller set by the auth hook; public routes have none. */
export function callerOf(request: FastifyRequest): Caller {
  const caller = (request as FastifyRequest & { caller?: Caller | null }).caller;
  if (!caller) throw new Error(`${request.method} ${request.url.split('?')[0]}: no caller; this route must not be public`);
  return caller;
}

/** Stores the caller on the request (the auth hook's job). */
export function setCaller(request: FastifyRequest, caller: Caller): void {
  (request as FastifyRequest & { caller?: Caller | null }).caller = caller;
}

/** The job with this id when `caller` may see it, else null (the route answers 404). */
export async function visibleJob(service: Pick<PoolService, 'getJob'>, caller: Caller, id: string): Promise<JobRecord | null> {
  const job = await service.getJob(id);
  return job !== null && canSee(caller, job) ? job : null;
}

/**
 * Which events `caller` may receive on /v1/events, and as what: all, as they are, for an admin;
 * for others, the events of their own jobs and those of no job (GPUs, the service), with other
 * users' job ids taken out of their own jobs' events as GET /v1/jobs/ID takes them out
 * (visible-job.ts): an MPS slowdown's `foreground` is null when it is another user's job, a
 * placement's MPS `neighbours` lists their own (others counted in `otherNeighbours`). The owner
 * of each job is looked up once until the job's `job-finished` (kept in `owners`, for tests).
 */
export function eventFilter(service: Pick<PoolService, 'getJob'>, caller: Caller, owners = new Map<string, Promise<string | null>>()): ((event: EventRecord) => Promise<EventRecord | null>) | undefined {
  if (caller.admin) return undefined;
  const owns = async (id: string): Promise<boolean> => {
    let owner = owners.get(id);
    if (owner === undefined) {
      owner = service.getJob(id).then((j) => j?.owner ?? null);
      owners.set(id, owner);
    }
    return (await owner) === caller.name;
  };
  // A job's owner is forgotten at its end (its last event): a stream open for weeks kept one per job of the pool.
  return async (event) => {
    try {
      return await shown(event);
    } finally {
      if (event.type === 'job-finished' && event.jobId !== null) owners.delete(event.jobId);
    }
  };
  async function shown(event: EventRecord): Promise<EventRecord | null> {
    if (event.jobId === null) return event;
    if (!(await owns(event.jobId))) return null;
    const data = event.data as { foreground?: unknown; placement?: { mps?: { neighbours?: unknown } } } | null;
    if (data === null || typeof data !== 'object') return event;
    let out = data as Record<string, unknown>;
    if (typeof data.foreground === 'string' && !(await owns(data.foreground))) out = { ...out, foreground: null };
    const neighbours = data.placement?.mps?.neighbours;
    if (Array.isArray(neighbours) && neighbours.length > 0) {
      const own: string[] = [];
      for (const id of neighbours) if (typeof id === 'string' && (await owns(id))) own.push(id);
      if (own.length < neighbours.length) out = { ...out, placement: { ...data.placement, mps: { ...data.placement!.mps, neighbours: own, otherNeighbours: neighbours.length - own.length } } };
    }
    return out === data ? event : { ...event, data: out };
  }
}
