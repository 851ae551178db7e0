import { MigpoolError } from '../errors.js';
import { canEverRun, type ClusterIndex, type IndexedClusterView } from '../sched/policies/common.js';
import { NO_HISTORY, type Decision, type JobHistory, type JobSpec, type PolicyContext, type Priority, type ScaledRun } from '../sched/types.js';
import { createRandom } from '../random.js';
import { checkDecision, type CheckLookup } from '../sched/check.js';
import { createPolicyContext, memoryOf, profileOf, sharedGpuSpeed, SpeedTable } from '../sched/context.js';
import { EventHeap } from './event-heap.js';
import { Gpu, Inst, Job, Running } from './fleet-state.js';
import { createEstimator } from './info.js';
import { askedSpeed, bigJobMetrics, lowerBounds, percentile, slowdownMetrics } from './metrics.js';
import type { PriorityMetrics, SimMetrics, SimulationInput, SimulationResult } from './types.js';
import { QUOTA_TOLERANCE, sliceShare, userOf } from '../sched/shares.js';
import { UserAccounting } from './user-metrics.js';

/**
 * ASSUMPTION: a re-partition (MIG on with a new layout, a layout change, or MIG off) makes the
 * changed part of the GPU unavailable for this many seconds (destroying and creating GPU and
 * compute instances, and restarting the jobs' containers, take seconds to tens of seconds; MIG
 * mode changes may need a GPU reset). Instances kept by a re-partition keep running. Not measured:
 * a stated default, overridden by SimulationInput.reconfigureSeconds.
 */
export const DEFAULT_RECONFIGURE_SECONDS = 10;

/** Default timeline sampling period, simulated seconds. */
export const DEFAULT_SAMPLE_EVERY_SECONDS = 3600;

const PRIORITIES: readonly Priority[] = ['foreground', 'background'];

function bug(policy: string, now: number, what: string): MigpoolError {
  return new MigpoolError('RUNTIME', `policy '${policy}' made an invalid decision at t=${now}s: ${what} (a bug in the policy)`);
}


/**
 * Replays `input.jobs` through `input.policy` on `input.fleet`: a discrete-event simulation with a
 * virtual clock.
 *
 * - The clock starts at min(0, first arrival). All GPUs start with MIG off and idle.
 * - Events: arrivals, completions, and ends of re-partitions. After each batch of simultaneous
 *   events (and at the start, with the jobs arriving then) the policy decides; its decisions are checked and applied in
 *   order. A decision the state does not allow is a bug in the policy: MigpoolError RUNTIME.
 * - A job's speed (full-GPU seconds of work per second) is its workload's speed on its resource
 *   over that on a whole GPU of the same model (performance model); on a time-sliced or MPS GPU it
 *   depends on how many jobs share it, and changes for all of them when one comes or goes.
 *   Multi-GPU jobs run on whole GPUs at speed 1 (no scaling model), or at the slowest of their
 *   GPUs' shared speeds when they share.
 * - Strong scaling, opt-in (`input.scaling` and a job's `strongScaling`): such a job started
 *   exclusively runs at the scaling model's speed, data-parallel unless the decision says
 *   `parallelism: 'burst'`. A burst-parallel job's GPUs take no other decision than a `fill`: one
 *   single-GPU job per GPU, sharing 'mps', running at that GPU's background share; while any fill
 *   runs beside it, the burst job runs at its shared (gated) speed. When the burst job leaves, a
 *   job filling a GPU keeps it alone at speed 1. Timeslice/MPS starts ignore `strongScaling`.
 * - `input.untilSeconds` (opt-in) stops the clock there; `workDone` counts the work done by the
 *   end, partial work included.
 * - A re-partition makes the instances it creates (or the whole GPU, when MIG is turned on or off)
 *   unusable for `reconfigureSeconds` (DEFAULT_RECONFIGURE_SECONDS) and counts once; instances it
 *   keeps (same profile and start) keep their jobs. A GPU cannot be re-partitioned again before the
 *   last one is done; busy instances never change (preempt their jobs first).
 * - Preempted jobs go back to the queue at their arrival position and keep their work done.
 * - Metrics: JCT = completion - arrival; queueing = JCT - time running; makespan = last completion
 *   - clock start; utilisation = busy compute-slice-seconds / (all compute slices x makespan), a
 *   whole GPU busy with any job counts all its compute slices; per priority, busy slices of a
 *   shared GPU are split evenly among its jobs, and there is no `reconfigurations` (a re-partition
 *   belongs to no class, see PriorityMetrics: the count is the run's). Percentiles are nearest-rank. Jobs the policy never runs
 *   stay uncompleted. `jcts` holds completed jobs' JCTs in input order.
 * - The view handed to the policy is live (the engine's own state, read-only by contract) and
 *   carries a ClusterIndex (src/sched/policies/common.ts) for fast look-ups.
 */
