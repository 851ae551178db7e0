import type { ClusterView, Decision, GpuView, InstanceView, JobSpec, Policy, PolicyContext } from '../types.js';
import { bestExtension, bestLayoutFor, hasLayout } from './packing.js';

/**
 * migpool's policy. Principles:
 * - Whole GPUs while there are enough: when the jobs waiting do not outnumber the idle GPUs, each
 *   gets a whole GPU with MIG off (the fastest a job runs; MIG costs SMs).
 * - Pack when jobs wait: a job goes to the idle MIG instance where it does the most work per
 *   compute slice, but never below half its best speed unless slicing at least 1.5x its work
 *   per slice (small jobs pack on 1g slices; large jobs keep big instances or whole GPUs);
 *   otherwise new instances are carved out of free space, or an idle GPU is partitioned for the
 *   next jobs in line (the layout that maximises their total speed).
 * - Never touches a busy instance, and charges re-partitions their time: a job promised an
 *   instance that is being created waits for it; nothing is re-partitioned under a running job.
 * - Priorities: foreground jobs are placed before background ones; a foreground job that finds
 *   nothing may preempt background jobs (they are checkpointed and requeued).
 * - No starvation: multi-GPU jobs reserve idle GPUs as they free up, in arrival order, and the
 *   queue is served oldest first within each priority.
 */
