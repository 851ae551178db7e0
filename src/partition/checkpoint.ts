/**
 * mig-parted's checkpoint file (`nvidia-mig-parted checkpoint -f FILE`, `restore -f FILE`): the
 * full MIG state of every MIG-capable GPU, to put back exactly later. Pure: the caller reads the
 * GPUs and the file.
 *
 * Format (github.com/NVIDIA/mig-parted api/checkpoint/v1/state.go, pkg/types/mig_state.go,
 * pkg/mig/state/state.go Fetch; written with Go's json.Marshal, so field names as in the structs):
 * `{"Version":"v1","MigState":{"Devices":[{"UUID":"GPU-...","MigMode":1,"GpuInstances":[
 * {"ProfileID":9,"Placement":{"Start":4,"Size":4},"ComputeInstances":[{"ProfileID":2,
 * "EngProfileID":0}]}]}]}}`. MigMode is 0 (disabled) or 1 (enabled), the current mode
 * (internal/nvlib/mig/mode.go). ProfileID of a GPU instance is NVML's profile constant
 * (`NVML_GPU_INSTANCE_PROFILE_*`, the index Fetch walks), not the ID `nvidia-smi mig -lgip`
 * prints; ProfileID of a compute instance is `NVML_COMPUTE_INSTANCE_PROFILE_*`; EngProfileID is
 * `NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED` (0), the only one NVML defines. Empty lists are
 * `null` (Go's nil slices). Go decodes field names case-insensitively and ignores unknown ones;
 * so does {@link parseCheckpoint}.
 *
 * Restore differs from mig-parted in one way: mig-parted clears every instance of a GPU and
 * recreates them all (state.go RestoreConfig); here instances already at their checkpointed
 * placement with the same compute instances are kept, and busy ones are never destroyed unless
 * forced. The end state is the same.
 */
import { badInput } from '../errors.js';
import { ciProfilesOf } from '../mig/compute-instances.js';
import type { CiProfile, GiProfile, GpuModel } from '../mig/types.js';
import { planGpu, type GpuPlan, type PlanOperation, type PlanOptions, type PlanOutcome } from './plan.js';
import type { CurrentGpu } from './state.js';

export const CHECKPOINT_VERSION = 'v1';

export interface CheckpointComputeInstance {
  ProfileID: number;
  EngProfileID: number;
}
export interface CheckpointGpuInstance {
  ProfileID: number;
  Placement: { Start: number; Size: number };
  ComputeInstances: CheckpointComputeInstance[] | null;
}
export interface CheckpointDevice {
  UUID: string;
  MigMode: number;
  GpuInstances: CheckpointGpuInstance[] | null;
}
/** A checkpoint file as mig-parted writes it. */
export interface Checkpoint {
  Version: string;
  MigState: { Devices: CheckpointDevice[] | null };
}

/**
 * NVML's GPU instance profile constant of a profile (nvml.h `NVML_GPU_INSTANCE_PROFILE_*`, and
 * go-nvlib pkg/nvlib/device/mig_profile.go NewMigProfile, which maps them back to names): by
 * compute slices and attribute; a one-slice profile with two memory slices (`1g.10gb` on
 * A100-40GB) is `_1_SLICE_REV2`. Null for a profile NVML has no constant for.
 */
export function nvmlGiProfileConstant(gi: GiProfile): number | null {
  const g = gi.computeSlices;
  const attr = /[+-].*$/.exec(gi.name)?.[0] ?? '';
  const table: Readonly<Record<string, Readonly<Record<number, number>>>> = {
    '': { 1: gi.memorySlices === 2 ? 9 : 0, 2: 1, 3: 2, 4: 3, 7: 4, 8: 5, 6: 6 },
    '+me': { 1: 7, 2: 8 },
    '+gfx': { 1: 10, 2: 11, 4: 12, 3: 17 },
    '-me': { 1: 13, 2: 14 },
    '+me.all': { 1: 15, 2: 16 },
  };
  return table[attr]?.[g] ?? null;
}

function giOfConstant(model: GpuModel, constant: number): GiProfile | undefined {
  return model.giProfiles.find((p) => nvmlGiProfileConstant(p) === constant);
}

/**
 * The checkpoint of the GPUs as found: MIG-capable GPUs only, in index order, instances ordered
 * by profile constant then placement (the order NVML's walk gives), compute instances by size.
 * Throws for an instance whose profile has no NVML constant here (report it).
 */
