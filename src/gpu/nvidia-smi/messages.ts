/**
 * Reads the messages `nvidia-smi` prints when it changes something: `-mig 0|1`, `mig -cgi`,
 * `mig -cci`, `mig -dci`, `mig -dgi` and `-r` (GPU reset). Pure functions over the captured text
 * (stdout and stderr together). Each pattern names the real capture it was taken from; the
 * fixtures live in `test/fixtures/nvidia-smi/` with a `.src` beside each.
 *
 * nvidia-smi pads IDs to width 2 (`GPU instance ID  2`), so every pattern allows runs of blanks.
 * A command that fails part way prints the successes before the failure: parse both with the
 * `parse*` functions and `classifyError`.
 */

import type { GpuErrorKind } from '../port.js';

/** Why nvidia-smi refused or failed, as far as its reason line tells. */
export type { GpuErrorKind };

/** A GPU instance that `nvidia-smi mig -cgi` reports as created. */
export interface CreatedGpuInstance {
  gpu: number;
  instanceId: number;
  /** Profile name without `MIG `: `3g.20gb`. */
  profile: string;
  profileId: number;
}

/** A compute instance that `nvidia-smi mig -cci` (or `-cgi ... -C`) reports as created. */
export interface CreatedComputeInstance {
  gpu: number;
  gpuInstanceId: number;
  /** CI ID; null for the older message form that does not print it. */
  instanceId: number | null;
  /** CI profile name without `MIG `: `1c.3g.20gb`, or the GI's name for the full-size CI. */
  profile: string;
  profileId: number;
}

/** A GPU or compute instance that `mig -dgi` / `mig -dci` reports as destroyed. */
export interface DestroyedInstance {
  kind: 'gpu-instance' | 'compute-instance';
  gpu: number;
  gpuInstanceId: number;
  /** Set for a compute instance, null for a GPU instance. */
  computeInstanceId: number | null;
}

/** The outcome of `nvidia-smi -mig 0|1` for one GPU. */
export interface MigModeChange {
  /** PCI bus ID as printed: `00000000:36:00.0`. */
  busId: string;
  /** The mode asked for (and, unless pending, now in force). */
  enabled: boolean;
  /** The change is recorded but not yet in effect (the driver could not reset the GPU). */
  pending: boolean;
  /**
   * The platform cannot reset the GPU (reason `Not Supported`, e.g. passthrough VMs): only a
   * reboot, or a reset where one is allowed, makes the change effective. False when the reset
   * was merely blocked by clients (`In use by another client`): stop them and retry.
   */
  rebootRequired: boolean;
  /** The driver's reason for a pending change (`Not Supported`, `In use by another client`). */
  reason: string | null;
}

/** What `classifyError` makes of a failure. */
export interface ClassifiedError {
  kind: GpuErrorKind;
  /** The driver's reason line, trimmed; '' for empty text. */
  line: string;
}

function lines(text: string): string[] {
  return text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '');
}

function int(s: string | undefined): number {
  return Number.parseInt(s ?? '', 10);
}

// "Successfully created GPU instance ID  2 on GPU  0 using profile MIG 3g.20gb (ID  9)":
// MIG User Guide (getting-started-with-mig, Creating GPU Instances / Instance Geometry),
// fixtures a100-40gb_cgi-*_mig-user-guide; R510 capture a100-pcie-40gb_cgi-3-2-1-1-success;
// R550 GH200 capture gh200-96gb_cgi-C-success-3x1g.24gb_kf-cuanschutz.
const CREATED_GI =
  /^Successfully created GPU instance ID\s+(\d+) on GPU\s+(\d+) using profile MIG\s+(\S+)\s+\(ID\s+(\d+)\)$/i;

// "Successfully created compute instance ID  0 on GPU  0 GPU instance ID  1 using profile MIG
// 1c.3g.20gb (ID  0)": R510 capture a100-pcie-40gb_cci-success_yokatayama-e-learning, GH200
// capture gh200-96gb_cgi-C-success-3x1g.24gb. The form without "ID n" after "compute instance"
// is the older one kept in the MIG User Guide (a100-40gb_cci-3x1c-on-3g_mig-user-guide).
const CREATED_CI =
  /^Successfully created compute instance(?: ID\s+(\d+))? on GPU\s+(\d+) GPU instance ID\s+(\d+) using profile MIG\s+(\S+)\s+\(ID\s+(\d+)\)$/i;

