/**
 * A chaos soak of `migpool serve` as production would hurt it: the built CLI on simulated GPUs,
 * fed a random mix of jobs (whole GPUs, exact and at-least MIG profiles, memory, background,
 * preemptible, failing) through the HTTP API, while the soak cancels and preempts jobs at random,
 * SIGKILLs the service at random moments (also right after a submit and during a re-partition),
 * injects GPU faults into the simulated machine while the service is down, and restarts it on the
 * same data dir. At the end (a last kill and restart, then a wait until the queue drains) it checks
 * the invariants a user relies on and returns what broke, each in one sentence.
 *
 *   npm run build && node dist/bench/chaos-soak.js [--jobs 300] [--kills 15] [--faults 10] [--seed 1] [--keep]
 *
 * test/chaos-soak.test.ts runs a small version of it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRandom } from '../src/random.js';

/** What {@link runChaosSoak} does. */
export interface ChaosOptions {
  /** Seed of the soak's choices (which jobs, when to kill, which faults); timings still vary run to run. */
  readonly seed: number;
  /** Jobs submitted. */
  readonly jobs: number;
  /** SIGKILLs of the service while jobs are submitted (a last one follows them). */
  readonly kills: number;
  /** Kill in each way in turn (right after a submit, during a re-partition, at start-up, after a cancel or preempt, at a random moment) instead of at random: a short run meets each. */
  readonly everyKillKind?: boolean;
  /** GPU faults injected into the simulated machine, spread over the restarts. */
  readonly faults: number;
  /** The simulated GPUs; default `2xA100-SXM4-40GB`. */
  readonly gpus?: string;
  /** Each job sleeps between these many milliseconds; default 500 to 4000 (the brief's 0.5-4 s). */
  readonly sleepMs?: readonly [number, number];
  /** Milliseconds between two submissions; default 50 to 400. */
  readonly gapMs?: readonly [number, number];
  /** How long the queue may go without a job moving (and no GPU in a re-partition back-off) before its jobs count as stuck; default 240 s, and at most 4 times that in all. */
  readonly drainMs?: number;
  /** The folder to work in (data dir, job logs); default a new one under the system's temp dir. */
  readonly dir?: string;
  /** Keep the folder at the end (default: removed when nothing broke). */
  readonly keep?: boolean;
  /** Progress lines. */
  readonly say?: (line: string) => void;
}

/** What a soak did and what broke. */
export interface ChaosReport {
  readonly seed: number;
  readonly jobs: number;
  readonly kills: number;
  readonly killsAfterSubmit: number;
  readonly killsInRepartition: number;
  /** Kills while the service started up (settling and re-adopting the last life's jobs). */
  readonly killsAtStart: number;
  /** Of `faults`, those the service met (the rest still waited for their operation at the end). */
  readonly faultsMet: number;
  /** Job runners SIGKILLed (as the OOM killer would). */
  readonly runnerKills: number;
  /** Times the service was stopped (SIGSTOP) for a while, a GPU fault injected meanwhile. */
  readonly freezes: number;
  readonly faults: number;
  readonly cancels: number;
  readonly preempts: number;
  readonly seconds: number;
  /** The service's RSS (KiB) 1.5 s after each start, in order. */
  readonly startRssKiB: readonly number[];
  /** Its RSS (KiB) just before each kill, and at the very end. */
  readonly endRssKiB: readonly number[];
  /** The jobs' final states, counted. */
  readonly states: Readonly<Record<string, number>>;
  /** Each broken invariant, in one sentence. */
  readonly violations: readonly string[];
  /** Where the data dir and logs are (removed unless kept or something broke). */
  readonly dir: string;
}

/** bin/migpool.js, from bench/ (vitest) or dist/bench/ (the built script). */
const BIN = ['../bin/migpool.js', '../../bin/migpool.js'].map((p) => fileURLToPath(new URL(p, import.meta.url))).find((p) => existsSync(p)) ?? 'bin/migpool.js';
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * The job: appends `ID ATTEMPT start`, sleeps, appends `end` and exits with its mode's status. It
 * holds flock(1) on a per-job lock file for as long as any process of the attempt lives (the lock
 * goes with the last holder of the descriptor, even on SIGKILL): an attempt that finds it taken
 * writes `double`, another attempt of the same job still running. SIGTERM writes `term`.
 */
