import { badInput } from '../errors.js';
import { findGiProfile, normalizeProfileName } from '../mig/catalog/index.js';
import { ciProfilesOf } from '../mig/compute-instances.js';
import type { CiProfile, GiProfile, GpuModel } from '../mig/types.js';
import type { DesiredGroup } from './state.js';

/**
 * Resolves a `mig-devices` map (`{"1g.5gb": 2, "1c.3g.20gb": 3}`) on one GPU model into the GPU
 * instances to create, each with its compute instances. A plain profile is a GPU instance with
 * one full-size compute instance; `Nc.<gi>` names a compute instance inside a GPU instance of
 * profile `<gi>`, and such CIs share GPU instances as mig-parted shares them (it reuses the last
 * GPU instance of the same profile while CIs still fit: pkg/mig/config/config.go SetMigConfig),
 * here packed first-fit from the largest. `where` names the config entry in messages.
 */
export function resolveMigDevices(model: GpuModel, migDevices: Readonly<Record<string, number>>, where: string): DesiredGroup[] {
  const byGi = new Map<string, { gi: GiProfile; cis: CiProfile[] }>();
  for (const [key, count] of Object.entries(migDevices)) {
    if (!Number.isInteger(count) || count < 0) throw badInput(`${where}: count of '${key}' must be a whole number >= 0, got ${count}`);
    if (count === 0) continue;
    const name = normalizeProfileName(key);
    const ciMatch = /^(\d+)c\.(.+)$/.exec(name);
    let gi: GiProfile;
    try {
      gi = findGiProfile(model, ciMatch ? (ciMatch[2] ?? '') : name);
    } catch (e) {
      throw badInput(`${where}: ${(e as Error).message}`);
    }
    const options = ciProfilesOf(gi);
    const ci = ciMatch ? options.find((c) => c.name === name) : options.find((c) => c.isDefault);
    if (!ci) {
      throw badInput(`${where}: '${key}' is not a compute instance profile of ${gi.name} on ${model.name}; it offers ${options.map((o) => o.name).join(', ')}`);
    }
    const entry = byGi.get(gi.name) ?? { gi, cis: [] };
    for (let k = 0; k < count; k++) entry.cis.push(ci);
    byGi.set(gi.name, entry);
  }
  const groups: DesiredGroup[] = [];
  for (const { gi, cis } of byGi.values()) {
    const open: { cis: CiProfile[]; used: number }[] = [];
    for (const ci of [...cis].sort((a, b) => b.computeSlices - a.computeSlices)) {
      const fits = open.find((g) => g.used + ci.computeSlices <= gi.computeSlices && g.cis.filter((c) => c.name === ci.name).length < ci.maxCount);
      if (fits) {
        fits.cis.push(ci);
        fits.used += ci.computeSlices;
      } else {
        open.push({ cis: [ci], used: ci.computeSlices });
      }
    }
    for (const g of open) groups.push({ gi, cis: g.cis });
  }
  return groups;
}