// MIG User Guide, Destroying GPU Instances: fixtures a100-40gb_dci_mig-user-guide
// ("Successfully destroyed compute instance ID  0 from GPU  0 GPU instance ID  1") and
// a100-40gb_dgi_mig-user-guide ("Successfully destroyed GPU instance ID  1 from GPU  0").
const DESTROYED_CI =
  /^Successfully destroyed compute instance ID\s+(\d+) from GPU\s+(\d+) GPU instance ID\s+(\d+)$/i;
const DESTROYED_GI = /^Successfully destroyed GPU instance ID\s+(\d+) from GPU\s+(\d+)$/i;

// "Enabled MIG Mode for GPU 00000000:36:00.0": MIG User Guide, Enable MIG Mode (fixture
// a100-40gb_mig-enable-success_mig-user-guide) and GH200 capture
// gh200-96gb_mig-enable-persistence-warning_kf-cuanschutz. "Disabled MIG Mode for GPU
// 00000000:01:00.0" (`-mig 0`): user captures on an H100 and an A100 found with the search
// index (find_string, file ids 26030154796 and 19077137222; repositories not named there).
const MODE_SET = /^(Enabled|Disabled) MIG Mode for GPU ([0-9A-Fa-f]+:[0-9A-Fa-f]+:[0-9A-Fa-f]+\.[0-9A-Fa-f]+)$/;

// "Warning: MIG mode is in pending enable state for GPU 00000000:00:03.0:Not Supported", then
// "Reboot the system or try nvidia-smi --gpu-reset ...": MIG User Guide, GPU Reset on Ampere
// (fixture a100_mig-enable-pending-not-supported_mig-user-guide). With ":In use by another
// client" and a "... is currently being used by one or more other processes ..." line: MIG User
// Guide, Driver Clients (fixture a100_mig-enable-pending-in-use_mig-user-guide); the same form
// in NVIDIA/gpu-operator#1845 (A100, driver 580.65.06). The "pending disable" wording is assumed
// by symmetry: no capture of it was found.
const MODE_PENDING =
  /^Warning: MIG mode is in pending (enable|disable) state for GPU ([0-9A-Fa-f]+:[0-9A-Fa-f]+:[0-9A-Fa-f]+\.[0-9A-Fa-f]+):\s*(.+)$/i;

/**
 * GPU instances reported as created by `nvidia-smi mig -cgi` (with or without `-C`), in the
 * order printed. Lines of other forms (CI lines, failures, "All done.") are skipped.
 */
export function parseCreatedGpuInstances(text: string): CreatedGpuInstance[] {
  const out: CreatedGpuInstance[] = [];
  for (const l of lines(text)) {
    const m = CREATED_GI.exec(l);
    if (m === null) continue;
    out.push({ gpu: int(m[2]), instanceId: int(m[1]), profile: m[3] ?? '', profileId: int(m[4]) });
  }
  return out;
}

/**
 * Compute instances reported as created by `nvidia-smi mig -cci` or `mig -cgi ... -C`, in the
 * order printed. Lines of other forms are skipped.
 */
export function parseCreatedComputeInstances(text: string): CreatedComputeInstance[] {
  const out: CreatedComputeInstance[] = [];
  for (const l of lines(text)) {
    const m = CREATED_CI.exec(l);
    if (m === null) continue;
    out.push({
      gpu: int(m[2]),
      gpuInstanceId: int(m[3]),
      instanceId: m[1] === undefined ? null : int(m[1]),
      profile: m[4] ?? '',
      profileId: int(m[5]),
    });
  }
  return out;
}

/**
 * GPU and compute instances reported as destroyed by `nvidia-smi mig -dgi` / `mig -dci`, in the
 * order printed. Lines of other forms are skipped.
 */
