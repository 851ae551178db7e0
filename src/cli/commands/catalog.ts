import type { Command } from 'commander';
import { ciProfilesOf } from '../../mig/compute-instances.js';
import { GPU_MODELS, resolveGpuModel } from '../../mig/catalog/index.js';
import { formatPlacementList } from '../../mig/placement-text.js';
import type { GiProfile, GpuModel } from '../../mig/types.js';
import { writeJson, type Io } from '../io.js';
import { orUnknown, renderTable } from '../table.js';

function gpuJson(m: GpuModel) {
  return {
    name: m.name,
    architecture: m.architecture,
    productNames: m.productNames,
    pciDeviceIds: m.pciDeviceIds,
    aliases: m.aliases,
    memoryGB: m.memoryGB,
    sms: m.sms,
    computeSlices: m.computeSlices,
    memorySlices: m.memorySlices,
    placementUnits: m.placementUnits,
    profiles: m.giProfiles.map((p) => p.name),
    sources: m.sources,
    caveats: m.caveats ?? [],
  };
}

function profileJson(p: GiProfile) {
  return {
    name: p.name,
    id: p.id,
    computeSlices: p.computeSlices,
    memorySlices: p.memorySlices,
    memoryGiB: p.memoryGiB,
    sms: p.sms,
    copyEngines: p.copyEngines,
    decoders: p.decoders,
    encoders: p.encoders,
    jpeg: p.jpeg,
    ofa: p.ofa,
    maxCount: p.maxCount,
    placements: p.placements.map((pl) => ({ start: pl.start, size: pl.size })),
    computeInstanceProfiles: ciProfilesOf(p),
    sinceDriver: p.sinceDriver ?? null,
    unverified: p.unverified,
  };
}

/** `migpool gpus`: the catalogue, one line per GPU family. */
export function registerGpus(program: Command, io: Io): void {
  program
    .command('gpus')
    .description('list the MIG-capable GPUs migpool knows, one line per MIG geometry')
    .option('--json', 'print JSON')
    .action((opts: { json?: boolean }) => {
      if (opts.json) return writeJson(io, { gpus: GPU_MODELS.map(gpuJson) });
      const rows = GPU_MODELS.map((m) => [
        m.name,
        m.architecture,
        `${m.memoryGB}GB`,
        orUnknown(m.sms),
        `${m.computeSlices}/${m.memorySlices}`,
        String(m.giProfiles.length),
        m.pciDeviceIds.join(','),
        m.productNames[0] ?? '',
      ]);
      io.out(renderTable(['GPU', 'ARCH', 'MEMORY', 'SMS', 'SLICES(C/M)', 'PROFILES', 'PCI IDS', 'NVIDIA-SMI NAME'], rows));
    });
}

/** `migpool profiles --gpu MODEL`: every GI profile of a GPU with its facts and CI profiles. */
export function registerProfiles(program: Command, io: Io): void {
  program
    .command('profiles')
    .description('list the GPU instance profiles of a GPU (IDs, memory, SMs, engines, placements)')
    .requiredOption('--gpu <model>', 'GPU: product name, PCI ID (0x20B010DE) or short name (A100-SXM4-40GB)')
    .option('--json', 'print JSON')
    .action((opts: { gpu: string; json?: boolean }) => {
      const model = resolveGpuModel(opts.gpu);
      if (opts.json) return writeJson(io, { gpu: model.name, profiles: model.giProfiles.map(profileJson) });
      const rows = model.giProfiles.map((p) => [
        p.name,
        orUnknown(p.id),
        orUnknown(p.memoryGiB),
        orUnknown(p.sms),
        [p.copyEngines, p.decoders, p.encoders, p.jpeg, p.ofa].map(orUnknown).join('/'),
        String(p.maxCount),
        formatPlacementList(p.placements),
        ciProfilesOf(p)
          .map((c) => c.name)
          .join(' '),
        p.unverified.length > 0 ? `by analogy: ${p.unverified.join(',')}` : '',
      ]);
      io.out(`${model.name} (${model.productNames.join(', ')}): ${model.computeSlices} compute slices, ${model.memorySlices} memory slices`);
      io.out(renderTable(['PROFILE', 'ID', 'GIB', 'SMS', 'CE/DEC/ENC/JPG/OFA', 'MAX', 'PLACEMENTS', 'COMPUTE INSTANCES', 'NOTE'], rows));
      for (const c of model.caveats ?? []) io.out(`note: ${c}`);
    });
}
