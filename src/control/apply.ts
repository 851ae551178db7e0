import { GpuError, type GpuPort, type GpuProcess } from '../gpu/port.js';
import { planGpu as planGpuFn, type GpuPlan, type PlanOperation, type PlanOptions } from '../partition/plan.js';
import type { CurrentGpu, DesiredGpu } from '../partition/state.js';
import { describeInterrupted, type ApplyJournal, type JournalFile } from './journal.js';

/** How an apply runs; defaults in brackets. */
export interface ExecuteOptions {
  /** Leave pending MIG mode changes pending instead of resetting the GPU [false]. */
  readonly skipReset?: boolean;
  /** Runs before the mode changes and before the instance changes (mig-parted's hook points). */
  readonly beforeMode?: () => Promise<void>;
  readonly beforeConfig?: () => Promise<void>;
  /** The wall clock, for the journal [Date]. */
  readonly now?: () => Date;
  /**
   * Ends processes that hold what the plans destroy or reset, before anything changes (`--force`).
   * Without it, such processes make the apply stop before its first operation. Either way the
   * processes are looked up again afterwards and the apply changes nothing while any remain.
   */
  readonly stopProcesses?: (processes: readonly GpuProcess[]) => Promise<void>;
  /** Debug lines (mig-parted's `-d`): what the apply is about to do. */
  readonly debug?: (line: string) => void;
  /**
   * What the caller should be told to do when processes are in the way [`stop them (or pass
   * --force on a simulated machine), then apply again`, the apply command's advice].
   */
  readonly inUseAdvice?: string;
  /**
   * What the caller should be told to do when an operation fails part way [`run apply again to
   * finish`, the apply command's advice; the service retries by itself].
   */
  readonly failureAdvice?: string;
}

/** What an apply did. */
export interface ExecuteReport {
  readonly done: number;
  readonly skipped: number;
  readonly notes: readonly string[];
  /** The earlier apply this one finished, if any. */
  readonly resumed: string | null;
}

const MODE_KINDS = new Set<PlanOperation['kind']>(['set-mig-mode', 'reset-if-pending']);

/** The `nvidia-smi` command an operation amounts to, for --dry-run and for messages. */
export function commandOf(op: PlanOperation): string {
  switch (op.kind) {
    case 'set-mig-mode':
      return `nvidia-smi -i ${op.gpu} -mig ${op.enabled ? 1 : 0}`;
    case 'reset-if-pending':
      return `nvidia-smi -i ${op.gpu} -r    # only if the MIG mode change is pending`;
    case 'destroy-ci':
      return `nvidia-smi mig -i ${op.gpu} -gi ${op.gpuInstanceId} -ci ${op.computeInstanceId} -dci    # ${op.profile}`;
    case 'destroy-gi':
      return `nvidia-smi mig -i ${op.gpu} -gi ${op.gpuInstanceId} -dgi    # ${op.profile}`;
    case 'create-gi':
      return `nvidia-smi mig -i ${op.gpu} -cgi ${op.profileId ?? op.profile}:${op.start}    # ${op.profile} at ${op.start}:${op.size}`;
    case 'create-ci':
      return `nvidia-smi mig -i ${op.gpu} -gi <GI at ${op.giStart}> -cci ${op.profileId}    # ${op.profile} in the ${op.giProfile} at ${op.giStart}`;
  }
}

/**
 * Runs plans through the port: every MIG mode change first (resetting only GPUs whose change is
 * pending), then every instance change. The journal is written before and after each operation;
 * it is cleared when all went well and left behind, with the failure, when not, so that the next
 * apply (which plans afresh from what the GPUs hold) reports it and finishes the work.
 */