const JOB_SCRIPT = `#!/bin/sh
# $1 log file, $2 seconds to sleep, $3 mode: ok | fail | failonce, $4 folder for locks and marks
exec 9>>"$4/$MIGPOOL_JOB_ID.lock"
if ! flock -n 9; then echo "$MIGPOOL_JOB_ID $MIGPOOL_ATTEMPT double $(date +%s%N)" >> "$1"; fi
echo "$MIGPOOL_JOB_ID $MIGPOOL_ATTEMPT start $(date +%s%N)" >> "$1"
trap 'echo "$MIGPOOL_JOB_ID $MIGPOOL_ATTEMPT term $(date +%s%N)" >> "$1"; exit 143' TERM
sleep "$2" &
wait $!
echo "$MIGPOOL_JOB_ID $MIGPOOL_ATTEMPT end $(date +%s%N)" >> "$1"
case "$3" in
  fail) exit 1 ;;
  failonce) if [ ! -e "$4/$MIGPOOL_JOB_ID.failed" ]; then : > "$4/$MIGPOOL_JOB_ID.failed"; exit 1; fi ;;
esac
exit 0
`;

type Mode = 'ok' | 'fail' | 'failonce';

/** One submission, as the soak made and followed it. */
interface Submitted {
  readonly key: string;
  readonly body: Record<string, unknown>;
  readonly mode: Mode;
  readonly preemptible: boolean;
  id: string | null;
  /** A cancel was sent (accepted, or its answer lost in a kill). */
  cancelAsked: boolean;
  /** The state the job had in the cancel's answer, when one came. */
  cancelAnswer: string | null;
  preempted: number;
  /** Its runner was SIGKILLed: the attempt may end failed ('lost'). */
  runnerKilled: boolean;
}

interface Life {
  proc: ChildProcess;
  url: string;
  token: string;
  stderr: string;
  events: AbortController;
  reconfiguring: number;
}

const FINAL = new Set(['succeeded', 'failed', 'cancelled']);