export function simulate(input: SimulationInput): SimulationResult {
  const policyName = input.policy.name;
  const reconfigureSeconds = input.reconfigureSeconds ?? DEFAULT_RECONFIGURE_SECONDS;
  const sampleEvery = input.sampleEverySeconds ?? DEFAULT_SAMPLE_EVERY_SECONDS;
  if (!(reconfigureSeconds >= 0)) throw new MigpoolError('BAD_INPUT', `reconfigureSeconds must be 0 or more, got ${reconfigureSeconds}`);
  if (!(sampleEvery > 0)) throw new MigpoolError('BAD_INPUT', `sampleEverySeconds must be positive, got ${sampleEvery}`);

  // ---- jobs
  const sortedSpecs = input.jobs
    .map((spec, i) => ({ spec, i }))
    .sort((a, b) => a.spec.arrival - b.spec.arrival || a.i - b.i);
  const jobs: Job[] = [];
  const byId = new Map<string, Job>();
  const estimator = createEstimator(input.info ?? { mode: 'exact', seed: input.seed }, sortedSpecs.map((x) => x.spec.work));
  const preemptionCost = input.preemptionCostSeconds ?? 0;
  if (!(preemptionCost >= 0) || !Number.isFinite(preemptionCost)) throw new MigpoolError('BAD_INPUT', `preemptionCostSeconds must be 0 or more, got ${preemptionCost}`);
  const byInputIndex: Job[] = new Array<Job>(input.jobs.length);
  for (const [order, { spec, i }] of sortedSpecs.entries()) {
    if (byId.has(spec.id)) throw new MigpoolError('BAD_INPUT', `job id '${spec.id}' appears twice in the trace: ids must be unique`);
    if (!(spec.work > 0) || !Number.isFinite(spec.work)) throw new MigpoolError('BAD_INPUT', `job '${spec.id}': work must be a positive number of seconds, got ${spec.work}`);
    if (!Number.isInteger(spec.gpus) || spec.gpus < 1) throw new MigpoolError('BAD_INPUT', `job '${spec.id}': gpus must be a positive whole number, got ${spec.gpus}`);
    if (!Number.isFinite(spec.arrival)) throw new MigpoolError('BAD_INPUT', `job '${spec.id}': arrival must be a number of seconds, got ${spec.arrival}`);
    const job = new Job(spec, order, memoryOf(spec), estimator);
    jobs.push(job);
    byId.set(spec.id, job);
    byInputIndex[i] = job;
  }

  // ---- fleet and index
  const clock = { now: Math.min(0, jobs[0]?.spec.arrival ?? 0) };
  const clockNow = (): number => clock.now;
  for (const j of jobs) j.clockNow = clockNow;
  const startTime = clock.now;
  const gpus: Gpu[] = input.fleet.gpus.map((m, id) => new Gpu(id, m));
  const totalSlices = gpus.reduce((s, g) => s + g.model.computeSlices, 0);

  const wholeSets = new Map<string, Set<Gpu>>();
  const emptySet = new Set<never>();
  const idleInst = new Map<string, [Set<Inst>, Set<Inst>]>();
  const idleMig = new Set<Gpu>();
  const reconfiguring = new Set<Gpu>();
  const wholeKeyOf = (jobsOn: number, sharing: string): string => (jobsOn === 0 ? '0' : `${jobsOn}|${sharing}`);

  const reindexGpu = (g: Gpu): void => {
    const settled = !reconfiguring.has(g);
    const key = !g.migEnabled && settled ? wholeKeyOf(g.wholeGpuJobs.length, g.sharing) : null;
    if (key !== g.wholeKey) {
      if (g.wholeKey !== null) wholeSets.get(g.wholeKey)?.delete(g);
      if (key !== null) {
        let s = wholeSets.get(key);
        if (!s) wholeSets.set(key, (s = new Set()));
        s.add(g);
      }
      g.wholeKey = key;
    }
    if (g.migEnabled && settled && g.busyInstances === 0) idleMig.add(g);
    else idleMig.delete(g);
  };
  const instSets = (key: string): [Set<Inst>, Set<Inst>] => {
    let s = idleInst.get(key);
    if (!s) idleInst.set(key, (s = [new Set(), new Set()]));
    return s;
  };
  const reindexInst = (i: Inst): void => {
    const want = i.job === null && i.readyAt <= clock.now && i.g.migEnabled && i.g.instances.includes(i);
    if (i.indexed) {
      const [b, f] = instSets(i.key);
      b.delete(i);
      f.delete(i);
      i.indexed = false;
    }
    if (want) {
      instSets(i.key)[i.g.busyInstances > 0 ? 0 : 1].add(i);
      i.indexed = true;
    }
  };
  /** Moves a GPU's idle instances between the busy-GPU and idle-GPU sets after busyInstances changed. */
  const flipGpu = (g: Gpu): void => {
    for (const i of g.instances) if (i.indexed) reindexInst(i);
  };
  for (const g of gpus) reindexGpu(g);

  const index: ClusterIndex = {
    wholeGpus: (n, sharing) => wholeSets.get(wholeKeyOf(n, sharing)) ?? emptySet,
    idleInstances: (model, profile) => instSets(`${model}|${profile}`),
    idleMigGpus: () => idleMig,
    reconfiguringGpus: () => reconfiguring,
  };

  // ---- view and context
  const queue: JobSpec[] = [];
  const running = new Map<string, Running>();
  const history = (id: string): JobHistory => {
    const job = byId.get(id);
    if (!job) return NO_HISTORY;
    const r = job.running;
    const current = r ? (clock.now - job.runStart) * (r.placement.kind === 'gpus' ? r.placement.gpus.length : 1) : 0;
    return { attainedGpuSeconds: job.attained + current, preemptions: job.preemptions };
  };
  const view: IndexedClusterView = {
    get now() {
      return clock.now;
    },
    gpus,
    queue,
    running,
    index,
    history,
    ...(input.users ? { users: input.users } : {}),
  };
  const speeds = new SpeedTable();
  const scaling = input.scaling;
  const ctx: PolicyContext = createPolicyContext({ random: createRandom(input.seed), reconfigureSeconds, speeds, ...(scaling ? { scaling } : {}), ...(input.preemptionRules ? { preemptionRules: input.preemptionRules } : {}) });

  // ---- accounting
  const heap = new EventHeap();
  let seq = 0;
  let events = 0;
  let reconfigurations = 0;
  let completed = 0;
  let lastCompletion = startTime;
  let busySlices = 0;
  const busyByPriority: Record<Priority, number> = { foreground: 0, background: 0 };
  let busyAcc = 0;
  const busyAccByPriority: Record<Priority, number> = { foreground: 0, background: 0 };
  let sampleAcc = 0;
  let lastT = startTime;
  let nextSample = startTime + sampleEvery;
  const timeline: { t: number; utilization: number; queueLength: number }[] = [];

  const advance = (t: number): void => {
    while (nextSample <= t) {
      const dt = nextSample - lastT;
      sampleAcc += busySlices * dt;
      busyAcc += busySlices * dt;
      for (const p of PRIORITIES) busyAccByPriority[p] += busyByPriority[p] * dt;
      users?.advance(dt);
      timeline.push({ t: nextSample, utilization: totalSlices > 0 ? sampleAcc / (totalSlices * sampleEvery) : 0, queueLength: queue.length });
      sampleAcc = 0;
      lastT = nextSample;
      nextSample += sampleEvery;
    }
    const dt = t - lastT;
    if (dt > 0) {
      sampleAcc += busySlices * dt;
      busyAcc += busySlices * dt;
      for (const p of PRIORITIES) busyAccByPriority[p] += busyByPriority[p] * dt;
      users?.advance(dt);
      lastT = t;
    }
    clock.now = t;
  };

  // Per-user holdings (GPUs' worth as src/sched/shares.ts counts them: a slice its part of its
  // GPU, 1 per whole GPU), when the run has users (SimulationInput.users or jobs' `user`).
  const users = input.users !== undefined || jobs.some((j) => j.spec.user !== undefined) ? new UserAccounting(new Set(jobs.map((j) => userOf(j.spec)))) : null;
  const setSlices = (r: Running, slices: number): void => {
    const p = r.job.spec.priority;
    busyByPriority[p] += slices - r.slices;
    r.slices = slices;
  };

  /** Folds progress so far and sets a new speed, scheduling the completion. */
  const setSpeed = (job: Job, speed: number): void => {
    const now = clock.now;
    job.base = job.progressAt(now);
    job.since = now;
    job.speed = speed;
    job.version++;
    const remaining = job.work - job.base;
    heap.push({ t: remaining <= 0 ? now : now + remaining / speed, seq: seq++, job, version: job.version, gpu: null });
  };

  /** Speed of a whole-GPU job from the sharing on each of its GPUs. */
  const wholeSpeed = (job: Job, on: readonly Gpu[]): number => {
    let s = Number.POSITIVE_INFINITY;
    for (const g of on) {
      const n = g.wholeGpuJobs.length;
      const v = sharedGpuSpeed(speeds, job.spec.workload, g.model, g.sharing, n);
      if (v < s) s = v;
    }
    return s;
  };

  /**
   * Speed of a running whole-GPU job: a strong-scaled job's from the scaling model (burst-parallel:
   * slower while background jobs fill its idle time), a filling job's from its GPU's idle share,
   * any other job's from the sharing on its GPUs.
   */
  const speedOf = (r: Running): number => {
    if (r.fillOf) {
      const host = r.fillOf;
      const g = r.gpus[0] as Gpu;
      return (host.scaled as ScaledRun).backgroundShare(g.burstRank);
    }
    if (r.scaled) return r.parallelism === 'burst' && r.fills > 0 ? r.scaled.sharedSpeed : r.scaled.soloSpeed;
    return wholeSpeed(r.job, r.gpus);
  };

  /** Recomputes the speed and slice share of every job on a shared GPU after its sharers changed. */
  const reshare = (g: Gpu, except: Job | null): void => {
    for (const id of g.wholeGpuJobs) {
      const r = running.get(id);
      if (!r || r.job === except) continue;
      setSpeed(r.job, speedOf(r));
      let slices = 0;
      for (const h of r.gpus) slices += h.model.computeSlices / h.wholeGpuJobs.length;
      setSlices(r, slices);
    }
  };

  // ---- queue maintenance
  let queueDirty = false;
  const reinserted = new Set<Job>();
  const compactQueue = (): void => {
    if (!queueDirty) return;
    queueDirty = false;
    let w = 0;
    for (let r = 0; r < queue.length; r++) {
      const spec = queue[r] as JobSpec;
      const job = byId.get(spec.id) as Job;
      if (job.status === 'queued' && !reinserted.has(job)) queue[w++] = spec;
    }
    queue.length = w;
    if (reinserted.size > 0) {
      const back = [...reinserted].filter((j) => j.status === 'queued').sort((a, b) => a.order - b.order);
      reinserted.clear();
      const merged: JobSpec[] = [];
      let bi = 0;
      for (const spec of queue) {
        const o = (byId.get(spec.id) as Job).order;
        while (bi < back.length && (back[bi] as Job).order < o) merged.push((back[bi++] as Job).spec);
        merged.push(spec);
      }
      while (bi < back.length) merged.push((back[bi++] as Job).spec);
      queue.length = 0;
      for (const s of merged) queue.push(s);
    }
  };

  // ---- applying decisions
  const beginRun = (job: Job): void => {
    job.status = 'running';
    users?.waiting(userOf(job.spec), -1);
    // A preempted job starts again from its last checkpoint, and pays for the restart.
    job.base -= job.owedCost;
    job.owedCost = 0;
    job.since = clock.now;
    job.runStart = clock.now;
    queueDirty = true;
  };

  const startOnInstance = (d: Extract<Decision, { kind: 'start-on-instance' }>): void => {
    const job = byId.get(d.job) as Job;
    const g = gpus[d.gpu] as Gpu;
    const inst = g.instances.find((i) => i.start === d.start) as Inst;
    beginRun(job);
    inst.job = job.spec.id;
    g.busyInstances++;
    reindexInst(inst);
    if (g.busyInstances === 1) {
      flipGpu(g);
      reindexGpu(g);
    }
    const r = new Running(job, { kind: 'instance', gpu: g.id, start: inst.start }, clock.now, clock, 0, inst, [g]);
    job.running = r;
    running.set(job.spec.id, r);
    busySlices += inst.profile.computeSlices;
    setSlices(r, inst.profile.computeSlices);
    users?.change(userOf(job.spec), sliceShare(inst.profile.computeSlices, g.model.computeSlices));
    job.speed = 0;
    setSpeed(job, speeds.relative(job.spec.workload, g.model, 'mig', inst.profile.name));
  };

  /** The simulator's own checks of a start (strong scaling), before the shared check. */
  const checkStrongScaling = (d: Extract<Decision, { kind: 'start-on-gpus' }>): void => {
    const what = `start job '${d.job}' on GPUs ${d.gpus.join(',')} (${d.sharing})`;
    const job = byId.get(d.job);
    if (!job || job.status !== 'queued') return;
    const on = d.gpus.map((id) => gpus[id]);
    if (on.some((g) => g === undefined)) return;
    // Strong scaling (opt-in, simulator only): a burst-parallel start, a fill of its idle time, or data-parallel.
    const fill = d.fill === true;
    if ((fill || d.parallelism !== undefined) && !scaling) throw bug(policyName, clock.now, `${what}: ${fill ? 'fill' : `parallelism '${d.parallelism}'`} needs a scaling model (SimulationInput.scaling)`);
    if (d.parallelism !== undefined && d.parallelism !== 'data-parallel' && d.parallelism !== 'burst') throw bug(policyName, clock.now, `${what}: unknown parallelism '${String(d.parallelism)}'`);
    if (d.parallelism !== undefined && (!job.spec.strongScaling || d.sharing !== 'exclusive' || fill)) throw bug(policyName, clock.now, `${what}: parallelism is for jobs with strongScaling started exclusively`);
    const host = fill ? (on[0] as Gpu).burst : null;
    if (fill) {
      const g = on[0] as Gpu;
      if (on.length !== 1 || d.sharing !== 'mps') throw bug(policyName, clock.now, `${what}: a fill takes one GPU, shared 'mps'`);
      if (g.migEnabled || reconfiguring.has(g)) throw bug(policyName, clock.now, `${what}: GPU ${g.id} is not a whole GPU ready for work`);
      if (!host || g.wholeGpuJobs.length !== 1) throw bug(policyName, clock.now, `${what}: GPU ${g.id} ${host ? `already has a job filling it (${g.wholeGpuJobs.join(', ')})` : 'runs no burst-parallel job'}`);
      if (!((host.scaled as ScaledRun).backgroundShare(g.burstRank) > 0)) throw bug(policyName, clock.now, `${what}: job '${host.spec.id}' leaves GPU ${g.id} no idle time`);
    }
    for (const g of on as Gpu[]) if (!fill && g.burst) throw bug(policyName, clock.now, `${what}: GPU ${g.id} runs burst-parallel job '${g.burst.spec.id}': only a fill may join it`);
  };

  const startOnGpus = (d: Extract<Decision, { kind: 'start-on-gpus' }>): void => {
    const job = byId.get(d.job) as Job;
    const on = d.gpus.map((id) => gpus[id] as Gpu);
    const fill = d.fill === true;
    const host = fill ? (on[0] as Gpu).burst : null;
    beginRun(job);
    const shared: Gpu[] = [];
    for (const g of on) {
      if (g.wholeGpuJobs.length === 0) busySlices += g.model.computeSlices;
      else shared.push(g);
      g.wholeGpuJobs.push(job.spec.id);
      g.sharing = d.sharing;
      reindexGpu(g);
    }
    const r = new Running(job, { kind: 'gpus', gpus: [...d.gpus] }, clock.now, clock, 0, null, on);
    if (scaling && job.spec.strongScaling && d.sharing === 'exclusive') {
      r.parallelism = d.parallelism ?? 'data-parallel';
      r.scaled = scaling.run(job.spec, on.length, r.parallelism);
      if (r.parallelism === 'burst') {
        on.forEach((g, rank) => {
          g.burst = r;
          g.burstRank = rank;
        });
      }
    }
    if (host) {
      r.fillOf = host;
      host.fills++;
    }
    job.running = r;
    running.set(job.spec.id, r);
    job.speed = 0;
    let slices = 0;
    for (const g of on) slices += g.model.computeSlices / g.wholeGpuJobs.length;
    setSlices(r, slices);
    users?.change(userOf(job.spec), on.length);
    setSpeed(job, speedOf(r));
    for (const g of shared) reshare(g, job);
  };

  /** Takes a running job off its resources (completion or preemption). */
  const release = (job: Job): void => {
    const r = job.running as Running;
    job.base = job.progressAt(clock.now);
    job.since = clock.now;
    job.speed = 0;
    job.version++;
    job.ranFor += clock.now - job.runStart;
    job.attained += (clock.now - job.runStart) * (r.placement.kind === 'gpus' ? r.placement.gpus.length : 1);
    job.running = null;
    running.delete(job.spec.id);
    setSlices(r, 0);
    users?.change(userOf(job.spec), -(r.inst ? sliceShare(r.inst.profile.computeSlices, r.inst.g.model.computeSlices) : r.gpus.length));
    if (r.inst) {
      const inst = r.inst;
      const g = inst.g;
      inst.job = null;
      g.busyInstances--;
      busySlices -= inst.profile.computeSlices;
      reindexInst(inst);
      if (g.busyInstances === 0) {
        flipGpu(g);
        reindexGpu(g);
      }
      return;
    }
    const filled = r.fillOf;
    if (filled) {
      filled.fills--;
      r.fillOf = null;
    }
    const burst = r.parallelism === 'burst';
    for (const g of r.gpus) {
      const k = g.wholeGpuJobs.indexOf(job.spec.id);
      g.wholeGpuJobs.splice(k, 1);
      if (burst) {
        // A job that filled this GPU's idle time keeps the GPU, alone.
        g.burst = null;
        g.burstRank = -1;
        for (const id of g.wholeGpuJobs) {
          const f = running.get(id);
          if (f) f.fillOf = null;
        }
      }
      if ((filled || burst) && g.wholeGpuJobs.length === 1) g.sharing = 'exclusive';
      if (g.wholeGpuJobs.length === 0) {
        busySlices -= g.model.computeSlices;
        g.sharing = 'exclusive';
      } else reshare(g, null);
      reindexGpu(g);
    }
  };

  const preempt = (d: Extract<Decision, { kind: 'preempt' }>): void => {
    const job = byId.get(d.job) as Job;
    release(job);
    job.preemptions++;
    job.owedCost = preemptionCost;
    job.status = 'queued';
    users?.waiting(userOf(job.spec), 1);
    reinserted.add(job);
    queueDirty = true;
  };

  const repartition = (d: Extract<Decision, { kind: 'repartition' }>): void => {
    const g = gpus[d.gpu] as Gpu;
    if (d.layout === null) {
      if (!g.migEnabled) return;
      const removed = g.instances;
      g.instances = [];
      g.migEnabled = false;
      for (const i of removed) if (i.indexed) reindexInst(i);
    } else {
      const wanted = d.layout.map((e) => {
        const p = profileOf(g.model, e.profile);
        return { profile: p, start: e.start, size: (p.placements.find((x) => x.start === e.start) as { size: number }).size };
      });
      const sorted = [...wanted].sort((a, b) => a.start - b.start);
      const old = g.migEnabled ? g.instances : [];
      const kept = new Set<Inst>();
      const next: Inst[] = [];
      for (const w of sorted) {
        const same = old.find((i) => i.start === w.start && i.profile.name === w.profile.name);
        if (same) {
          kept.add(same);
          next.push(same);
        } else next.push(new Inst(g, w.profile, w.start, w.size, clock.now + reconfigureSeconds, `${g.model.name}|${w.profile.name}`));
      }
      if (g.migEnabled && kept.size === old.length && next.length === old.length) return;
      const removed = old.filter((i) => !kept.has(i));
      g.instances = next;
      g.migEnabled = true;
      for (const i of removed) if (i.indexed) reindexInst(i);
    }
    reconfigurations++;
    g.busyUntil = clock.now + reconfigureSeconds;
    reconfiguring.add(g);
    reindexGpu(g);
    heap.push({ t: g.busyUntil, seq: seq++, job: null, version: 0, gpu: g });
  };

  const apply = (decisions: readonly Decision[]): void => {
    for (const d of decisions) {
      if (d.kind === 'start-on-gpus') checkStrongScaling(d);
      const problem = checkDecision(view, d, lookup);
      if (problem !== null) throw bug(policyName, clock.now, problem);
      switch (d.kind) {
        case 'start-on-instance':
          startOnInstance(d);
          break;
        case 'start-on-gpus':
          startOnGpus(d);
          break;
        case 'repartition':
          repartition(d);
          break;
        case 'preempt':
          preempt(d);
          break;
        default:
          throw bug(policyName, clock.now, `unknown decision ${JSON.stringify(d)}`);
      }
    }
    compactQueue();
  };

  const lookup: CheckLookup = {
    queued: (id) => {
      const job = byId.get(id);
      return job && job.status === 'queued' ? job.spec : undefined;
    },
    status: (id) => {
      const job = byId.get(id);
      return !job ? 'unknown' : job.status === 'future' ? 'not yet arrived' : job.status;
    },
  };

  /** The time of the last wake-up event queued for the policy (Policy.wakeAt). */
  let wakePending = Number.NaN;
  const decide = (): void => {
    const decisions = input.policy.decide(view, ctx);
    if (decisions.length > 0) apply(decisions);
    // A wake-up the policy asked for (Policy.wakeAt): an event with neither job nor GPU.
    const wake = input.policy.wakeAt?.(view) ?? null;
    if (wake !== null && wake > clock.now && wake !== wakePending && (queue.length > 0 || running.size > 0)) {
      wakePending = wake;
      heap.push({ t: wake, seq: seq++, job: null, version: 0, gpu: null });
    }
  };

  // ---- main loop
  const total = jobs.length;
  const until = input.untilSeconds;
  if (until !== undefined && !Number.isFinite(until)) throw new MigpoolError('BAD_INPUT', `untilSeconds must be a number of seconds, got ${until}`);
  let stoppedAt: number | null = null;
  let nextArrival = 0;
  const progressStep = Math.max(1, Math.floor(total / 100));
  let nextProgress = progressStep;
  let first = jobs.length > 0;
  for (;;) {
    const top = heap.peek();
    const arrival = jobs[nextArrival];
    const t = first ? startTime : Math.min(top ? top.t : Number.POSITIVE_INFINITY, arrival ? arrival.spec.arrival : Number.POSITIVE_INFINITY);
    if (t === Number.POSITIVE_INFINITY) break;
    if (until !== undefined && t > until) {
      stoppedAt = Math.max(until, startTime);
      break;
    }
    advance(t);
    let changed = first;
    first = false;
    for (let e = heap.peek(); e && e.t <= t; e = heap.peek()) {
      heap.pop();
      if (e.gpu) {
        const g = e.gpu;
        if (g.busyUntil !== e.t) continue;
        events++;
        changed = true;
        g.busyUntil = null;
        reconfiguring.delete(g);
        for (const i of g.instances) reindexInst(i);
        reindexGpu(g);
        continue;
      }
      if (!e.job) {
        changed = true;
        continue;
      }
      const job = e.job;
      if (job.version !== e.version || job.status !== 'running') continue;
      events++;
      changed = true;
      release(job);
      job.base = job.work;
      job.status = 'done';
      job.finished = t;
      completed++;
      lastCompletion = t;
      if (completed >= nextProgress && input.onProgress) {
        input.onProgress(completed / total);
        nextProgress += progressStep;
      }
    }
    for (let a = jobs[nextArrival]; a && a.spec.arrival <= t; a = jobs[++nextArrival]) {
      a.status = 'queued';
      users?.waiting(userOf(a.spec), 1);
      queue.push(a.spec);
      events++;
      changed = true;
    }
    if (changed) decide();
  }
  input.onProgress?.(total === 0 ? 1 : completed / total);

  // ---- results
  const end = stoppedAt ?? Math.max(lastCompletion, startTime);
  if (end > lastT) advance(end);
  if (lastT > nextSample - sampleEvery) {
    const span = lastT - (nextSample - sampleEvery);
    timeline.push({ t: lastT, utilization: totalSlices > 0 ? sampleAcc / (totalSlices * span) : 0, queueLength: queue.length });
  }
  const makespan = end - startTime;
  const metricsOf = (subset: readonly Job[], busy: number): PriorityMetrics => {
    const done = subset.filter((j) => j.status === 'done');
    const jct = done.map((j) => j.finished - j.spec.arrival).sort((a, b) => a - b);
    const sum = jct.reduce((s, x) => s + x, 0);
    const queueSum = done.reduce((s, j) => s + (j.finished - j.spec.arrival - j.ranFor), 0);
    let first = Number.POSITIVE_INFINITY;
    let last = Number.NEGATIVE_INFINITY;
    for (const j of subset) first = Math.min(first, j.spec.arrival);
    for (const j of done) last = Math.max(last, j.finished);
    const span = done.length > 0 ? last - Math.min(first, startTime) : 0;
    return {
      jobs: subset.length,
      completed: done.length,
      makespanSeconds: span,
      avgJctSeconds: done.length > 0 ? sum / done.length : 0,
      p50JctSeconds: percentile(jct, 50),
      p95JctSeconds: percentile(jct, 95),
      p99JctSeconds: percentile(jct, 99),
      avgQueueSeconds: done.length > 0 ? Math.max(0, queueSum / done.length) : 0,
      utilization: makespan > 0 && totalSlices > 0 ? busy / (totalSlices * makespan) : 0,
      throughputJobsPerHour: span > 0 ? (done.length * 3600) / span : 0,
    };
  };
  const metrics: SimMetrics = { ...metricsOf(jobs, busyAcc), reconfigurations };
  const byPriority = {
    foreground: metricsOf(
      jobs.filter((j) => j.spec.priority === 'foreground'),
      busyAccByPriority.foreground,
    ),
    background: metricsOf(
      jobs.filter((j) => j.spec.priority === 'background'),
      busyAccByPriority.background,
    ),
  };
  const jcts: number[] = [];
  for (const j of byInputIndex) if (j.status === 'done') jcts.push(j.finished - j.spec.arrival);
  const workDone: Record<Priority, number> = { foreground: 0, background: 0 };
  for (const j of jobs) {
    const w = Math.max(0, j.status === 'done' ? j.work : j.status === 'running' ? j.progressAt(end) : j.base);
    workDone[j.spec.priority] += w;
  }
  // Judging: slowdowns against each job's run alone on what it asked for, the big jobs' tail,
  // preemptions, and the trace's offline lower bounds.
  const slowdowns: number[] = [];
  const perJob: { user: string; jct: number | null; slowdown: number | null }[] = [];
  let preemptionTotal = 0;
  let preemptionMax = 0;
  for (const j of byInputIndex) {
    preemptionTotal += j.preemptions;
    preemptionMax = Math.max(preemptionMax, j.preemptions);
    if (j.status !== 'done') {
      if (users) perJob.push({ user: userOf(j.spec), jct: null, slowdown: null });
      continue;
    }
    const alone = j.work / askedSpeed(j.spec, input.fleet.gpus, speeds, scaling);
    slowdowns.push((j.finished - j.spec.arrival) / alone);
    if (users) perJob.push({ user: userOf(j.spec), jct: j.finished - j.spec.arrival, slowdown: (j.finished - j.spec.arrival) / alone });
  }
  return {
    policy: policyName,
    metrics: { ...metrics, makespanSeconds: makespan, throughputJobsPerHour: makespan > 0 ? (completed * 3600) / makespan : 0 },
    byPriority,
    jcts,
    timeline,
    events,
    workDone,
    slowdowns,
    slowdown: slowdownMetrics(slowdowns),
    bigJobs: bigJobMetrics(byInputIndex.map((j) => ({ gpus: j.spec.gpus, jct: j.status === 'done' ? j.finished - j.spec.arrival : null }))),
    preemptions: { total: preemptionTotal, maxPerJob: preemptionMax },
    // Jobs no policy can run here (more GPUs than the fleet or, for a job of whole GPUs, than its user's quota; memory no GPU holds) are left out of the bounds.
    bounds: lowerBounds(jobs, input.fleet.gpus, speeds, startTime, scaling, (spec) => {
      const quota = input.users?.get(userOf(spec))?.quotaGpus ?? null;
      return (quota === null || spec.gpus <= 1 || spec.gpus <= quota + QUOTA_TOLERANCE) && canEverRun(view, ctx, spec);
    }),
    ...(users ? { byUser: users.result(perJob, input.users) } : {}),
    unknownMemoryJobs: jobs.filter((j) => j.memory === null).length,
  };
}
