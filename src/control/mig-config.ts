import { matchEntries, type MigConfigEntry } from '../partition/config.js';
import { resolveMigDevices } from '../partition/desired.js';
import type { ExportGpu } from '../partition/export.js';
import { migDeviceCounts, type DesiredGpu } from '../partition/state.js';
import type { FoundGpu } from './state-reader.js';

/**
 * What each GPU should become under a selected mig-parted config: which entry applies to which
 * GPU (mig-parted's rules, plus UUIDs), its mig-devices resolved on that GPU's model. A config that
 * selects no GPU here is an error (matchEntries), not a silent success.
 */
export function desiredStates(found: readonly FoundGpu[], entries: readonly MigConfigEntry[], file: string, name: string): Map<number, DesiredGpu> {
  const match = matchEntries(
    entries,
    found.map((g) => ({ index: g.info.index, uuid: g.info.uuid, pciDeviceId: g.info.pciDeviceId, migCapable: g.current !== null })),
    { file, configName: name },
  );
  const desired = new Map<number, DesiredGpu>();
  for (const a of match.assignments) {
    const gpu = found.find((g) => g.info.index === a.gpu.index);
    if (!gpu?.current) continue;
    const where = `${file}:${a.entry.line} (config '${name}', GPU ${a.gpu.index})`;
    desired.set(a.gpu.index, a.entry.migEnabled ? { migEnabled: true, groups: resolveMigDevices(gpu.current.model, a.entry.migDevices, where) } : { migEnabled: false, groups: [] });
  }
  return desired;
}

/**
 * How the GPUs differ from what they should be, one line per GPU, as mig-parted's assert compares
 * them: MIG mode (current and pending), then the MIG devices counted per profile. Empty when applied.
 */
export function assertDifferences(found: readonly FoundGpu[], desired: ReadonlyMap<number, DesiredGpu>, modeOnly: boolean): string[] {
  const differences: string[] = [];
  for (const [index, want] of desired) {
    const gpu = found.find((g) => g.info.index === index);
    const mode = gpu?.info.migMode;
    const wantMode = want.migEnabled ? 'enabled' : 'disabled';
    if (!mode || mode.current !== wantMode || mode.pending !== wantMode) {
      differences.push(`GPU ${index}: MIG mode is ${mode ? `${mode.current} (pending ${mode.pending})` : 'unknown'}, want ${wantMode}`);
      continue;
    }
    if (modeOnly || !want.migEnabled) continue;
    const have = migDeviceCounts(gpu?.current?.instances ?? []);
    const wanted = migDeviceCounts(want.groups.map((g) => ({ computeInstances: g.cis.map((c) => ({ profile: c.name })) })));
    const keys = [...new Set([...Object.keys(have), ...Object.keys(wanted)])].sort();
    const diff = keys.filter((k) => (have[k] ?? 0) !== (wanted[k] ?? 0)).map((k) => `${k}: ${have[k] ?? 0} (want ${wanted[k] ?? 0})`);
    if (diff.length > 0) differences.push(`GPU ${index}: ${diff.join(', ')}`);
  }
  return differences;
}

/** The GPUs as `export` sees them: MIG mode and the instances counted as mig-parted counts them. */
export function exportGpusOf(found: readonly FoundGpu[]): ExportGpu[] {
  return found.map((g) => ({
    index: g.info.index,
    uuid: g.info.uuid,
    pciDeviceId: g.info.pciDeviceId,
    productName: g.info.name,
    migEnabled: g.info.migMode?.current === 'enabled',
    migDevices: g.current && g.info.migMode?.current === 'enabled' ? migDeviceCounts(g.current.instances) : {},
  }));
}