export async function executePlans(port: GpuPort, plans: readonly GpuPlan[], target: string, journal: JournalFile, options: ExecuteOptions = {}): Promise<ExecuteReport> {
  const now = options.now ?? (() => new Date());
  const earlier = journal.read();
  const resumed = earlier ? describeInterrupted(earlier) : null;
  // MIG mode changes of every GPU first, then instance changes; a GPU leaving MIG mode destroys its
  // instances before its mode change (a reset would take them anyway, but not one by one).
  const disabling = (p: GpuPlan) => p.operations.some((o) => o.kind === 'set-mig-mode' && !o.enabled);
  const modePhase = plans.flatMap((p) => (disabling(p) ? p.operations : p.operations.filter((o) => MODE_KINDS.has(o.kind))));
  const configPhase = plans.flatMap((p) => (disabling(p) ? [] : p.operations.filter((o) => !MODE_KINDS.has(o.kind))));
  const ordered = [...modePhase, ...configPhase];
  const inModePhase = new Set<PlanOperation>(modePhase);
  const state: ApplyJournal = { version: 1, target, startedAt: now().toISOString(), operations: ordered.map((op) => ({ op, status: 'pending' })) };
  const notes: string[] = [];
  if (ordered.length === 0) {
    journal.clear();
    return { done: 0, skipped: 0, notes, resumed };
  }
  await preflight(port, ordered, options);
  journal.write(state);
  const stillPending = new Set<number>();
  const createdAt = new Map<string, number>();
  let done = 0;
  let skipped = 0;
  let phase: 'mode' | 'config' | null = null;

  for (const entry of state.operations) {
    const op = entry.op;
    const nextPhase = inModePhase.has(op) ? 'mode' : 'config';
    if (nextPhase !== phase) {
      phase = nextPhase;
      await (phase === 'mode' ? options.beforeMode?.() : options.beforeConfig?.());
      options.debug?.(phase === 'mode' ? 'Applying MIG mode change...' : 'Applying MIG device configuration...');
    }
    if (stillPending.has(op.gpu) && !MODE_KINDS.has(op.kind)) {
      entry.status = 'skipped';
      skipped++;
      continue;
    }
    entry.status = 'running';
    journal.write(state);
    options.debug?.(`  ${commandOf(op)}`);
    try {
      await run(op);
      entry.status = entry.status === 'running' ? 'done' : entry.status;
      if (entry.status === 'done') done++;
      journal.write(state);
    } catch (e) {
      entry.status = 'failed';
      const why = e instanceof Error ? e.message : String(e);
      state.failure = why;
      journal.write(state);
      const left = state.operations.filter((o) => o.status === 'pending').length;
      const progress = `${done} of ${ordered.length} operations done, ${left} not started; ${options.failureAdvice ?? 'run apply again to finish'} (journal: ${journal.path})`;
      if (e instanceof GpuError) throw new GpuError(e.kind, e.operation, e.gpu, `${e.reason}; ${progress}`);
      throw e;
    }
  }
  journal.clear();
  return { done, skipped, notes, resumed };

  async function run(op: PlanOperation): Promise<void> {
    switch (op.kind) {
      case 'set-mig-mode': {
        const { pending } = await port.setMigMode(op.gpu, op.enabled);
        if (pending) stillPending.add(op.gpu);
        return;
      }
      case 'reset-if-pending': {
        const gpu = (await port.listGpus()).find((g) => g.index === op.gpu);
        const pending = gpu?.migMode ? gpu.migMode.current !== gpu.migMode.pending : false;
        if (!pending) {
          stillPending.delete(op.gpu);
          markSkipped(op, 'no pending MIG mode change');
          return;
        }
        if (options.skipReset) {
          stillPending.add(op.gpu);
          notes.push(`GPU ${op.gpu}: MIG mode change pending; reset skipped (--skip-reset): reset the GPU or reboot, then apply again`);
          markSkipped(op, 'reset skipped');
          return;
        }
        await port.resetGpu(op.gpu);
        stillPending.delete(op.gpu);
        return;
      }
      case 'destroy-ci':
        return port.destroyComputeInstance(op.gpu, op.gpuInstanceId, op.computeInstanceId);
      case 'destroy-gi':
        return port.destroyGpuInstance(op.gpu, op.gpuInstanceId);
      case 'create-gi': {
        const gi = await port.createGpuInstance(op.gpu, op.profile, op.start);
        createdAt.set(`${op.gpu}:${op.start}`, gi.id);
        return;
      }
      case 'create-ci': {
        let id = createdAt.get(`${op.gpu}:${op.giStart}`);
        if (id === undefined) id = (await port.listGpuInstances(op.gpu)).find((g) => g.start === op.giStart && g.profile === op.giProfile)?.id;
        if (id === undefined) throw new GpuError('not-found', `create compute instance ${op.profile}`, op.gpu, `no ${op.giProfile} GPU instance at ${op.giStart}`);
        await port.createComputeInstance(op.gpu, id, op.profile);
        return;
      }
    }
  }

  function markSkipped(op: PlanOperation, note: string): void {
    const entry = state.operations.find((o) => o.op === op);
    if (entry) {
      entry.status = 'skipped';
      entry.note = note;
      skipped++;
    }
  }
}

