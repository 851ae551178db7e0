/**
 * A leak-and-stall soak of `migpool serve`: the built CLI on simulated GPUs, fed thousands of short
 * jobs (real processes under the job runner) while clients page through /v1/jobs, open event
 * streams and drop them (cleanly, by a reset, before the headers, or after pausing a while without
 * reading), scrape /metrics, follow logs and give up, cancel and preempt. At each checkpoint (the
 * queue drained, the clients quiet) it samples the service: RSS, the V8 heap after a full
 * collection (through the inspector), open file descriptors, libuv handles, event-loop lag,
 * scheduling pass time, and what lies on disk (the store, the jobs' folders). It prints the samples
 * side by side, so that growth from one checkpoint to the next is read off one run.
 *
 *   npm run build && node [--experimental-websocket] dist/bench/leak-soak.js [--checkpoints 500,1500,3000] [--keep] [--cpu-profile FILE] [--heap-snapshots DIR] [--database postgres://...]
 *
 * (The heap after a collection needs a WebSocket, global from Node 22; on Node 20 pass
 * --experimental-websocket, or its column says n/a.)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { request, type ClientRequest } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRandom } from '../src/random.js';

/** bin/migpool.js, from bench/ (vitest) or dist/bench/ (the built script). */
const BIN = ['../bin/migpool.js', '../../bin/migpool.js'].map((p) => fileURLToPath(new URL(p, import.meta.url))).find((p) => existsSync(p)) ?? 'bin/migpool.js';
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** What {@link runLeakSoak} does. */
export interface LeakSoakOptions {
  /** Jobs ended (cumulative) at which to sample, ascending; the first is the baseline. */
  readonly checkpoints: readonly number[];
  /** The simulated GPUs; default `2xA100-SXM4-40GB`. */
  readonly gpus?: string;
  /** Jobs queued at most at once (the submitter waits below it); default 150. */
  readonly maxQueued?: number;
  readonly seed?: number;
  /** A PostgreSQL store (`--database`, an empty database) instead of SQLite in the data dir. */
  readonly database?: string;
  /** Keep the data dir at the end. */
  readonly keep?: boolean;
  /** Write a heap snapshot of the service at each checkpoint into this folder (checkpoint-JOBS.heapsnapshot). */
  readonly heapSnapshots?: string;
  /** Write a CPU profile of the service during the last phase here (a .cpuprofile, for Chrome's DevTools). */
  readonly cpuProfile?: string;
  readonly say?: (line: string) => void;
}

/** The service as one checkpoint found it. */
export interface LeakSample {
  readonly jobs: number;
  readonly seconds: number;
  readonly rssKiB: number;
  /** V8 heap in use after a full collection (bytes); null without the inspector. */
  readonly heapAfterGcBytes: number | null;
  readonly fds: number;
  /** prom-client's nodejs_active_handles_total: libuv handles (sockets, timers, child processes, ...). */
  readonly handles: number;
  /** The largest nodejs_eventloop_lag_p99_seconds scraped since the last checkpoint. */
  readonly lagP99MaxMs: number;
  /** Mean scheduling pass since the last checkpoint (migpool_scheduling_pass_seconds sum over count). */
  readonly passMeanMs: number;
  /** Milliseconds of one GET /v1/jobs?limit=50 (the first page) at the checkpoint. */
  readonly jobsPageMs: number;
  /** migpool.db with its -wal and -shm. */
  readonly storeBytes: number;
  /** Everything under DATA_DIR/jobs. */
  readonly jobsDirBytes: number;
  /** Files and folders under DATA_DIR/jobs. */
  readonly jobsDirEntries: number;
  /** Event streams the clients opened and dropped so far, and other requests made. */
  readonly streamsDropped: number;
  readonly requests: number;
}

