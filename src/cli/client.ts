import { badInput, MigpoolError } from '../errors.js';
import { defaultDataDir, readServerInfo, readToken, tokenPath } from '../server/files.js';
import type { LogChunk } from '../control/service-port.js';
import type { JobFilter, JobRecord } from '../store/types.js';
import { MAX_JOB_PAGE, type JobPage } from '../server/job-page.js';
import { hideTokenFromPs } from './token-option.js';

/** How a client command finds the service: flags, else environment, else the data dir. */
export interface ConnectOptions {
  /** --data-dir: where `migpool serve` keeps `server.json` and `token`. */
  readonly dataDir?: string;
  /** --url: the service's base URL (else $MIGPOOL_URL, else `server.json`). */
  readonly url?: string;
  /** --token: the bearer token (else $MIGPOOL_TOKEN, else `<dataDir>/token`). */
  readonly token?: string;
}

/** Milliseconds a request may take before the client gives up. */
export const REQUEST_TIMEOUT_MS = 30_000;
/** Times a submission with an idempotency key is sent when no answer comes (a choice: about 6 s of retries). */
export const SUBMIT_ATTEMPTS = 3;
/** Pause before the n-th resend of a submission: n times this, ms (a choice). */
export const SUBMIT_RETRY_MS = 2000;

interface ErrorAnswer {
  error?: { code?: string; message?: string; path?: string };
}

function nonEmpty(v: string | undefined): string | undefined {
  return v === undefined || v.trim() === '' ? undefined : v.trim();
}