/** Runs one soak and checks its invariants; see the file's comment. */
export async function runChaosSoak(o: ChaosOptions): Promise<ChaosReport> {
  const say = o.say ?? (() => undefined);
  // The project's seeded source (src/random.ts), so a seed replays the same choices.
  const random = createRandom(o.seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)] as T;
  const between = (lo: number, hi: number): number => lo + random() * (hi - lo);
  const t0 = Date.now();
  const dir = o.dir ?? mkdtempSync(join(tmpdir(), 'migpool-chaos-'));
  const dataDir = join(dir, 'data');
  const marks = join(dir, 'marks');
  const logFile = join(dir, 'jobs.log');
  const script = join(dir, 'job.sh');
  mkdirSync(marks, { recursive: true });
  writeFileSync(script, JOB_SCRIPT, { mode: 0o755 });
  writeFileSync(logFile, '');
  const gpus = o.gpus ?? '2xA100-SXM4-40GB';
  const [sleepLo, sleepHi] = o.sleepMs ?? [500, 4000];
  const [gapLo, gapHi] = o.gapMs ?? [50, 400];
  const violations: string[] = [];
  const broke = (v: string): void => {
    violations.push(v);
    say(`BROKEN: ${v}`);
  };
  const startRss: number[] = [];
  const endRss: number[] = [];
  let stderrAll = '';
  let life: Life | null = null;
  let kills = 0;
  let killsAfterSubmit = 0;
  let killsInRepartition = 0;
  let killsAtStart = 0;
  let runnerKills = 0;
  let freezes = 0;
  let faults = 0;
  let cancels = 0;
  let preempts = 0;

  const rssOf = (pid: number | undefined): number => {
    try {
      return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
    } catch {
      return 0;
    }
  };

  /** The live runner of job `id`'s latest attempt (`migpool-job-runner.js DATA/jobs/ID/N/launch.json`), if any. */
  const runnerOf = (id: string): number | null => {
    const mark = `${join(dataDir, 'jobs', id)}/`;
    for (const e of readdirSync('/proc')) {
      if (!/^\d+$/.test(e)) continue;
      try {
        const argv = readFileSync(`/proc/${e}/cmdline`, 'utf8').split('\0');
        if (argv.some((a) => a.endsWith('migpool-job-runner.js')) && argv.some((a) => a.startsWith(mark))) return Number(e);
      } catch {
        // gone
      }
    }
    return null;
  };

  const watchEvents = (l: Life): void => {
    void (async () => {
      try {
        const res = await fetch(`${l.url}/v1/events`, { headers: { authorization: `Bearer ${l.token}` }, signal: l.events.signal });
        if (!res.body) return;
        let text = '';
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
          text += Buffer.from(chunk).toString();
          let at: number;
          while ((at = text.indexOf('\n\n')) >= 0) {
            const block = text.slice(0, at);
            text = text.slice(at + 2);
            if (/^event: gpu-reconfiguring$/m.test(block)) l.reconfiguring++;
          }
        }
      } catch {
        // the service was killed, or the soak stopped listening
      }
    })();
  };

  const start = async (): Promise<Life> => {
    const serverJson = join(dataDir, 'server.json');
    rmSync(serverJson, { force: true });
    const proc = spawn(process.execPath, [BIN, 'serve', '--data-dir', dataDir, '--listen', '127.0.0.1:0', '--simulate', gpus], { stdio: ['ignore', 'ignore', 'pipe'] });
    const l: Life = { proc, url: '', token: '', stderr: '', events: new AbortController(), reconfiguring: 0 };
    proc.stderr?.on('data', (d: Buffer) => (l.stderr += d.toString()));
    const began = Date.now();
    while (!existsSync(serverJson)) {
      if (proc.exitCode !== null || proc.signalCode !== null || Date.now() - began > 60_000) {
        proc.kill('SIGKILL');
        throw new Error(`migpool serve did not start: ${l.stderr}`);
      }
      await sleep(50);
    }
    l.url = (JSON.parse(readFileSync(serverJson, 'utf8')) as { url: string }).url;
    l.token = readFileSync(join(dataDir, 'token'), 'utf8').trim();
    watchEvents(l);
    const pid = proc.pid;
    setTimeout(() => {
      if (life === l) startRss.push(rssOf(pid));
    }, 1500);
    life = l;
    return l;
  };

  const kill = async (why: string, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> => {
    const l = life;
    if (l === null) return;
    endRss.push(rssOf(l.proc.pid));
    life = null;
    l.events.abort();
    await new Promise<void>((resolve) => {
      if (l.proc.exitCode !== null || l.proc.signalCode !== null) return resolve();
      l.proc.once('exit', () => resolve());
      l.proc.kill(signal);
      // A clean stop that hangs is a finding too: say so, then end it.
      if (signal !== 'SIGKILL') {
        setTimeout(() => {
          if (l.proc.exitCode === null && l.proc.signalCode === null) {
            broke(`the service did not stop within 30 s of ${signal} (${why})`);
            l.proc.kill('SIGKILL');
          }
        }, 30_000).unref();
      }
    });
    stderrAll += l.stderr;
    kills++;
    say(`kill ${kills} (${why}) at ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  };

  /** Faults for the next GPU operations, written into the simulated machine's file while the service is down. */
  const injectFaults = (n: number): void => {
    if (n <= 0) return;
    const path = join(dataDir, 'simulated-machine.json');
    const state = JSON.parse(readFileSync(path, 'utf8')) as { gpus: unknown[]; faults: unknown[] };
    // At most three faults wait at once: more pile onto one GPU in a row, and its back-off (5 s,
    // 10 s, ... doubled per failure in a row, as README says) outlasts any drain.
    for (let i = 0; i < n && state.faults.length < 3; i++) {
      const operation = pick(['createGpuInstance', 'createGpuInstance', 'createComputeInstance', 'createComputeInstance', 'destroyComputeInstance', 'destroyGpuInstance', 'destroyGpuInstance', 'setMigMode', 'resetGpu']);
      const kind = pick(['unknown', 'in-use', 'insufficient-resources']);
      state.faults.push({ operation, gpu: Math.floor(random() * state.gpus.length), kind, message: `chaos fault ${faults + 1}` });
      faults++;
    }
    const tmp = `${path}.chaos.tmp`;
    writeFileSync(tmp, JSON.stringify(state, null, 1));
    renameSync(tmp, path);
  };

  const restart = async (faultsNow: number): Promise<void> => {
    await sleep(between(0, 1500)); // jobs go on (and some end) while the service is down
    injectFaults(faultsNow);
    await start();
  };

  /** A request to the live service; null when it was killed under the request (or is down). */
  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; json: unknown } | null> => {
    const l = life;
    if (l === null) return null;
    try {
      const res = await fetch(`${l.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${l.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(30_000),
      });
      return { status: res.status, json: await res.json().catch(() => null) };
    } catch {
      return null;
    }
  };

  const submitted: Submitted[] = [];
  const makeJob = (i: number): Submitted => {
    const mode: Mode = random() < 0.1 ? 'fail' : random() < 0.11 ? 'failonce' : 'ok';
    const preemptible = random() < 0.35;
    const resources = pick<Record<string, unknown> | null>([
      { gpus: 1 },
      { gpus: 1 },
      null,
      { profile: '1g.5gb' },
      { profile: '1g.5gb' },
      { profile: '1g.5gb' },
      { profile: '3g.20gb' },
      { profile: '3g.20gb' },
      { profile: { atLeast: '1g.5gb' } },
      { profile: { atLeast: '2g.10gb' } },
      { memory: '8GiB' },
    ]);
    const seconds = (between(sleepLo, sleepHi) / 1000).toFixed(2);
    const body: Record<string, unknown> = {
      name: `chaos-${i}`,
      command: ['/bin/sh', script, logFile, seconds, mode, marks],
      workdir: dir,
      killGracePeriod: '3s',
      ...(resources === null ? {} : { resources }),
      ...(random() < 0.3 ? { priority: 'background' } : {}),
      ...(preemptible ? { preemptible: true } : {}),
      ...(mode === 'failonce' ? { retries: 1 } : {}),
    };
    return { key: `chaos-${o.seed}-${i}`, body, mode, preemptible, id: null, cancelAsked: false, cancelAnswer: null, preempted: 0, runnerKilled: false };
  };

  /** Sends a submission once, with its Idempotency-Key; false when no answer came. */
  const submitOnce = async (s: Submitted): Promise<boolean> => {
    const r = await call('POST', '/v1/jobs', s.body, { 'idempotency-key': s.key });
    if (r === null) return false;
    if (r.status !== 201 && r.status !== 200) throw new Error(`submission ${s.key} answered ${r.status}: ${JSON.stringify(r.json)}`);
    const id = (r.json as { id: string }).id;
    if (s.id !== null && s.id !== id) broke(`submission ${s.key} was resent with its Idempotency-Key and got job ${id}, not job ${s.id} of the first answer: a second job`);
    s.id = id;
    return true;
  };
  /** Sends a submission until the service answers it. */
  const submit = async (s: Submitted): Promise<void> => {
    for (let tries = 0; !(await submitOnce(s)); tries++) {
      if (tries > 50) throw new Error(`submission ${s.key} got no answer in 50 tries`);
      await sleep(200);
    }
  };

  const cancel = async (victim: Submitted): Promise<void> => {
    victim.cancelAsked = true;
    cancels++;
    const r = await call('POST', `/v1/jobs/${victim.id}/cancel`);
    if (r !== null && r.status === 200) victim.cancelAnswer = (r.json as { state: string }).state;
    else if (r !== null) broke(`cancel of job ${victim.id} answered ${r.status}: ${JSON.stringify(r.json)}`);
  };
  const preempt = async (victim: Submitted): Promise<void> => {
    preempts++;
    const r = await call('POST', `/v1/jobs/${victim.id}/preempt`);
    if (r !== null && r.status === 200) {
      const state = (r.json as { state: string }).state;
      if (!victim.preemptible && !FINAL.has(state)) broke(`preempt of job ${victim.id}, not preemptible, answered 200 (${state})`);
      victim.preempted++;
    } else if (r !== null && r.status !== 409) broke(`preempt of job ${victim.id} answered ${r.status}: ${JSON.stringify(r.json)}`);
  };

  const killsAt = new Map<number, string>();
  const KILL_KINDS = ['after-submit', 'repartition', 'at-start', 'after-stop', 'now'] as const;
  for (let k = 1; k <= o.kills; k++) killsAt.set(Math.min(o.jobs - 1, Math.floor((k * o.jobs) / (o.kills + 1))), o.everyKillKind === true ? KILL_KINDS[(k - 1) % KILL_KINDS.length]! : pick(KILL_KINDS));
  let faultsLeft = o.faults;
  const faultsPerRestart = Math.ceil(o.faults / Math.max(1, o.kills));

  await start();
  say(`soak seed ${o.seed}: ${o.jobs} jobs, ${o.kills} kills, ${o.faults} faults on ${gpus} in ${dir}`);
  for (let i = 0; i < o.jobs; i++) {
    const s = makeJob(i);
    submitted.push(s);
    const how = killsAt.get(i);
    if (how === 'after-submit') {
      // The kill lands while the submission is in flight or just answered: its answer may be lost.
      const pending = submitOnce(s).catch(() => false);
      await sleep(between(0, 30));
      killsAfterSubmit++;
      await kill('right after a submit');
      await pending;
      await restart(Math.min(faultsLeft, faultsPerRestart));
      faultsLeft -= Math.min(faultsLeft, faultsPerRestart);
      // Resent with the same key: the same job, never a second one.
      await submit(s);
    } else {
      await submit(s);
    }
    if (how === 'at-start') {
      // Killed again while it starts: settling the jobs of the last life, re-adopting the running ones.
      await kill('at a random moment');
      await restart(0);
      await sleep(between(0, 400));
      killsAtStart++;
      await kill('while it starts up');
      await restart(Math.min(faultsLeft, faultsPerRestart));
      faultsLeft -= Math.min(faultsLeft, faultsPerRestart);
    }
    if (how === 'after-stop') {
      // Killed while a cancel or preempt stops a job (its SIGTERM sent, the grace running).
      const running = submitted.filter((x) => x.id !== null && !x.cancelAsked).slice(-12);
      const victim = running.length > 0 ? pick(running) : null;
      if (victim !== null) {
        if (victim.preemptible) {
          preempts++;
          const r = await call('POST', `/v1/jobs/${victim.id}/preempt`);
          if (r !== null && r.status === 200) victim.preempted++;
        } else {
          victim.cancelAsked = true;
          cancels++;
          const r = await call('POST', `/v1/jobs/${victim.id}/cancel`);
          if (r !== null && r.status === 200) victim.cancelAnswer = (r.json as { state: string }).state;
        }
      }
      await sleep(between(0, 50));
      await kill('right after a cancel or preempt');
      await restart(Math.min(faultsLeft, faultsPerRestart));
      faultsLeft -= Math.min(faultsLeft, faultsPerRestart);
    }
    if (how === 'now' || how === 'repartition') {
      if (how === 'repartition') {
        const l = life as Life | null;
        const seen = l?.reconfiguring ?? 0;
        const until = Date.now() + 8000;
        while (l !== null && l.reconfiguring === seen && Date.now() < until) await sleep(5);
        if (l !== null && l.reconfiguring > seen) killsInRepartition++;
      }
      // Now and then a clean stop (SIGTERM, as systemd stops it) in place of the crash.
      const signal = random() < 0.3 ? 'SIGTERM' : 'SIGKILL';
      await kill(`${how === 'now' ? 'at a random moment' : 'during a re-partition'}${signal === 'SIGTERM' ? ', SIGTERM' : ''}`, signal);
      await restart(Math.min(faultsLeft, faultsPerRestart));
      faultsLeft -= Math.min(faultsLeft, faultsPerRestart);
    }
    // Cancel or preempt an earlier job now and then.
    const known = submitted.filter((x) => x.id !== null && !x.cancelAsked);
    if (known.length > 0 && random() < 0.06) await cancel(pick(known.slice(-20)));
    if (known.length > 0 && random() < 0.1) {
      const victim = pick(known.slice(-20));
      await preempt(victim);
    }
    // A running job asked to move by several clients at once, now and then with a cancel among them.
    if (random() < 0.08) {
      const r = await call('GET', '/v1/jobs?state=running&limit=100');
      const running = r !== null && r.status === 200 ? new Set((r.json as { jobs: Array<{ id: string }> }).jobs.map((j) => j.id)) : new Set<string>();
      const candidates = known.filter((x) => running.has(x.id as string));
      if (candidates.length > 0) {
        const victim = pick(candidates);
        const asks: Array<Promise<void>> = [preempt(victim), preempt(victim), preempt(victim)];
        if (random() < 0.3) asks.push(cancel(victim));
        await Promise.all(asks);
      }
    }
    // The OOM killer takes a job's runner now and then: its job must end with it, never run beside a retry.
    if (known.length > 0 && random() < 0.03) {
      const victim = pick(known.slice(-12));
      const pid = runnerOf(victim.id as string);
      if (pid !== null) {
        try {
          process.kill(pid, 'SIGKILL');
          victim.runnerKilled = true;
          runnerKills++;
          say(`killed the runner of job ${victim.id} (pid ${pid})`);
        } catch {
          // it had just ended
        }
      }
    }
    // The service stalls (SIGSTOP) for a while: jobs end meanwhile, and a GPU fault comes.
    if (life !== null && random() < 0.03) {
      const l = life as Life;
      l.proc.kill('SIGSTOP');
      injectFaults(1);
      freezes++;
      await sleep(between(300, 2500));
      l.proc.kill('SIGCONT');
    }
    await sleep(between(gapLo, gapHi));
  }
  await kill('the last one, after every submission');
  await restart(faultsLeft);

  // Drain: wait until no job is queued, starting or running.
  const list = async (): Promise<Array<{ id: string; state: string; attempt: number; exitCode: number | null; reason: string | null; preemptions?: number }>> => {
    const jobs: Array<{ id: string; state: string; attempt: number; exitCode: number | null; reason: string | null; preemptions?: number }> = [];
    let after: string | null = null;
    for (;;) {
      const r = await call('GET', `/v1/jobs?order=asc&limit=1000${after === null ? '' : `&after=${after}`}`);
      if (r === null || r.status !== 200) throw new Error(`GET /v1/jobs failed: ${r === null ? 'no answer' : r.status}`);
      const page = r.json as { jobs: typeof jobs; next: string | null };
      jobs.push(...page.jobs);
      if (page.next === null) return jobs;
      after = page.next;
    }
  };
  // Stuck: no job changed state or attempt for drainMs while no GPU waited out a re-partition
  // back-off (a slow queue behind a back-off is the documented behaviour, not a stuck one).
  const drainMs = o.drainMs ?? 240_000;
  const hardStop = Date.now() + 4 * drainMs;
  let drainBy = Date.now() + drainMs;
  let jobs = await list();
  let signature = '';
  const progress = async (): Promise<void> => {
    const now = jobs.map((j) => `${j.id}:${j.state}:${j.attempt}`).join(' ');
    const r = await call('GET', '/v1/gpus');
    const backoff = r !== null && r.status === 200 && (r.json as { gpus: Array<{ repartitionFailure: { retryAt: number } | null }> }).gpus.some((g) => g.repartitionFailure !== null && g.repartitionFailure.retryAt > Date.now() - 5000);
    if (now !== signature || backoff) drainBy = Math.min(hardStop, Date.now() + drainMs);
    signature = now;
  };
  // A few more kills while the queue drains (many jobs running, many re-partitions).
  let drainKills = Math.ceil(o.kills / 4);
  let nextDrainKill = Date.now() + between(2000, 8000);
  while (jobs.some((j) => !FINAL.has(j.state)) && Date.now() < drainBy) {
    await sleep(1000);
    if (drainKills > 0 && Date.now() >= nextDrainKill) {
      drainKills--;
      await kill('while the queue drains');
      await restart(0);
      nextDrainKill = Date.now() + between(2000, 8000);
    }
    jobs = await list();
    await progress();
  }
  say(`drained at ${((Date.now() - t0) / 1000).toFixed(1)} s`);

  // 1. Every submission is one job, and every job reached a final state, the one expected.
  const byId = new Map(jobs.map((j) => [j.id, j]));
  if (jobs.length !== submitted.length) broke(`${submitted.length} submissions made ${jobs.length} jobs in the store`);
  const ids = new Set<string>();
  for (const s of submitted) {
    if (s.id === null) {
      broke(`submission ${s.key} never got a job id`);
      continue;
    }
    if (ids.has(s.id)) broke(`two submissions got job ${s.id}`);
    ids.add(s.id);
  }
  const lines = readFileSync(logFile, 'utf8').split('\n').filter((l) => l !== '');
  const marksOf = new Map<string, Array<{ attempt: number; what: string }>>();
  for (const line of lines) {
    const [id, attempt, what] = line.split(' ');
    if (id === undefined || attempt === undefined || what === undefined) continue;
    const list2 = marksOf.get(id) ?? [];
    list2.push({ attempt: Number(attempt), what });
    marksOf.set(id, list2);
  }
  const states: Record<string, number> = {};
  for (const s of submitted) {
    if (s.id === null) continue;
    const j = byId.get(s.id);
    if (!j) {
      broke(`job ${s.id} (${s.key}) was submitted and answered 201 but is not in the store: lost`);
      continue;
    }
    states[j.state] = (states[j.state] ?? 0) + 1;
    const m = marksOf.get(s.id) ?? [];
    if (!FINAL.has(j.state)) {
      broke(`job ${s.id} is still ${j.state} (attempt ${j.attempt}, reason ${JSON.stringify(j.reason)}) after ${Math.round(drainMs / 1000)} s in which no job moved and no GPU waited out a back-off: stuck`);
      continue;
    }
    const natural = s.mode === 'fail' ? 'failed' : 'succeeded';
    const ended = m.some((x) => x.what === 'end');
    if (s.cancelAsked && (s.cancelAnswer === null || !FINAL.has(s.cancelAnswer))) {
      if (j.state !== 'cancelled' && !(j.state === natural && ended)) broke(`job ${s.id} was cancelled (answer ${s.cancelAnswer ?? 'lost in a kill'}) but ended ${j.state} (${JSON.stringify(j.reason)}) without its command ending by itself`);
    } else if (s.cancelAsked && s.cancelAnswer !== null && j.state !== s.cancelAnswer) {
      broke(`job ${s.id} was ${s.cancelAnswer} when a cancel came, but is ${j.state} now`);
    } else if (!s.cancelAsked && j.state !== natural && !(s.runnerKilled && j.state === 'failed')) {
      broke(`job ${s.id} (${s.mode}, ${JSON.stringify(s.body['resources'] ?? { gpus: 1 })}${s.preemptible ? ', preemptible' : ''}) ended ${j.state}, not ${natural}: ${JSON.stringify(j.reason)} (exit ${j.exitCode}, attempt ${j.attempt})`);
    }
    // 2. No attempt ran twice, nor two attempts of a job at once.
    if (m.some((x) => x.what === 'double')) broke(`job ${s.id}: an attempt started while another attempt of it still ran (attempts ${m.filter((x) => x.what === 'double').map((x) => x.attempt).join(', ')} found the job's lock taken)`);
    const starts = m.filter((x) => x.what === 'start').map((x) => x.attempt);
    const again = starts.filter((a, k) => starts.indexOf(a) !== k);
    if (again.length > 0) broke(`job ${s.id}: attempt ${again.join(', ')} started more than once`);
    const allowed = 1 + (s.mode === 'failonce' ? 1 : 0) + (s.runnerKilled ? 1 : 0) + (j.preemptions ?? 0);
    if (starts.length > allowed) broke(`job ${s.id} (${s.preemptible ? 'preemptible' : 'not preemptible'}, retries ${s.mode === 'failonce' ? 1 : 0}, ${j.preemptions ?? 0} preemptions) started ${starts.length} times (attempts ${starts.join(', ')})`);
    if (starts.some((a) => a > j.attempt)) broke(`job ${s.id}: the log has attempt ${Math.max(...starts)} but the store says ${j.attempt}`);
  }

  // 3. The GPUs: nothing runs, and the store's layout is the simulated machine's (no half-made instance).
  const gpuProblems = async (): Promise<string[]> => {
    const r = await call('GET', '/v1/gpus');
    if (r === null || r.status !== 200) return ['GET /v1/gpus did not answer'];
    const api = (r.json as { gpus: Array<{ index: number; instances: Array<{ profile: string; start: number; job: string | null; busy?: boolean }>; wholeGpuJobs: string[] }> }).gpus;
    const sim = JSON.parse(readFileSync(join(dataDir, 'simulated-machine.json'), 'utf8')) as { gpus: Array<{ index: number; gpuInstances: Array<{ profile: string; start: number; computeInstances: unknown[] }> }> };
    const out: string[] = [];
    for (const g of api) {
      for (const i of g.instances) if (i.job !== null || i.busy === true) out.push(`GPU ${g.index}: instance ${i.profile}@${i.start} is held by job ${i.job} after every job ended`);
      if (g.wholeGpuJobs.length > 0) out.push(`GPU ${g.index}: jobs ${g.wholeGpuJobs.join(', ')} hold the whole GPU after every job ended`);
      const s = sim.gpus.find((x) => x.index === g.index);
      const a = g.instances.map((i) => `${i.profile}@${i.start}`).sort().join(' ');
      const b = (s?.gpuInstances ?? []).map((i) => `${i.profile}@${i.start}`).sort().join(' ');
      if (a !== b) out.push(`GPU ${g.index}: the service shows instances [${a}], the simulated machine has [${b}]`);
      const half = (s?.gpuInstances ?? []).filter((i) => i.computeInstances.length === 0);
      if (half.length > 0) out.push(`GPU ${g.index}: GPU instances without a compute instance: ${half.map((i) => `${i.profile}@${i.start}`).join(', ')}`);
    }
    return out;
  };
  let gp = await gpuProblems();
  for (let k = 0; k < 60 && gp.length > 0; k++) {
    await sleep(1000);
    gp = await gpuProblems();
  }
  for (const p of gp) broke(p);

  // 4. The service's own stderr: one line per message, none a stack trace.
  await kill('the end of the soak');
  writeFileSync(join(dir, 'serve.stderr'), stderrAll);
  const bad = stderrAll.split('\n').filter((l) => l !== '' && !l.startsWith('migpool serve: '));
  if (bad.length > 0) broke(`the service wrote ${bad.length} stderr lines that are not one-line messages, e.g. ${JSON.stringify(bad.slice(0, 3))}`);
  // Lines in which the service says it met a bug of its own or of its policy.
  const own = stderrAll.split('\n').filter((l) => /: internal: |skipped an invalid decision|^migpool serve: decision .* failed: /.test(l));
  if (own.length > 0) broke(`the service logged ${own.length} lines about a bug of its own or its policy, e.g. ${JSON.stringify(own.slice(0, 3))}`);

  // 5. No process of any attempt outlived the service's checks.
  const leftovers: string[] = [];
  const prefix = `MIGPOOL_ATTEMPT_DIR=${join(dataDir, 'jobs')}/`;
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const env = readFileSync(`/proc/${e}/environ`, 'utf8').split('\0');
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
      if (/\) [ZX] /.test(stat)) continue;
      const mark = env.find((x) => x.startsWith(prefix));
      if (mark !== undefined) leftovers.push(`${e} (${mark.slice(prefix.length)}: ${readFileSync(`/proc/${e}/cmdline`, 'utf8').split('\0').join(' ').trim()})`);
    } catch {
      // gone, or not ours to read
    }
  }
  if (leftovers.length > 0) broke(`processes of ended attempts still run: ${leftovers.slice(0, 5).join('; ')}`);

  // 6. RSS: a later start does not take much more than the first ones (a leak that restarts carry).
  if (startRss.length >= 6) {
    const third = Math.floor(startRss.length / 3);
    const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
    const early = median(startRss.slice(0, third));
    const late = median(startRss.slice(-third));
    if (late > early * 1.5 && late - early > 40 * 1024) broke(`the service's RSS after a start grew from ${early} KiB (first starts) to ${late} KiB (last starts)`);
  }

  const pendingFaults = (JSON.parse(readFileSync(join(dataDir, 'simulated-machine.json'), 'utf8')) as { faults: unknown[] }).faults.length;
  const seconds = (Date.now() - t0) / 1000;
  if (violations.length === 0 && o.keep !== true) rmSync(dir, { recursive: true, force: true });
  return { seed: o.seed, jobs: submitted.length, kills, killsAfterSubmit, killsInRepartition, killsAtStart, runnerKills, freezes, faults, faultsMet: faults - pendingFaults, cancels, preempts, seconds, startRssKiB: startRss, endRssKiB: endRss, states, violations, dir };
}

function flag(args: readonly string[], name: string, fallback: number): number {
  const at = args.indexOf(name);
  if (at < 0) return fallback;
  const v = Number(args[at + 1]);
  if (!Number.isFinite(v) || v < 0) throw new Error(`${name} needs a number, got ${String(args[at + 1])}`);
  return v;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const report = await runChaosSoak({
    seed: flag(args, '--seed', 1),
    jobs: flag(args, '--jobs', 300),
    kills: flag(args, '--kills', 15),
    faults: flag(args, '--faults', 10),
    drainMs: flag(args, '--drain-seconds', 240) * 1000,
    keep: args.includes('--keep'),
    say: (l) => process.stderr.write(`${l}\n`),
  });
  process.stdout.write(`${JSON.stringify(report, null, 1)}\n`);
  process.exitCode = report.violations.length === 0 ? 0 : 1;
}