export function migpoolPolicy(): Policy {
  const promised = new Map<string, { gpu: number; start: number }>();
  /** GPUs held for a multi-GPU job: job id -> GPUs. */
  const reserved = new Map<string, Set<number>>();

  const ready = (g: GpuView, now: number) => g.busyUntil === null || g.busyUntil <= now;
  const fullyIdle = (g: GpuView) => g.wholeGpuJobs.length === 0 && g.instances.every((i) => i.job === null);

  return {
    name: 'migpool',
    decide(view: ClusterView, ctx: PolicyContext): Decision[] {
      const decisions: Decision[] = [];
      if (view.queue.length === 0 && promised.size === 0) return decisions;
      const queued = new Map(view.queue.map((q) => [q.id, q]));
      const touched = new Set<number>();
      const promisedOn = new Map<number, number>();
      // 1. Promises whose instances are ready.
      for (const [id, p] of promised) {
        if (!queued.has(id)) {
          promised.delete(id);
          continue;
        }
        const g = view.gpus[p.gpu];
        if (!g || !ready(g, view.now)) {
          promisedOn.set(p.gpu, (promisedOn.get(p.gpu) ?? 0) + 1);
          continue;
        }
        const inst = g.instances.find((i) => i.start === p.start);
        if (inst && inst.job === null) {
          decisions.push({ kind: 'start-on-instance', job: id, gpu: p.gpu, start: p.start });
          promised.delete(id);
          queued.delete(id);
          touched.add(p.gpu);
        } else if (!inst) {
          promised.delete(id);
        } else {
          promisedOn.set(p.gpu, (promisedOn.get(p.gpu) ?? 0) + 1);
        }
      }
      for (const id of reserved.keys()) if (!queued.has(id)) reserved.delete(id);
      const reservedGpus = new Set([...reserved.values()].flatMap((s) => [...s]));

      // Resources free now.
      const idleWhole: GpuView[] = [];
      const idleMig: GpuView[] = [];
      const partial: GpuView[] = [];
      for (const g of view.gpus) {
        if (!ready(g, view.now) || touched.has(g.id) || promisedOn.has(g.id)) continue;
        if (fullyIdle(g)) (g.migEnabled ? idleMig : idleWhole).push(g);
        else if (g.migEnabled && g.instances.some((i) => i.job === null)) partial.push(g);
      }
      // Idle instances of partly used GPUs, by model and profile (a job only needs the best kind).
      const idleByKind = new Map<string, { gpu: GpuView; profile: string; slices: number; list: InstanceView[] }>();
      for (const g of partial) {
        for (const i of g.instances) {
          if (i.job !== null) continue;
          const key = `${g.model.name}|${i.profile.name}`;
          let kind = idleByKind.get(key);
          if (!kind) {
            kind = { gpu: g, profile: i.profile.name, slices: i.profile.computeSlices, list: [] };
            idleByKind.set(key, kind);
          }
          kind.list.push(i);
        }
      }
      const scoreCache = new Map<string, number>();
      // Serve order: foreground before background; within a priority, multi-GPU jobs that have
      // waited long (starving) first, then single-GPU jobs (most jobs, and short: they pack), then
      // other multi-GPU jobs, each group oldest first.
      const starvingJob = (q: JobSpec) => q.gpus > 1 && view.now - q.arrival > Math.max(2 * q.work, 3 * 86_400);
      const rank = (q: JobSpec) => (q.priority === 'foreground' ? 0 : 3) + (starvingJob(q) ? 0 : q.gpus === 1 ? 1 : 2);
      const order = [...queued.values()].filter((q) => !promised.has(q.id)).sort((a, b) => rank(a) - rank(b) || a.arrival - b.arrival);
      const singles = order.filter((q) => q.gpus === 1).length;
      const multiDemand = order.filter((q) => q.gpus > 1).reduce((s, q) => s + q.gpus, 0);
      const idleGpus = idleWhole.length + idleMig.length;
      const light = singles + multiDemand <= idleGpus;
      // Plenty: idle GPUs for several times the demand, and busy GPUs are few: whole GPUs.
      const plenty = (singles + multiDemand) * 4 <= idleGpus && idleGpus * 2 >= view.gpus.length;

      const takeWhole = (): GpuView | null => {
        const i = idleWhole.findIndex((g) => !reservedGpus.has(g.id));
        if (i >= 0) return idleWhole.splice(i, 1)[0] ?? null;
        return null;
      };
      const takeIdleMig = (): GpuView | null => {
        const i = idleMig.findIndex((g) => !reservedGpus.has(g.id));
        if (i >= 0) return idleMig.splice(i, 1)[0] ?? null;
        return null;
      };
      const speedOf = (job: JobSpec, g: GpuView, profile: string) => {
        const on = { kind: 'instance' as const, model: g.model, profile };
        return ctx.fits(job, on) ? ctx.speedOn(job, on) : -1;
      };
      const bestSpeed = (job: JobSpec, g: GpuView) => Math.max(ctx.speedOn(job, { kind: 'whole', model: g.model }), ...g.model.giProfiles.map((p) => speedOf(job, g, p.name)));
      /** Whether running `job` on `profile` is worth it: half its best speed, or 1.5x its work per slice. */
      const acceptable = (job: JobSpec, g: GpuView, profile: string, slices: number): number => {
        const s = speedOf(job, g, profile);
        if (s <= 0) return -1;
        const whole = ctx.speedOn(job, { kind: 'whole', model: g.model });
        const efficiency = s / (slices / g.model.computeSlices);
        // Under load every slice that holds a job is worth running it (jobs share the GPUs rather
        // than queue behind each other); otherwise only where it keeps half its best speed or packs.
        if (!light || s >= 0.5 * bestSpeed(job, g) || efficiency >= 1.5 * whole) return efficiency;
        return -1;
      };

      let blockedByMulti = false;
      const placedNow = new Set<string>();
      const takenInstances = new Set<string>();
      /** Single-GPU jobs that found no idle instance worth taking and no idle GPU. */
      const unplaced: JobSpec[] = [];
      for (const d of decisions) if (d.kind === 'start-on-instance' || d.kind === 'start-on-gpus') placedNow.add(d.job);
      for (const job of order) {
        if (promised.has(job.id) || placedNow.has(job.id)) continue;
        if (job.gpus > 1) {
          // Whole GPUs with MIG off; reserve them as they free up so that the job is not starved.
          const held = reserved.get(job.id) ?? new Set<number>();
          // Hold GPUs for it only once it has waited twice its own work and at least three days: before
          // that, it starts when enough GPUs are idle, and singles keep the GPUs busy meanwhile.
          const starving = starvingJob(job);
          const idleNow = idleWhole.filter((x) => !reservedGpus.has(x.id)).length + idleMig.filter((x) => !reservedGpus.has(x.id)).length;
          if (!starving && held.size === 0 && idleNow < job.gpus) continue;
          // One job holds GPUs at a time (two holding parts of the cluster could wait for each other forever).
          const holder = [...reserved.keys()][0];
          if (holder !== undefined && holder !== job.id && idleNow < job.gpus) continue;
          while (held.size < job.gpus) {
            const g = takeWhole() ?? takeIdleMig();
            if (!g) break;
            held.add(g.id);
            if (g.migEnabled) decisions.push({ kind: 'repartition', gpu: g.id, layout: null });
          }
          const ids = [...held];
          const allReady = ids.every((id) => {
            const g = view.gpus[id];
            return g !== undefined && !g.migEnabled && fullyIdle(g) && ready(g, view.now) && !decisions.some((d) => d.kind === 'repartition' && d.gpu === id);
          });
          if (held.size === job.gpus && allReady) {
            decisions.push({ kind: 'start-on-gpus', job: job.id, gpus: ids, sharing: 'exclusive' });
            reserved.delete(job.id);
          } else {
            reserved.set(job.id, held);
            blockedByMulti = true;
            // Backfill: until the job can start (when enough other GPUs free up, estimated from
            // the work their jobs have left), its held GPUs run single-GPU jobs that end before.
            const need = job.gpus - held.size;
            const releases: number[] = [];
            for (const g of view.gpus) {
              if (held.has(g.id)) continue;
              let left = 0;
              for (const id of [...g.wholeGpuJobs, ...g.instances.flatMap((i) => (i.job ? [i.job] : []))]) {
                const r = view.running.get(id);
                if (r) left = Math.max(left, (r.spec.work - r.done) / Math.max(r.speed, 1e-9));
              }
              releases.push(left);
            }
            releases.sort((a, b) => a - b);
            const startsAt = view.now + (releases[need - 1] ?? Infinity);
            for (const id of ids) {
              const g = view.gpus[id];
              if (!g || g.migEnabled || !fullyIdle(g) || !ready(g, view.now)) continue;
              const filler = order.find((q) => q.gpus === 1 && q.profile === null && !placedNow.has(q.id) && !promised.has(q.id) && view.now + q.work <= startsAt);
              if (!filler) break;
              decisions.push({ kind: 'start-on-gpus', job: filler.id, gpus: [id], sharing: 'exclusive' });
              placedNow.add(filler.id);
            }
          }
          for (const id of ids) touched.add(id);
          continue;
        }
        if (job.profile === null && plenty) {
          const g = takeWhole();
          if (g) {
            decisions.push({ kind: 'start-on-gpus', job: job.id, gpus: [g.id], sharing: 'exclusive' });
            touched.add(g.id);
            placedNow.add(job.id);
            continue;
          }
        }
        // An idle instance where the job does the most work per slice.
        let bestKind: { list: InstanceView[] } | null = null;
        let bestScore = -1;
        for (const [key, kind] of idleByKind) {
          if (kind.list.length === 0 || (job.profile !== null && kind.profile !== job.profile)) continue;
          const cacheKey = `${job.workload.name}|${job.memoryGiB ?? ''}|${key}`;
          let score = scoreCache.get(cacheKey);
          if (score === undefined) {
            score = acceptable(job, kind.gpu, kind.profile, kind.slices);
            scoreCache.set(cacheKey, score);
          }
          if (score > bestScore + 1e-12) {
            bestScore = score;
            bestKind = kind;
          }
        }
        const bestInst = bestKind && bestScore > 0 ? bestKind.list.pop() : undefined;
        if (bestInst) {
          decisions.push({ kind: 'start-on-instance', job: job.id, gpu: bestInst.gpu, start: bestInst.start });
          takenInstances.add(`${bestInst.gpu}:${bestInst.start}`);
          placedNow.add(job.id);
          continue;
        }
        if (idleWhole.length === 0 && idleMig.length === 0) {
          if (job.profile === null) unplaced.push(job);
          if (unplaced.length >= 7 * partial.length) break;
          continue;
        }
        if (blockedByMulti && job.priority === 'background') continue;
        // An idle GPU: partition it for this job and the next ones in line that want slices.
        const g = takeIdleMig() ?? takeWhole();
        if (!g) continue;
        const group = light ? [job] : [job, ...order.filter((q) => q !== job && q.gpus === 1 && q.profile === null && !promised.has(q.id) && !placedNow.has(q.id)).slice(0, 6)];
        let packed = bestLayoutFor(g.model, group, ctx, false);
        // The job comes first: if the best layout for the group leaves it out, lay out for it alone.
        if (!packed || !packed.assignment.has(job.id)) packed = bestLayoutFor(g.model, [job], ctx, true);
        if (!packed) {
          // No instance holds it: a whole GPU (MIG off) does, or nothing here does.
          if (!ctx.fits(job, { kind: 'whole', model: g.model })) continue;
          if (g.migEnabled) decisions.push({ kind: 'repartition', gpu: g.id, layout: null });
          else decisions.push({ kind: 'start-on-gpus', job: job.id, gpus: [g.id], sharing: 'exclusive' });
          placedNow.add(job.id);
          touched.add(g.id);
          continue;
        }
        if (hasLayout(g, packed.layout)) {
          // The GPU already has this layout: start at once (a no-op re-partition brings no event).
          for (const [id, start] of packed.assignment) {
            decisions.push({ kind: 'start-on-instance', job: id, gpu: g.id, start });
            placedNow.add(id);
          }
        } else {
          decisions.push({ kind: 'repartition', gpu: g.id, layout: packed.layout });
          for (const [id, start] of packed.assignment) promised.set(id, { gpu: g.id, start });
        }
        touched.add(g.id);
      }

      // 2. Re-cut the idle part of partly used GPUs for the jobs still waiting (busy instances stay).
      for (const g of partial) {
        if (unplaced.length === 0) break;
        if (touched.has(g.id) || g.instances.some((i) => i.job === null && takenInstances.has(`${g.id}:${i.start}`))) continue;
        const busy = g.instances.filter((i) => i.job !== null).map((i) => ({ profile: i.profile.name, start: i.start }));
        const group = unplaced.slice(0, 7);
        const ext = bestExtension(g.model, busy, group, ctx, (job, profile) => {
          const p = g.model.giProfiles.find((x) => x.name === profile);
          return p !== undefined && acceptable(job, g, profile, p.computeSlices) > 0;
        });
        if (!ext || ext.assignment.size === 0) continue;
        if (hasLayout(g, ext.layout)) {
          for (const [id, start] of ext.assignment) decisions.push({ kind: 'start-on-instance', job: id, gpu: g.id, start });
        } else {
          decisions.push({ kind: 'repartition', gpu: g.id, layout: ext.layout });
          for (const [id, start] of ext.assignment) promised.set(id, { gpu: g.id, start });
        }
        touched.add(g.id);
        for (let k = unplaced.length - 1; k >= 0; k--) if (ext.assignment.has((unplaced[k] as JobSpec).id)) unplaced.splice(k, 1);
      }

      // 3. Foreground jobs that found nothing may preempt background ones.
      const waitingForeground = order.filter((q) => q.priority === 'foreground' && q.gpus === 1 && !promised.has(q.id) && !decisions.some((d) => 'job' in d && d.job === q.id));
      if (waitingForeground.length > 0) {
        const victims = [...view.running.values()].filter((r) => r.spec.priority === 'background' && r.placement.kind === 'instance');
        for (const fg of waitingForeground) {
          const at = victims.findIndex((v) => {
            if (v.placement.kind !== 'instance') return false;
            const g = view.gpus[v.placement.gpu];
            const start = v.placement.start;
            const inst = g?.instances.find((i) => i.start === start);
            return g !== undefined && inst !== undefined && ctx.fits(fg, { kind: 'instance', model: g.model, profile: inst.profile.name });
          });
          const victim = at >= 0 ? victims.splice(at, 1)[0] : undefined;
          if (!victim || victim.placement.kind !== 'instance') continue;
          decisions.push({ kind: 'preempt', job: victim.spec.id });
          decisions.push({ kind: 'start-on-instance', job: fg.id, gpu: victim.placement.gpu, start: victim.placement.start });
        }
      }
      return decisions;
    },
  };
}