export function parseDestroyed(text: string): DestroyedInstance[] {
  const out: DestroyedInstance[] = [];
  for (const l of lines(text)) {
    const ci = DESTROYED_CI.exec(l);
    if (ci !== null) {
      out.push({
        kind: 'compute-instance',
        gpu: int(ci[2]),
        gpuInstanceId: int(ci[3]),
        computeInstanceId: int(ci[1]),
      });
      continue;
    }
    const gi = DESTROYED_GI.exec(l);
    if (gi !== null) {
      out.push({ kind: 'gpu-instance', gpu: int(gi[2]), gpuInstanceId: int(gi[1]), computeInstanceId: null });
    }
  }
  return out;
}

/**
 * Per-GPU outcome of `nvidia-smi -mig 0|1`: changes in force and changes left pending. GPUs that
 * refused outright ("Unable to enable MIG Mode for GPU ...: Not Supported") are not listed; see
 * `classifyError`.
 */
export function parseMigModeChange(text: string): MigModeChange[] {
  const out: MigModeChange[] = [];
  for (const l of lines(text)) {
    const set = MODE_SET.exec(l);
    if (set !== null) {
      out.push({ busId: set[2] ?? '', enabled: set[1] === 'Enabled', pending: false, rebootRequired: false, reason: null });
      continue;
    }
    const pending = MODE_PENDING.exec(l);
    if (pending !== null) {
      const reason = (pending[3] ?? '').trim();
      out.push({
        busId: pending[2] ?? '',
        enabled: (pending[1] ?? '').toLowerCase() === 'enable',
        pending: true,
        rebootRequired: /not supported/i.test(reason),
        reason,
      });
    }
  }
  return out;
}

/** The outcome of `nvidia-smi -r` (`--gpu-reset`). */
export interface ResetResult {
  /** Bus IDs reported as reset. */
  reset: string[];
  /** GPUs that could not be reset, with the driver's reason (`In use by another client`). */
  blocked: Array<{ busId: string; reason: string }>;
}

// "GPU 00000000:1A:00.0 was successfully reset.": NVIDIA/NVSentinel#1692 (fixture
// h100_gpu-reset-success_nvsentinel-1692). Blocked GPUs are listed under "The following GPUs
// could not be reset:" as "GPU <bus>: <reason>": NVIDIA/mig-parted#181.
const RESET_OK = /^GPU (\S+) was successfully reset\.?$/i;
const RESET_BLOCKED = /^GPU ([0-9A-Fa-f]+:[0-9A-Fa-f]+:[0-9A-Fa-f]+\.[0-9A-Fa-f]+):\s*(.+)$/;

/** GPUs reset and GPUs whose reset was refused, from the text of `nvidia-smi -r`. */
export function parseReset(text: string): ResetResult {
  const result: ResetResult = { reset: [], blocked: [] };
  let inBlockedList = false;
  for (const l of lines(text)) {
    const ok = RESET_OK.exec(l);
    if (ok !== null) {
      result.reset.push(ok[1] ?? '');
      continue;
    }
    if (/could not be reset:?$/i.test(l)) {
      inBlockedList = true;
      continue;
    }
    const blocked = inBlockedList ? RESET_BLOCKED.exec(l) : null;
    if (blocked !== null) result.blocked.push({ busId: blocked[1] ?? '', reason: (blocked[2] ?? '').trim() });
    else inBlockedList = false;
  }
  return result;
}

interface Rule {
  kind: GpuErrorKind;
  test: RegExp;
  /** Picks the reason line given all lines and the index of the first match; default: that line. */
  pick?: (all: readonly string[], at: number) => string | undefined;
}