/**
 * The processes an operation list would run into: those on a compute or GPU instance it destroys,
 * and those on a GPU it may reset (the driver refuses both while a process runs there, "In use by
 * another client", nvidia-smi(1) and the MIG user guide).
 */
export function processesInTheWay(operations: readonly PlanOperation[], processes: readonly GpuProcess[], skipReset = false): GpuProcess[] {
  return processes.filter((p) =>
    operations.some((op) => {
      if (op.gpu !== p.gpu) return false;
      if (op.kind === 'destroy-ci') return p.gpuInstanceId === op.gpuInstanceId && p.computeInstanceId === op.computeInstanceId;
      if (op.kind === 'destroy-gi') return p.gpuInstanceId === op.gpuInstanceId;
      if (op.kind === 'reset-if-pending') return !skipReset;
      return false;
    }),
  );
}

/**
 * Checks, before the first operation, that no process holds what the operations destroy or reset;
 * with `stopProcesses` (--force) it ends them first. Throws (nothing changed) while any remain, so
 * that an apply never stops half way on an instance in use.
 */
async function preflight(port: GpuPort, operations: readonly PlanOperation[], options: ExecuteOptions): Promise<void> {
  if (!operations.some((o) => o.kind === 'destroy-ci' || o.kind === 'destroy-gi' || o.kind === 'reset-if-pending')) return;
  let inTheWay = processesInTheWay(operations, await port.listProcesses(), options.skipReset);
  if (inTheWay.length > 0 && options.stopProcesses) {
    options.debug?.(`Stopping processes ${inTheWay.map((p) => p.pid).join(', ')}`);
    await options.stopProcesses(inTheWay);
    inTheWay = processesInTheWay(operations, await port.listProcesses(), options.skipReset);
  }
  if (inTheWay.length === 0) return;
  const byGpu = new Map<number, number[]>();
  for (const p of inTheWay) byGpu.set(p.gpu, [...(byGpu.get(p.gpu) ?? []), p.pid]);
  const where = [...byGpu].map(([gpu, pids]) => `GPU ${gpu}: processes ${pids.join(', ')}`).join('; ');
  const what = options.stopProcesses ? 'still run' : 'run';
  throw new GpuError(
    'in-use',
    'apply',
    null,
    `${where} ${what} on instances the target destroys or on a GPU it resets, and the driver refuses that while they run; nothing changed: ${options.inUseAdvice ?? `stop them${options.stopProcesses ? '' : ' (or pass --force on a simulated machine)'}, then apply again`}`,
  );
}

/**
 * What `apply --dry-run` prints: the nvidia-smi commands of the plans as an apply would run them.
 * Under `skipReset` no reset is printed, and a GPU whose MIG mode change stays pending gets a
 * comment instead of its instance changes (the apply skips them, as mig-parted does).
 */
export function dryRunLines(plans: readonly GpuPlan[], skipReset: boolean): string[] {
  const lines: string[] = [];
  for (const p of plans) {
    const reset = skipReset ? p.operations.findIndex((o) => o.kind === 'reset-if-pending') : -1;
    const pending = reset >= 0;
    p.operations.forEach((op, i) => {
      if (!pending || i < reset) lines.push(commandOf(op));
    });
    if (pending) lines.push(`# GPU ${p.gpu}: the MIG mode change stays pending (--skip-reset); its instances are configured after a GPU reset or reboot`);
  }
  return lines;
}

/** Plans every GPU that has a desired state; GPUs it cannot plan come back as refusals. */
export function planAll(
  found: readonly { readonly current: CurrentGpu | null; readonly info: { readonly index: number } }[],
  desired: ReadonlyMap<number, DesiredGpu>,
  options: PlanOptions,
): { plans: GpuPlan[]; refusals: string[] } {
  const plans: GpuPlan[] = [];
  const refusals: string[] = [];
  for (const gpu of found) {
    const want = desired.get(gpu.info.index);
    if (!want) continue;
    if (!gpu.current) {
      refusals.push(`GPU ${gpu.info.index} is not a MIG-capable GPU migpool knows`);
      continue;
    }
    const outcome = planGpuFn(gpu.current, want, options);
    if (outcome.ok) plans.push(outcome.plan);
    else refusals.push(`GPU ${outcome.gpu}: ${outcome.reason}`);
  }
  return { plans, refusals };
}