/** A jobs' folder's size and entry count. */
function du(path: string): { bytes: number; entries: number } {
  let bytes = 0;
  let entries = 0;
  const walk = (p: string): void => {
    let names: string[];
    try {
      names = readdirSync(p);
    } catch {
      return;
    }
    for (const n of names) {
      const q = join(p, n);
      try {
        const s = statSync(q);
        entries++;
        if (s.isDirectory()) walk(q);
        else bytes += s.size;
      } catch {
        // removed meanwhile
      }
    }
  };
  walk(path);
  return { bytes, entries };
}

function fileBytes(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

/** One Prometheus sample's value, or NaN. */
function metric(text: string, name: string): number {
  const m = new RegExp(`^${name}(?:\\{[^}]*\\})? ([^ \\n]+)`, 'm').exec(text);
  return m ? Number(m[1]) : NaN;
}

/** The V8 inspector of the service: a full collection and the heap in use after it. */
class Inspector {
  private next = 1;
  private readonly waiting = new Map<number, (v: unknown) => void>();
  private constructor(private readonly ws: WebSocket) {
    ws.onmessage = (m: MessageEvent) => {
      const msg = JSON.parse(String(m.data)) as { id?: number; result?: unknown; method?: string; params?: { chunk?: string } };
      if (msg.method === 'HeapProfiler.addHeapSnapshotChunk') this.chunks?.push(msg.params?.chunk ?? '');
      if (msg.id !== undefined) this.waiting.get(msg.id)?.(msg.result);
    };
  }
  static async open(url: string): Promise<Inspector | null> {
    const WS = (globalThis as { WebSocket?: typeof WebSocket }).WebSocket;
    if (WS === undefined) return null;
    const ws = new WS(url);
    await new Promise<void>((resolve, reject) => {
      ws.onopen = () => resolve();
      ws.onerror = () => reject(new Error(`cannot reach the service's inspector at ${url}`));
    });
    return new Inspector(ws);
  }
  call(method: string, params: Record<string, unknown> = {}): Promise<unknown> {
    const id = this.next++;
    return new Promise((resolve) => {
      this.waiting.set(id, resolve);
      this.ws.send(JSON.stringify({ id, method, params }));
    });
  }
  /** Writes a heap snapshot (the format Chrome's DevTools reads) to `path`. */
  async heapSnapshot(path: string): Promise<void> {
    const chunks: string[] = [];
    this.chunks = chunks;
    await this.call('HeapProfiler.takeHeapSnapshot', { reportProgress: false });
    this.chunks = null;
    writeFileSync(path, chunks.join(''));
  }
  private chunks: string[] | null = null;
  async heapAfterGc(): Promise<number> {
    await this.call('HeapProfiler.collectGarbage');
    await this.call('HeapProfiler.collectGarbage');
    return ((await this.call('Runtime.getHeapUsage')) as { usedSize: number }).usedSize;
  }
  close(): void {
    this.ws.close();
  }
}

/** Runs the soak; see the file's comment. */
export async function runLeakSoak(o: LeakSoakOptions): Promise<LeakSample[]> {
  const say = o.say ?? (() => undefined);
  const random = createRandom(o.seed ?? 1);
  const maxQueued = o.maxQueued ?? 150;
  const dir = mkdtempSync(join(tmpdir(), 'migpool-leak-'));
  const dataDir = join(dir, 'data');
  const proc: ChildProcess = spawn(process.execPath, ['--max-semi-space-size=64', '--inspect=127.0.0.1:0', BIN, 'serve', '--data-dir', dataDir, '--listen', '127.0.0.1:0', '--simulate', o.gpus ?? '2xA100-SXM4-40GB', ...(o.database === undefined ? [] : ['--database', o.database])], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  proc.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const t0 = Date.now();
  const serverJson = join(dataDir, 'server.json');
  while (!existsSync(serverJson)) {
    if (proc.exitCode !== null || Date.now() - t0 > 60_000) throw new Error(`migpool serve did not start: ${stderr}`);
    await sleep(50);
  }
  const url = (JSON.parse(readFileSync(serverJson, 'utf8')) as { url: string }).url;
  const token = readFileSync(join(dataDir, 'token'), 'utf8').trim();
  const port = Number(new URL(url).port);
  const inspectorUrl = /Debugger listening on (ws:\/\/\S+)/.exec(stderr)?.[1];
  const inspector = inspectorUrl === undefined ? null : await Inspector.open(inspectorUrl).catch(() => null);
  const auth = { authorization: `Bearer ${token}` };
  let requests = 0;
  let streamsDropped = 0;

  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; json: unknown }> => {
    requests++;
    const res = await fetch(`${url}${path}`, {
      method,
      headers: { ...auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(60_000),
    });
    return { status: res.status, json: await res.json().catch(() => null) };
  };
  const counts = async (): Promise<{ open: number; ended: number }> => {
    const s = (await call('GET', '/v1/stats')).json as { jobsByState: { state: string; count: number }[] };
    let open = 0;
    let ended = 0;
    for (const r of s.jobsByState) {
      if (r.state === 'queued' || r.state === 'starting' || r.state === 'running') open += r.count;
      else ended += r.count;
    }
    return { open, ended };
  };
  const ids = async (state: string, limit = 20): Promise<string[]> => ((await call('GET', `/v1/jobs?state=${state}&limit=${limit}`)).json as { jobs: { id: string }[] }).jobs.map((j) => j.id);

  /**
   * One event stream, dropped in one of five ways: after its first bytes with a clean close, with
   * a TCP reset, before the answer's headers, after reading nothing for a while (the service
   * buffers for a client that does not read), or right after sending the request (while the
   * service looks its token up).
   */
  const oneStream = (how: number): Promise<void> =>
    new Promise((resolve) => {
      if (how === 4) {
        const s = connect(port, '127.0.0.1', () => {
          s.write(`GET /v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\n\r\n`);
          s.resetAndDestroy();
          streamsDropped++;
          resolve();
        });
        s.on('error', () => undefined);
        return;
      }
      const req: ClientRequest = request({ host: '127.0.0.1', port, path: how === 1 ? '/v1/events?after=0' : '/v1/events', headers: auth });
      const done = (): void => {
        streamsDropped++;
        resolve();
      };
      req.on('error', done);
      if (how === 2) {
        req.on('socket', (s) => s.on('connect', () => setTimeout(() => (s.resetAndDestroy(), done()), 1)));
        req.end();
        return;
      }
      req.on('response', (res) => {
        if (how === 3) {
          res.pause();
          setTimeout(() => (res.socket.resetAndDestroy(), done()), 2000);
          return;
        }
        res.once('data', () => {
          if (how === 0) res.destroy();
          else res.socket.resetAndDestroy();
          done();
        });
      });
      req.end();
    });

  let quiet = true;
  let lagMax = 0;
  const traffic = async (): Promise<void> => {
    let k = 0;
    while (!quiet) {
      k++;
      try {
        await Promise.all([
          oneStream(k % 5),
          (async () => {
            const page = (await call('GET', '/v1/jobs?limit=50')).json as { next: string | null };
            if (page.next !== null) await call('GET', `/v1/jobs?limit=50&after=${page.next}`);
          })(),
          (async () => {
            const text = await (await fetch(`${url}/metrics`, { headers: auth })).text();
            requests++;
            lagMax = Math.max(lagMax, metric(text, 'nodejs_eventloop_lag_p99_seconds') * 1000 || 0);
          })(),
          (async () => {
            // A `logs -f` that reads a running job's output once and goes away.
            const [id] = await ids('running', 1);
            if (id !== undefined) await call('GET', `/v1/jobs/${id}/logs?stream=stdout&offset=0`);
          })(),
          (async () => {
            if (k % 5 !== 0) return;
            const running = await ids('running');
            const id = running[Math.floor(random() * running.length)];
            if (id !== undefined) await call('POST', `/v1/jobs/${id}/${random() < 0.5 ? 'cancel' : 'preempt'}`);
          })(),
        ]);
      } catch (e) {
        say(`traffic: ${(e as Error).message}`);
      }
      await sleep(100);
    }
  };

  let submitted = 0;
  const job = (i: number): Record<string, unknown> => {
    const r = random();
    const body: Record<string, unknown> = { name: `leak-${i}`, workdir: dir, killGracePeriod: '1s', resources: { profile: '1g.5gb' } };
    if (r < 0.04) body.command = ['/bin/false'];
    else if (r < 0.08) Object.assign(body, { command: ['sleep', '20'], preemptible: true, priority: 'background' });
    else if (r < 0.1) Object.assign(body, { command: ['sleep', '1'], resources: { profile: '3g.20gb' } });
    else body.command = ['/bin/sh', '-c', 'echo \'{"migpool_samples": 1, "migpool_total": 2}\'; echo some output; sleep 0.3'];
    return body;
  };

  const samples: LeakSample[] = [];
  let passBefore = { sum: 0, count: 0 };
  try {
    for (const target of o.checkpoints) {
      const profiling = o.cpuProfile !== undefined && inspector !== null && target === o.checkpoints[o.checkpoints.length - 1];
      if (profiling) {
        await inspector.call('Profiler.enable');
        await inspector.call('Profiler.start');
      }
      quiet = false;
      const clients = traffic();
      while (submitted < target) {
        const { open } = await counts();
        if (open >= maxQueued) {
          await sleep(500);
          continue;
        }
        const n = Math.min(50, target - submitted, maxQueued - open);
        await call('POST', '/v1/jobs/batch', Array.from({ length: n }, (_, k) => job(submitted + k)));
        submitted += n;
      }
      // The rest end by themselves (a preemptible sleep 20 takes its time) or are cancelled.
      const drainBy = Date.now() + 60_000;
      while ((await counts()).open > 0) {
        if (Date.now() > drainBy) for (const id of [...(await ids('running', 200)), ...(await ids('queued', 200))]) await call('POST', `/v1/jobs/${id}/cancel`);
        await sleep(500);
      }
      quiet = true;
      await clients;
      if (profiling) writeFileSync(o.cpuProfile!, JSON.stringify(((await inspector.call('Profiler.stop')) as { profile: unknown }).profile));
      await sleep(3000); // streams' close handlers, the runners' last polls
      const metrics = await (await fetch(`${url}/metrics`, { headers: auth })).text();
      const pass = { sum: metric(metrics, 'migpool_scheduling_pass_seconds_sum'), count: metric(metrics, 'migpool_scheduling_pass_seconds_count') };
      const pageT0 = performance.now();
      await call('GET', '/v1/jobs?limit=50');
      const jobsPageMs = performance.now() - pageT0;
      const disk = du(join(dataDir, 'jobs'));
      const status = readFileSync(`/proc/${proc.pid}/status`, 'utf8');
      const sample: LeakSample = {
        jobs: (await counts()).ended,
        seconds: Math.round((Date.now() - t0) / 1000),
        rssKiB: Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN),
        heapAfterGcBytes: inspector === null ? null : await inspector.heapAfterGc(),
        fds: readdirSync(`/proc/${proc.pid}/fd`).length,
        handles: metric(metrics, 'nodejs_active_handles_total'),
        lagP99MaxMs: lagMax,
        passMeanMs: pass.count > passBefore.count ? ((pass.sum - passBefore.sum) / (pass.count - passBefore.count)) * 1000 : NaN,
        jobsPageMs,
        storeBytes: ['', '-wal', '-shm'].reduce((s, x) => s + fileBytes(join(dataDir, `migpool.db${x}`)), 0),
        jobsDirBytes: disk.bytes,
        jobsDirEntries: disk.entries,
        streamsDropped,
        requests,
      };
      passBefore = pass;
      lagMax = 0;
      if (o.heapSnapshots !== undefined && inspector !== null) {
        await inspector.heapSnapshot(join(o.heapSnapshots, `checkpoint-${target}.heapsnapshot`));
        // The snapshot stalls the service for seconds: the next phase's lag and pass time start after it
        // (prom-client's event-loop lag starts afresh at each scrape).
        const after = await (await fetch(`${url}/metrics`, { headers: auth })).text();
        passBefore = { sum: metric(after, 'migpool_scheduling_pass_seconds_sum'), count: metric(after, 'migpool_scheduling_pass_seconds_count') };
      }
      samples.push(sample);
      say(JSON.stringify(sample));
    }
  } finally {
    quiet = true;
    inspector?.close();
    proc.kill('SIGTERM');
    await new Promise((r) => (proc.exitCode !== null ? r(null) : proc.once('exit', r)));
    for (const line of stderr.split('\n')) if (/internal|invalid decision|decision failed|Error/i.test(line)) say(`service: ${line}`);
    if (o.keep !== true) rmSync(dir, { recursive: true, force: true });
    else say(`kept ${dir}`);
  }
  return samples;
}

/** The samples as a table, one checkpoint a column, and each figure's growth per 1,000 jobs past the first. */
export function leakTable(samples: readonly LeakSample[]): string[] {
  const rows: [string, (s: LeakSample) => number | null, number][] = [
    ['jobs ended', (s) => s.jobs, 1],
    ['seconds', (s) => s.seconds, 1],
    ['RSS (MiB)', (s) => s.rssKiB / 1024, 1],
    ['heap after GC (MiB)', (s) => (s.heapAfterGcBytes === null ? null : s.heapAfterGcBytes / 2 ** 20), 2],
    ['open fds', (s) => s.fds, 1],
    ['libuv handles', (s) => s.handles, 1],
    ['event-loop lag p99 max (ms)', (s) => s.lagP99MaxMs, 1],
    ['scheduling pass mean (ms)', (s) => s.passMeanMs, 2],
    ['GET /v1/jobs?limit=50 (ms)', (s) => s.jobsPageMs, 1],
    ['store on disk (MiB)', (s) => s.storeBytes / 2 ** 20, 2],
    ['jobs/ on disk (MiB)', (s) => s.jobsDirBytes / 2 ** 20, 2],
    ['jobs/ entries', (s) => s.jobsDirEntries, 1],
    ['event streams dropped', (s) => s.streamsDropped, 1],
  ];
  const first = samples[0];
  const last = samples[samples.length - 1];
  const out: string[] = [];
  for (const [name, f, digits] of rows) {
    const cells = samples.map((s) => {
      const v = f(s);
      return (v === null || Number.isNaN(v) ? 'n/a' : v.toFixed(digits === 1 ? 0 : digits)).padStart(10);
    });
    let per = '';
    if (first && last && last !== first && name !== 'jobs ended') {
      const a = f(first);
      const b = f(last);
      if (a !== null && b !== null && !Number.isNaN(a) && !Number.isNaN(b)) per = `  ${(((b - a) * 1000) / (last.jobs - first.jobs)).toFixed(3)} per 1k jobs`;
    }
    out.push(`${name.padEnd(30)}${cells.join('')}${per}`);
  }
  return out;
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const arg = (name: string): string | undefined => {
    const i = process.argv.indexOf(name);
    return i >= 0 ? process.argv[i + 1] : undefined;
  };
  const checkpoints = (arg('--checkpoints') ?? '500,1500,3000').split(',').map(Number);
  const cpuProfile = arg('--cpu-profile');
  const heapSnapshots = arg('--heap-snapshots');
  const database = arg('--database');
  const samples = await runLeakSoak({ checkpoints, keep: process.argv.includes('--keep'), ...(cpuProfile === undefined ? {} : { cpuProfile }), ...(heapSnapshots === undefined ? {} : { heapSnapshots }), ...(database === undefined ? {} : { database }), say: (l) => process.stderr.write(`${l}\n`) });
  process.stdout.write(`migpool serve leak soak, ${checkpoints.join(' / ')} jobs (columns: checkpoints; last: growth per 1,000 jobs from the first checkpoint to the last)\n`);
  for (const line of leakTable(samples)) process.stdout.write(`${line}\n`);
}