export function checkpointOf(gpus: readonly CurrentGpu[]): Checkpoint {
  const devices: CheckpointDevice[] = [...gpus]
    .sort((a, b) => a.index - b.index)
    .map((gpu) => {
      const enabled = gpu.migMode.current === 'enabled';
      if (!enabled) return { UUID: gpu.uuid, MigMode: 0, GpuInstances: null };
      const instances = gpu.instances.map((gi) => {
        const constant = nvmlGiProfileConstant(gi.profile);
        if (constant === null) throw badInput(`GPU ${gpu.index}: GPU instance ${gi.id} (${gi.profile.name}) has no NVML profile constant migpool knows; it cannot be checkpointed`);
        const options = ciProfilesOf(gi.profile);
        const cis = gi.computeInstances.map((ci) => {
          const p = options.find((o) => o.name === ci.profile);
          if (!p) throw badInput(`GPU ${gpu.index}: compute instance ${ci.id} (${ci.profile}) is not a compute instance profile of ${gi.profile.name}`);
          return { ProfileID: p.id, EngProfileID: 0, slices: p.computeSlices };
        });
        cis.sort((a, b) => b.slices - a.slices);
        return {
          ProfileID: constant,
          Placement: { Start: gi.start, Size: gi.size },
          ComputeInstances: cis.length === 0 ? null : cis.map(({ ProfileID, EngProfileID }) => ({ ProfileID, EngProfileID })),
        };
      });
      instances.sort((a, b) => a.ProfileID - b.ProfileID || a.Placement.Start - b.Placement.Start);
      return { UUID: gpu.uuid, MigMode: 1, GpuInstances: instances.length === 0 ? null : instances };
    });
  return { Version: CHECKPOINT_VERSION, MigState: { Devices: devices } };
}

