import { badInput } from '../../errors.js';
import type { GiProfile, GpuModel } from '../types.js';
import { A100_40GB, A100_80GB, A30 } from './ampere.js';
import { B200, B300, GB200, GB300, RTX_PRO_6000 } from './blackwell.js';
import { GH200_144GB, H100_80GB, H100_96GB, H100_NVL, H100_PCIE, H20, H200 } from './hopper.js';

/** Memory slices of each profile from its placement size, on the model's placement scale. */
function finalize(model: GpuModel): GpuModel {
  const unitsPerSlice = model.placementUnits / model.memorySlices;
  return {
    ...model,
    giProfiles: model.giProfiles.map((p) => ({ ...p, memorySlices: (p.placements[0]?.size ?? 0) / unitsPerSlice })),
  };
}

/** Every MIG-capable GPU family NVIDIA's default mig-parted config targets, one entry per geometry. */
export const GPU_MODELS: readonly GpuModel[] = [
  A30,
  A100_40GB,
  A100_80GB,
  H100_80GB,
  H100_PCIE,
  H100_NVL,
  H100_96GB,
  H20,
  H200,
  GH200_144GB,
  B200,
  GB200,
  B300,
  GB300,
  RTX_PRO_6000,
].map(finalize);

/** `NVIDIA A100-SXM4-40GB`, `a100 sxm4 40gb` and `A100_SXM4_40GB` all become `A100-SXM4-40GB`. */
function normalizeName(text: string): string {
  return text
    .trim()
    .toUpperCase()
    .replace(/^NVIDIA[\s_-]+/, '')
    .replace(/[\s_-]+/g, '-');
}

function namesOf(model: GpuModel): string[] {
  return [model.name, ...model.aliases, ...model.productNames].map(normalizeName);
}

/**
 * A PCI ID as mig-parted writes it (`0x20B010DE`), optionally with a `:0xSSSSVVVV` subsystem, or
 * the bare device ID as lspci prints it (`0x20B0`).
 */
const PCI_ID = /^0X([0-9A-F]{4})(?:10DE)?(?::0X[0-9A-F]{8})?$/;

/**
 * Finds the GPU family a user or nvidia-smi names: a product name as nvidia-smi prints it, a PCI
 * device ID (`0x20B010DE`), the canonical name or a short alias, case-insensitive. A prefix such as
 * `A100` that matches families of different geometry is an error listing them.
 */
export function resolveGpuModel(input: string): GpuModel {
  const text = input.trim();
  const pci = PCI_ID.exec(text.toUpperCase());
  if (pci) {
    const id = `0x${pci[1]}10DE`;
    const model = GPU_MODELS.find((m) => m.pciDeviceIds.some((p) => p.toUpperCase() === id.toUpperCase()));
    if (!model) {
      throw badInput(`unknown GPU PCI ID '${input}': no MIG-capable GPU has device ID ${pci[1]}; run 'migpool gpus' for the catalogue`);
    }
    return model;
  }
  const wanted = normalizeName(text);
  const exact = GPU_MODELS.filter((m) => namesOf(m).includes(wanted));
  if (exact.length === 1 && exact[0]) return exact[0];
  const byPrefix = exact.length > 1 ? exact : GPU_MODELS.filter((m) => namesOf(m).some((n) => n.startsWith(`${wanted}-`)));
  if (byPrefix.length === 1 && byPrefix[0]) return byPrefix[0];
  if (byPrefix.length > 1) {
    throw badInput(
      `GPU '${input}' is ambiguous: it could be ${byPrefix.map((m) => m.name).join(', ')}, whose MIG geometry differs; name one of them`,
    );
  }
  throw badInput(`unknown GPU '${input}': use one of ${GPU_MODELS.map((m) => m.name).join(', ')} (or a product name or PCI ID; see 'migpool gpus')`);
}

/** Normalises a profile as users and nvidia-smi write it: `MIG 1g.5gb` -> `1g.5gb`. */
export function normalizeProfileName(text: string): string {
  return text.trim().replace(/^MIG\s+/i, '').toLowerCase();
}

/**
 * The GI profile of `model` named `name` (`1g.5gb`, `MIG 1g.5gb`) or with NVML profile ID `name`
 * (`19`). Unknown names are an error that says which GPUs do offer the profile and what this one
 * offers instead.
 */
export function findGiProfile(model: GpuModel, name: string): GiProfile {
  const wanted = normalizeProfileName(name);
  const found = /^\d+$/.test(wanted)
    ? model.giProfiles.find((p) => p.id === Number(wanted))
    : model.giProfiles.find((p) => p.name === wanted);
  if (found) return found;
  const offered = model.giProfiles.map((p) => p.name).join(', ');
  const elsewhere = GPU_MODELS.filter((m) => m.giProfiles.some((p) => p.name === wanted)).map((m) => m.name);
  const belongs = elsewhere.length > 0 ? ` (it is a profile of ${elsewhere.join(', ')})` : '';
  throw badInput(`profile '${name}' is not offered by ${model.name}${belongs}; ${model.name} offers ${offered}`);
}
