/**
 * Lines nvidia-smi prints beside an answer, about one GPU, that are not part of the answer: a GPU
 * that no longer answers the driver (the other GPUs are still listed) and the corrupted-infoROM
 * warning (the listing is whole). Both come with a non-zero exit status, which NVIDIA documents
 * (GPU Operator troubleshooting, "infoROM is corrupted (nvidia-smi return code 14)", quoting
 * nvidia-smi's RETURN VALUE list: "Return code 14 - infoROM is corrupted", "Return code 15 - The
 * GPU has fallen off the bus or has otherwise become inaccessible";
 * https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/23.3.1/troubleshootings.html).
 * Pure functions over the captured text.
 */
import { unreachableAdvice, unreachableGpuName } from '../port.js';

/** A GPU nvidia-smi names as not answering, with its reason as printed. */
export interface LostGpu {
  /** nvidia-smi's index, when the line names one (newer drivers: `GPU3: 0000:04:00.0`). */
  readonly index: number | null;
  /** PCI bus ID as printed (`0000:04:00.0`), when the line names one. */
  readonly busId: string | null;
  /** The driver's reason: `Unknown Error`, `GPU is lost. Reboot the system to recover this GPU`. */
  readonly reason: string;
  /** The whole line, to quote. */
  readonly line: string;
}

/** What `splitNotices` found, and the text without those lines. */
export interface Notices {
  readonly lost: readonly LostGpu[];
  /** Warnings that leave the answer whole (`WARNING: infoROM is corrupted at gpu 0000:0B:00.0`). */
  readonly warnings: readonly string[];
  /** The text with the notice lines taken out. */
  readonly rest: string;
}

const BUS = '[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\\.[0-9A-Fa-f]';

// "Unable to determine the device handle for GPU ..." in its printed forms, each from a real capture:
// - "GPU 0000:0B:00.0: Unknown Error": NVIDIA/open-gpu-kernel-modules#387 (a GPU fallen off the
//   bus, driver 520.61.05), NVIDIA/nvidia-docker#1553;
// - "GPU0000:20:00.0: Unknown Error" (no blank): cihlab/fics-cluster-guide#53,
//   pdbear/syno_nvidia_gpu_driver#22, NVIDIA/nvidia-container-toolkit#69;
// - "GPU3: 0000:04:00.0: Unknown Error" (index, then bus): an 8-GPU `--query-gpu=index,pci.bus_id,
//   name --format=csv,noheader` capture where the 7 other GPUs were still listed (search index,
//   find_string file id 65929732340), and "GPU1: 0000:44:00.0: Unknown Error" (file id 62535341301);
// - "GPU2: Unknown Error" (index only): file id 67259717826;
// - "GPU 0000:02:00.0: GPU is lost. Reboot the system to recover this GPU": JosephKJ/OWOD#81.
const LOST_BY_BUS = new RegExp(`^Unable to determine the device handle for GPU\\s*(${BUS}):\\s*(.+)$`, 'i');
const LOST_BY_INDEX = new RegExp(`^Unable to determine the device handle for GPU\\s*(\\d+):\\s*(?:(${BUS}):\\s*)?(.+)$`, 'i');

// "WARNING: infoROM is corrupted at gpu 0000:0B:00.0" after a whole listing, exit status 14: the
// GPU Operator troubleshooting page above (driver 470.82.01); the same line in several public
// captures found with find_string (file ids 6186493108, 7162708867).
const INFOROM = new RegExp(`^WARNING: infoROM is corrupted at gpu\\s+${BUS}$`, 'i');

/** Reads one "Unable to determine the device handle" line, or null for any other line. */
export function parseLostGpuLine(line: string): LostGpu | null {
  const l = line.trim();
  const bus = LOST_BY_BUS.exec(l);
  if (bus !== null) return { index: null, busId: bus[1] ?? null, reason: (bus[2] ?? '').trim(), line: l };
  const ix = LOST_BY_INDEX.exec(l);
  if (ix !== null) return { index: Number(ix[1]), busId: ix[2] ?? null, reason: (ix[3] ?? '').trim(), line: l };
  return null;
}

/** Takes the lost-GPU lines and the corrupted-infoROM warnings out of nvidia-smi's text. */
export function splitNotices(text: string): Notices {
  const lost: LostGpu[] = [];
  const warnings: string[] = [];
  const kept: string[] = [];
  for (const raw of text.split(/\r?\n/)) {
    const g = parseLostGpuLine(raw);
    if (g !== null) lost.push(g);
    else if (INFOROM.test(raw.trim())) warnings.push(raw.trim());
    else kept.push(raw);
  }
  return { lost, warnings, rest: kept.join('\n') };
}

/**
 * Takes the corrupted-infoROM warnings out of one stream of a command's output. nvidia-smi exits
 * 14 for them though it did what it was asked (the GPU Operator capture above prints the whole
 * table), so a status of 14 with such a warning counts as success.
 */
export function dropInfoRomWarnings(stdout: string, stderr: string, code: number): { stdout: string; stderr: string; code: number; warnings: string[] } {
  const warnings: string[] = [];
  const drop = (text: string): string =>
    text
      .split(/(?<=\n)/)
      .filter((l) => {
        if (!INFOROM.test(l.trim())) return true;
        warnings.push(l.trim());
        return false;
      })
      .join('');
  const out = drop(stdout);
  const err = drop(stderr);
  return { stdout: out, stderr: err, code: code === INFOROM_EXIT_STATUS && warnings.length > 0 ? 0 : code, warnings };
}

/** nvidia-smi's exit status for a corrupted infoROM ("Return code 14 - infoROM is corrupted", the GPU Operator page above). */
const INFOROM_EXIT_STATUS = 14;

/** One line for people: which GPUs do not answer, the driver's reason, and what to do (gpu/port.ts unreachableAdvice). */
export function describeLost(lost: readonly LostGpu[]): string {
  const which = lost.map((g) => `${unreachableGpuName(g)}: ${g.reason}`).join('; ');
  return `nvidia-smi cannot reach ${which} (${unreachableAdvice(lost)})`;
}