/** encoding/json field lookup: exact, else case-insensitive. */
function field(obj: Record<string, unknown>, name: string): unknown {
  if (name in obj) return obj[name];
  const key = Object.keys(obj).find((k) => k.toLowerCase() === name.toLowerCase());
  return key === undefined ? undefined : obj[key];
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Reads a checkpoint file's text. Every problem is a BAD_INPUT error `file: Field.Path: problem;
 * fix`, one line.
 */
export function parseCheckpoint(text: string, file: string): Checkpoint {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw badInput(`${file}: not a checkpoint (not valid JSON: ${(e as Error).message}); write one with 'migpool checkpoint -f ${file}'`, { file });
  }
  const fail = (path: string, problem: string): never => {
    throw badInput(`${file}: ${path}: ${problem}`, { file, field: path });
  };
  const int = (v: unknown, path: string, min = 0): number => {
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min) fail(path, `must be a whole number >= ${min}, got ${JSON.stringify(v)}`);
    return v as number;
  };
  const list = (v: unknown, path: string): unknown[] => {
    if (v === null || v === undefined) return [];
    if (!Array.isArray(v)) fail(path, `must be a list, got ${JSON.stringify(v)}`);
    return v as unknown[];
  };
  if (!isObject(raw)) return fail('(top level)', 'expected an object with Version and MigState');
  const version = field(raw, 'Version');
  if (version !== CHECKPOINT_VERSION) fail('Version', `unknown checkpoint version ${JSON.stringify(version)}; the only one is "v1"`);
  const state = field(raw, 'MigState');
  if (!isObject(state)) return fail('MigState', 'missing or not an object; expected {"Devices": [...]}');
  const devices = list(field(state, 'Devices'), 'MigState.Devices').map((d, i): CheckpointDevice => {
    const at = `MigState.Devices[${i}]`;
    if (!isObject(d)) return fail(at, 'expected an object with UUID, MigMode and GpuInstances');
    const uuid = field(d, 'UUID');
    if (typeof uuid !== 'string' || uuid === '') fail(`${at}.UUID`, 'missing; expected the GPU UUID (GPU-...)');
    const mode = int(field(d, 'MigMode'), `${at}.MigMode`);
    if (mode > 1) fail(`${at}.MigMode`, `must be 0 (disabled) or 1 (enabled), got ${mode}`);
    const gis = list(field(d, 'GpuInstances'), `${at}.GpuInstances`).map((g, j): CheckpointGpuInstance => {
      const gat = `${at}.GpuInstances[${j}]`;
      if (!isObject(g)) return fail(gat, 'expected an object with ProfileID, Placement and ComputeInstances');
      const placement = field(g, 'Placement');
      if (!isObject(placement)) return fail(`${gat}.Placement`, 'missing; expected {"Start": N, "Size": N}');
      const cis = list(field(g, 'ComputeInstances'), `${gat}.ComputeInstances`).map((c, k): CheckpointComputeInstance => {
        const cat = `${gat}.ComputeInstances[${k}]`;
        if (!isObject(c)) return fail(cat, 'expected an object with ProfileID and EngProfileID');
        const eng = int(field(c, 'EngProfileID') ?? 0, `${cat}.EngProfileID`);
        if (eng !== 0) fail(`${cat}.EngProfileID`, `must be 0 (NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, the only engine profile), got ${eng}`);
        return { ProfileID: int(field(c, 'ProfileID'), `${cat}.ProfileID`), EngProfileID: eng };
      });
      return {
        ProfileID: int(field(g, 'ProfileID'), `${gat}.ProfileID`),
        Placement: { Start: int(field(placement, 'Start'), `${gat}.Placement.Start`), Size: int(field(placement, 'Size'), `${gat}.Placement.Size`, 1) },
        ComputeInstances: cis.length === 0 ? null : cis,
      };
    });
    if (mode === 0 && gis.length > 0) fail(`${at}.GpuInstances`, 'a GPU with MigMode 0 (disabled) holds no GPU instances');
    return { UUID: uuid as string, MigMode: mode, GpuInstances: gis.length === 0 ? null : gis };
  });
  const seen = new Set<string>();
  devices.forEach((d, i) => {
    if (seen.has(d.UUID.toLowerCase())) fail(`MigState.Devices[${i}].UUID`, `${d.UUID} is listed twice`);
    seen.add(d.UUID.toLowerCase());
  });
  return { Version: CHECKPOINT_VERSION, MigState: { Devices: devices } };
}

/** The checkpoint as mig-parted writes it: compact JSON (json.Marshal). */
export function formatCheckpoint(checkpoint: Checkpoint): string {
  return JSON.stringify(checkpoint);
}

interface WantedInstance {
  readonly gi: GiProfile;
  readonly start: number;
  readonly size: number;
  readonly cis: readonly CiProfile[];
}

/** The instances a checkpointed device wants, resolved on the GPU's model; BAD_INPUT naming the field otherwise. */
function wantedInstances(model: GpuModel, device: CheckpointDevice, at: string): WantedInstance[] {
  const wanted = (device.GpuInstances ?? []).map((g, j): WantedInstance => {
    const gat = `${at}.GpuInstances[${j}]`;
    const gi = giOfConstant(model, g.ProfileID);
    if (!gi) throw badInput(`${gat}.ProfileID: ${g.ProfileID} is not a GPU instance profile of ${model.name} (NVML_GPU_INSTANCE_PROFILE_* constants: ${model.giProfiles.map((p) => `${nvmlGiProfileConstant(p)} ${p.name}`).join(', ')})`);
    if (!gi.placements.some((p) => p.start === g.Placement.Start && p.size === g.Placement.Size)) {
      throw badInput(`${gat}.Placement: ${g.Placement.Start}:${g.Placement.Size} is not a placement of ${gi.name} on ${model.name}; it has ${gi.placements.map((p) => `${p.start}:${p.size}`).join(', ')}`);
    }
    const options = ciProfilesOf(gi);
    const cis = (g.ComputeInstances ?? []).map((c, k) => {
      const ci = options.find((o) => o.id === c.ProfileID);
      if (!ci) throw badInput(`${gat}.ComputeInstances[${k}].ProfileID: ${c.ProfileID} is not a compute instance profile of ${gi.name}; it has ${options.map((o) => `${o.id} ${o.name}`).join(', ')}`);
      return ci;
    });
    if (cis.reduce((s, c) => s + c.computeSlices, 0) > gi.computeSlices) throw badInput(`${gat}.ComputeInstances: more compute slices than ${gi.name} has (${gi.computeSlices})`);
    return { gi, start: g.Placement.Start, size: g.Placement.Size, cis };
  });
  wanted.forEach((a, i) =>
    wanted.forEach((b, j) => {
      if (i < j && a.start < b.start + b.size && b.start < a.start + a.size) throw badInput(`${at}.GpuInstances[${j}].Placement: overlaps GpuInstances[${i}] (${a.gi.name} at ${a.start}:${a.size})`);
    }),
  );
  return wanted;
}

const sameCis = (a: readonly string[], b: readonly string[]): boolean => [...a].sort().join(',') === [...b].sort().join(',');

/**
 * Plans one GPU back to its checkpointed state: the MIG mode as the planner changes it, then
 * (unless `modeOnly`) every GPU instance at its checkpointed placement with its compute
 * instances. Instances already there, with the same compute instances, are kept; the rest are
 * destroyed (never one with processes unless `force`). `at` names the device in messages.
 */
export function planRestoreGpu(current: CurrentGpu, device: CheckpointDevice, at: string, options: PlanOptions = {}): PlanOutcome {
  if (device.MigMode === 0) return planGpu(current, { migEnabled: false, groups: [] }, options);
  const wanted = wantedInstances(current.model, device, at);
  const mode = planGpu(current, { migEnabled: true, groups: [] }, { ...options, modeOnly: true });
  if (!mode.ok || options.modeOnly) return mode;
  const gpu = current.index;
  const existing = current.migMode.current === 'enabled' ? current.instances : [];
  const keptWanted = new Set<number>();
  const kept: GpuPlan['kept'][number][] = [];
  const destroyed: (typeof existing)[number][] = [];
  for (const have of existing) {
    const w = wanted.findIndex((x, i) => !keptWanted.has(i) && x.gi.name === have.profile.name && x.start === have.start && sameCis(x.cis.map((c) => c.name), have.computeInstances.map((c) => c.profile)));
    if (w >= 0) {
      keptWanted.add(w);
      kept.push({ id: have.id, profile: have.profile.name, start: have.start, size: have.size });
    } else {
      destroyed.push(have);
    }
  }
  const busy = destroyed.filter((gi) => gi.computeInstances.some((c) => c.pids.length > 0));
  if (busy.length > 0 && !options.force) {
    const pids = busy.flatMap((gi) => gi.computeInstances.flatMap((c) => c.pids));
    return { ok: false, gpu, reason: `restoring needs GPU instance(s) ${busy.map((gi) => `${gi.id} (${gi.profile.name} at ${gi.start}:${gi.size})`).join(', ')} destroyed, but processes ${pids.join(', ')} run there; nothing changed (use --force to stop them)` };
  }
  const ops: PlanOperation[] = [...mode.plan.operations];
  for (const gi of destroyed) for (const ci of gi.computeInstances) ops.push({ kind: 'destroy-ci', gpu, gpuInstanceId: gi.id, computeInstanceId: ci.id, profile: ci.profile });
  for (const gi of destroyed) ops.push({ kind: 'destroy-gi', gpu, gpuInstanceId: gi.id, profile: gi.profile.name });
  const toCreate = wanted.filter((_, i) => !keptWanted.has(i)).sort((a, b) => a.start - b.start);
  for (const w of toCreate) ops.push({ kind: 'create-gi', gpu, profile: w.gi.name, profileId: w.gi.id, start: w.start, size: w.size });
  for (const w of toCreate) for (const ci of [...w.cis].sort((a, b) => b.computeSlices - a.computeSlices)) ops.push({ kind: 'create-ci', gpu, giStart: w.start, giProfile: w.gi.name, profile: ci.name, profileId: ci.id });
  return {
    ok: true,
    plan: {
      gpu,
      operations: ops,
      kept,
      destroyedGpuInstances: destroyed.length,
      destroyedComputeInstances: destroyed.reduce((s, gi) => s + gi.computeInstances.length, 0),
      forcedPids: [...mode.plan.forcedPids, ...busy.flatMap((gi) => gi.computeInstances.flatMap((c) => c.pids))],
      fragmentation: 0,
    },
  };
}

/**
 * Whether the GPUs are as checkpointed (what `restore` checks before changing anything): the MIG
 * mode of each checkpointed GPU, and unless `modeOnly` its instances at their placements with
 * their compute instances. Returns one line per GPU that differs.
 */
export function checkpointDifferences(gpus: readonly CurrentGpu[], checkpoint: Checkpoint, modeOnly: boolean): string[] {
  const differences: string[] = [];
  for (const device of checkpoint.MigState.Devices ?? []) {
    const gpu = gpus.find((g) => g.uuid.toLowerCase() === device.UUID.toLowerCase());
    if (!gpu) {
      differences.push(`${device.UUID}: not on this node`);
      continue;
    }
    const want = device.MigMode === 1 ? 'enabled' : 'disabled';
    if (gpu.migMode.current !== want || gpu.migMode.pending !== want) {
      differences.push(`GPU ${gpu.index}: MIG mode is ${gpu.migMode.current} (pending ${gpu.migMode.pending}), want ${want}`);
      continue;
    }
    if (modeOnly || want === 'disabled') continue;
    const have = canonicalInstances(checkpointOf([gpu]).MigState.Devices?.[0]?.GpuInstances ?? null);
    if (have !== canonicalInstances(device.GpuInstances)) differences.push(`GPU ${gpu.index}: instances differ from the checkpoint`);
  }
  return differences;
}

/** Instances in a form that compares equal whatever their order: `profile@start:size[ci,ci]`. */
function canonicalInstances(gis: readonly CheckpointGpuInstance[] | null): string {
  return (gis ?? [])
    .map((g) => `${g.ProfileID}@${g.Placement.Start}:${g.Placement.Size}[${(g.ComputeInstances ?? []).map((c) => c.ProfileID).sort((a, b) => a - b).join(',')}]`)
    .sort()
    .join(' ');
}