function checkUrl(url: string, from: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw badInput(`${from} '${url}' is not a URL: give one such as http://127.0.0.1:8470`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw badInput(`${from} '${url}' is not an http(s) URL: give one such as http://127.0.0.1:8470`);
  return url.replace(/\/+$/, '');
}

/**
 * A client of the HTTP API of `migpool serve`, for the CLI. Errors are MigpoolError with one-line
 * messages: an unreachable service is RUNTIME (exit 3); the service's 400, 401 and 404 answers
 * are BAD_INPUT (exit 2) with its message (and field path); its 5xx answers are RUNTIME.
 */
export class ServiceClient {
  private token: Promise<string> | null = null;

  /**
   * @param url base URL of the service, e.g. `http://127.0.0.1:8470`
   * @param tokenSource gives the bearer token; called once, on the first call
   * @param tokenWhere where the token came from, for error messages
   */
  constructor(
    readonly url: string,
    private readonly tokenSource: () => Promise<string>,
    private readonly tokenWhere = '--token',
  ) {}

  /** A client for the service that `opts` (flags), `env` and the data dir point at. */
  static async connect(opts: ConnectOptions, env: NodeJS.ProcessEnv = process.env): Promise<ServiceClient> {
    const dataDir = nonEmpty(opts.dataDir) ?? defaultDataDir(env);
    const flagUrl = nonEmpty(opts.url);
    const envUrl = nonEmpty(env['MIGPOOL_URL']);
    const url = flagUrl !== undefined ? checkUrl(flagUrl, '--url') : envUrl !== undefined ? checkUrl(envUrl, '$MIGPOOL_URL') : checkUrl((await readServerInfo(dataDir)).url, `${dataDir}/server.json: url`);
    const flagToken = nonEmpty(opts.token);
    const envToken = nonEmpty(env['MIGPOOL_TOKEN']);
    if (flagToken !== undefined) {
      hideTokenFromPs(flagToken);
      return new ServiceClient(url, async () => flagToken, '--token');
    }
    if (envToken !== undefined) return new ServiceClient(url, async () => envToken, '$MIGPOOL_TOKEN');
    return new ServiceClient(url, () => readToken(dataDir), tokenPath(dataDir));
  }

  /**
   * Queues several job specs, all or none (`job spec N` in an error names the bad one). With an
   * idempotency key, a submission the service did not answer is sent again (same key) until it
   * answers, {@link SUBMIT_ATTEMPTS} times at most: never queued twice.
   */
  async submitMany(specs: readonly unknown[], options: { idempotencyKey?: string } = {}): Promise<JobRecord[]> {
    return (await this.submitting(options, (headers) => this.request<{ jobs: JobRecord[] }>('POST', '/v1/jobs/batch', specs, headers))).jobs;
  }

  /** Queues one job spec (as parsed from JSON or YAML); retried as {@link submitMany} is. */
  submit(spec: unknown, options: { idempotencyKey?: string } = {}): Promise<JobRecord> {
    return this.submitting(options, (headers) => this.request<JobRecord>('POST', '/v1/jobs', spec, headers));
  }

  private async submitting<T>(options: { idempotencyKey?: string }, send: (headers: Record<string, string>) => Promise<T>): Promise<T> {
    const key = options.idempotencyKey;
    if (key === undefined) return send({});
    for (let attempt = 1; ; attempt++) {
      try {
        return await send({ 'idempotency-key': key });
      } catch (e) {
        // Only a request that got no answer is sent again: an answer (even an error) is final.
        if (!(e instanceof MigpoolError) || e.details['unanswered'] !== true || attempt >= SUBMIT_ATTEMPTS) throw e;
        await new Promise((resolve) => setTimeout(resolve, SUBMIT_RETRY_MS * attempt));
      }
    }
  }

  /**
   * One page of `GET /v1/jobs` (at most `filter.limit` jobs, the service's default page when
   * absent) and `next`, the `after` of the next page (null on the last). A service from before
   * pages answers no `next`: it listed every match, so null.
   */
  async jobsPage(filter: JobFilter = {}): Promise<JobPage<JobRecord>> {
    const q = new URLSearchParams();
    if (filter.states && filter.states.length > 0) q.set('state', filter.states.join(','));
    if (filter.priority) q.set('priority', filter.priority);
    if (filter.after !== undefined) q.set('after', filter.after);
    if (filter.limit !== undefined) q.set('limit', String(filter.limit));
    if (filter.order) q.set('order', filter.order);
    const query = q.toString();
    const page = await this.request<{ jobs: JobRecord[]; next?: string | null }>('GET', `/v1/jobs${query ? `?${query}` : ''}`);
    return { jobs: page.jobs, next: page.next ?? null };
  }

  /**
   * The jobs that match, following the service's pages ({@link MAX_JOB_PAGE} a request): at most
   * `filter.limit` of them (every one when absent), and `next`, the `after` that goes on from the
   * last one returned (null when no more match).
   */
  async collectJobs(filter: JobFilter = {}): Promise<JobPage<JobRecord>> {
    const jobs: JobRecord[] = [];
    if (filter.limit !== undefined && filter.limit < 1) return { jobs, next: null };
    let after = filter.after;
    for (;;) {
      const want = filter.limit === undefined ? MAX_JOB_PAGE : Math.min(MAX_JOB_PAGE, filter.limit - jobs.length);
      const page = await this.jobsPage({ ...filter, ...(after !== undefined ? { after } : {}), limit: want });
      jobs.push(...page.jobs);
      if (page.next === null || page.jobs.length === 0) return { jobs, next: null };
      if (filter.limit !== undefined && jobs.length >= filter.limit) return { jobs, next: page.next };
      after = page.next;
    }
  }

  /** Every job that matches (at most `filter.limit`), however many pages the service answers them in. */
  async listJobs(filter: JobFilter = {}): Promise<JobRecord[]> {
    return [...(await this.collectJobs(filter)).jobs];
  }

  getJob(id: string): Promise<JobRecord> {
    return this.request<JobRecord>('GET', `/v1/jobs/${encodeURIComponent(id)}`);
  }

  /** Cancels a queued job, or asks a running one to stop. */
  cancel(id: string): Promise<JobRecord> {
    return this.request<JobRecord>('POST', `/v1/jobs/${encodeURIComponent(id)}/cancel`);
  }

  /**
   * Asks the service to move a running preemptible job (stop it; it is requeued and resumes): the
   * attempt that ran when this process started (`Migpool-Asked-At`), so that commands started
   * together move the job once however long each took to start.
   */
  preempt(id: string): Promise<JobRecord> {
    return this.request<JobRecord>('POST', `/v1/jobs/${encodeURIComponent(id)}/preempt`, undefined, { 'migpool-asked-at': String(Math.floor(performance.timeOrigin)) });
  }

  readLog(id: string, stream: 'stdout' | 'stderr', offset: number): Promise<LogChunk> {
    return this.request<LogChunk>('GET', `/v1/jobs/${encodeURIComponent(id)}/logs?stream=${stream}&offset=${offset}`);
  }

  private async request<T>(method: 'GET' | 'POST', path: string, body?: unknown, extra: Record<string, string> = {}): Promise<T> {
    const headers: Record<string, string> = { accept: 'application/json', ...extra };
    // Every call needs the token, reads included (jobs carry their env, logs their output).
    this.token ??= this.tokenSource();
    headers['authorization'] = `Bearer ${await this.token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    let res: Response;
    try {
      res = await fetch(`${this.url}${path}`, { method, headers, body: body === undefined ? null : JSON.stringify(body), signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    } catch (e) {
      throw this.unreachable(e);
    }
    let text: string;
    try {
      text = await res.text();
    } catch (e) {
      throw this.unreachable(e);
    }
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw new MigpoolError('RUNTIME', `unexpected answer from ${this.url}${path}: HTTP ${res.status}, not JSON: is --url the migpool service?`);
    }
    if (res.ok) return value as T;
    const error = (value as ErrorAnswer).error ?? {};
    const message = error.message ?? `HTTP ${res.status}`;
    const details = error.path !== undefined ? { path: error.path, status: res.status } : { status: res.status };
    if (res.status === 401) {
      throw badInput(`the migpool service at ${this.url} refused the token from ${this.tokenWhere}: it is no user's token; pass --token (or $MIGPOOL_TOKEN) with the one \`migpool users add\` or \`users rotate\` printed, or --data-dir with the service's data dir for the admin's`, details);
    }
    if (res.status === 409) throw new MigpoolError('CHECK_FAILED', message, details);
    if (res.status >= 400 && res.status < 500) throw badInput(message, details);
    throw new MigpoolError('RUNTIME', `the migpool service at ${this.url} failed: ${message}`, details);
  }

  private unreachable(e: unknown): MigpoolError {
    const err = e as Error & { cause?: { code?: string; message?: string } };
    if (err.name === 'TimeoutError') return new MigpoolError('RUNTIME', `the migpool service at ${this.url} did not answer within ${REQUEST_TIMEOUT_MS / 1000} s: is it overloaded or stuck?`, { unanswered: true });
    const why = err.cause?.message ?? err.cause?.code ?? err.message;
    // fetch refuses the ports the Fetch standard blocks (FETCH_BAD_PORTS: 6000, 6665-6669, ...) before
    // connecting; `migpool serve` refuses to listen on them since, but an older service may.
    if (why === 'bad port') {
      return badInput(`cannot talk to ${this.url}: fetch refuses that port (one the Fetch standard blocks, "bad port"), whether or not a service listens there; run \`migpool serve --listen HOST:PORT\` on another port, e.g. 8080`);
    }
    return new MigpoolError('RUNTIME', `cannot reach the migpool service at ${this.url}: is \`migpool serve\` running? (${why})`, { unanswered: true });
  }
}