// Checked in this order; the first rule with a matching line wins, so a pending-mode warning or
// a blocked reset, which quote "In use by another client", are not taken for plain 'in-use'.
const RULES: readonly Rule[] = [
  // shine-cluster#50 (fixture unknown_driver-not-loaded_shine-cluster-50); the same thread, after
  // a reinstall, shows "Failed to initialize NVML: Driver/library version mismatch".
  { kind: 'driver-not-loaded', test: /NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver/i },
  { kind: 'driver-not-loaded', test: /^Failed to initialize NVML: Driver\/library version mismatch/i },
  // "Unable to determine the device handle for GPU 0000:0B:00.0: Unknown Error" and its other
  // forms: a GPU that no longer answers (see notices.ts for the captures).
  { kind: 'gpu-lost', test: /^Unable to determine the device handle for GPU/i },
  // MODE_PENDING sources above.
  { kind: 'mode-change-pending', test: /^Warning: MIG mode is in pending (enable|disable) state/i },
  // "The following GPUs could not be reset:" then "  GPU 00000000:01:00.0: In use by another
  // client" per GPU: NVIDIA/mig-parted#181 (fixture multi-a100_gpu-reset-in-use_mig-parted-181),
  // NVIDIA/NVSentinel#1692. The per-GPU line is the reason line.
  {
    kind: 'reset-blocked',
    test: /could not be reset/i,
    pick: (all, at) => all.slice(at + 1).find((l) => /^GPU \S+: /i.test(l)),
  },
  // "Unable to create a GPU instance on GPU  0 using profile 9: Insufficient Resources" / "Failed
  // to create GPU instances: Insufficient Resources": MIG User Guide, Instance Geometry
  // (a100-40gb_cgi-insufficient-resources-3g-not-first), GH200 gh200-96gb_cgi-C-insufficient-resources.
  { kind: 'insufficient-resources', test: /:\s*Insufficient Resources$/i },
  // "Failed to display compute instances: Insufficient Permissions": Project-HAMi/HAMi#1044.
  { kind: 'no-permission', test: /:\s*Insufficient Permissions$/i },
  // "Unable to enable MIG Mode for GPU 00000000:18:00.0: Not Supported" then "Treating as warning
  // and moving on.": user captures on an RTX A5000 vGPU host and an RTX PRO 6000 Blackwell
  // (driver 580.65.06) found with find_string (file ids 3068435335, 65875275510); "No
  // MIG-supported devices found." from the latter. "Resetting GPU 00000000:00:03.0 is not
  // supported.": MIG User Guide (fixture a100_gpu-reset-not-supported_mig-user-guide).
  { kind: 'not-supported', test: /:\s*Not Supported$/i },
  { kind: 'not-supported', test: /^Resetting GPU \S+ is not supported\.?$/i },
  { kind: 'not-supported', test: /^No MIG-supported devices found/i },
  // "No MIG-enabled devices found." (`nvidia-smi mig -lgi` with MIG mode off): quoted by several
  // public scripts and notes found with find_string (e.g. file ids 335371683, 22551222574).
  // "No compute instances found: Not Found": a100-pcie-40gb_lci-no-compute-instances.
  { kind: 'not-found', test: /^No MIG-enabled devices found/i },
  // "No devices were found": what nvidia-smi prints for an -i that matches no GPU (and on a
  // machine without GPUs), as NVIDIA's forums and many public CI logs show.
  { kind: 'not-found', test: /^No devices were found/i },
  { kind: 'not-found', test: /:\s*Not Found$/i },
  // "Invalid combination of input arguments.": what older drivers print for `nvidia-smi mig`
  // options they do not know, as a test helper found with find_string (file id 335371683)
  // checks for it. NVML's own text for NVML_ERROR_INVALID_ARGUMENT is "Invalid Argument".
  { kind: 'invalid-argument', test: /^Invalid combination of input arguments/i },
  { kind: 'invalid-argument', test: /:\s*Invalid Argument$/i },
  // "Unable to create a GPU instance on GPU  0 using profile 20: In use by another client":
  // gh200-96gb_cgi-C-in-use-by-another-client; "unable to destroy compute instance id  0 from
  // gpu  0 gpu instance id  3: in use by another client": NVIDIA/DCGM#95 (lower-cased as posted).
  { kind: 'in-use', test: /:\s*In use by another client$/i },
];

/**
 * Classifies the text of a failed (or partly failed) nvidia-smi command by the driver's reason
 * line: the first line that names a known reason, the more specific reasons first
 * (`mode-change-pending` and `reset-blocked` before the `In use by another client` they quote).
 * For a blocked reset the line is the first per-GPU reason line. Matching ignores case. Text with
 * no known reason gives `unknown` with its first line other than "All done.".
 */
export function classifyError(text: string): ClassifiedError {
  const all = lines(text);
  for (const rule of RULES) {
    const at = all.findIndex((l) => rule.test.test(l));
    if (at < 0) continue;
    return { kind: rule.kind, line: rule.pick?.(all, at) ?? all[at] ?? '' };
  }
  return { kind: 'unknown', line: all.find((l) => !/^All done\.?$/i.test(l)) ?? '' };
}
