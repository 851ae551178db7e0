import type { Command } from 'commander';
import { badInput, MigpoolError } from '../../errors.js';
import { findGiProfile, resolveGpuModel } from '../../mig/catalog/index.js';
import { enumerateLayouts, multisetKey, placeProfiles, type PlacedInstance } from '../../mig/geometry.js';
import type { GiProfile, GpuModel } from '../../mig/types.js';
import { writeJson, type Io } from '../io.js';
import { renderTable } from '../table.js';

function placementJson(i: PlacedInstance) {
  return { profile: i.profile.name, start: i.start, size: i.size };
}

function placementText(instances: readonly PlacedInstance[]): string {
  return instances.map((i) => `${i.profile.name}@${i.start}:${i.size}`).join(' ');
}

/**
 * Reads profile arguments: `3g.20gb 2g.10gb`, `3g.20gb,2g.10gb`, counts as `2x1g.5gb`, profile IDs
 * as `nvidia-smi mig -cgi` takes them (`9,14`). A count above the profile's own maximum is bad
 * input (it can never fit); a combination that does not fit is a failed check, not an error.
 */
export function parseProfileArgs(model: GpuModel, args: readonly string[]): GiProfile[] {
  const tokens = args.flatMap((a) => a.split(',')).map((t) => t.trim()).filter((t) => t.length > 0);
  if (tokens.length === 0) throw badInput(`no profiles given: name at least one profile of ${model.name}, e.g. '${model.giProfiles[0]?.name}'`);
  const profiles: GiProfile[] = [];
  for (const token of tokens) {
    const m = /^(\d+)\s*[x*]\s*(.+)$/i.exec(token);
    const count = m ? Number(m[1]) : 1;
    const profile = findGiProfile(model, m ? (m[2] ?? '') : token);
    if (count < 1) throw badInput(`count in '${token}' must be at least 1`);
    if (count > profile.maxCount) {
      throw badInput(`'${token}': ${model.name} holds at most ${profile.maxCount} × ${profile.name}; ask for ${profile.maxCount} or fewer`);
    }
    for (let k = 0; k < count; k++) profiles.push(profile);
  }
  return profiles;
}

/** `migpool layouts --gpu MODEL [--maximal]`: every legal layout with one placement each. */
export function registerLayouts(program: Command, io: Io): void {
  program
    .command('layouts')
    .description('list the legal MIG layouts of a GPU, each with a concrete placement')
    .requiredOption('--gpu <model>', 'GPU: product name, PCI ID or short name')
    .option('--maximal', 'only layouts to which no further instance can be added')
    .option('--json', 'print JSON')
    .action((opts: { gpu: string; maximal?: boolean; json?: boolean }) => {
      const model = resolveGpuModel(opts.gpu);
      const layouts = enumerateLayouts(model, { maximal: opts.maximal === true });
      layouts.sort((a, b) => b.instances.length - a.instances.length || multisetKey(a.instances.map((i) => i.profile)).localeCompare(multisetKey(b.instances.map((i) => i.profile))));
      if (opts.json) {
        return writeJson(io, { gpu: model.name, layouts: layouts.map((l) => ({ placements: l.instances.map(placementJson) })) });
      }
      const rows = layouts.map((l, i) => [String(i + 1), multisetKey(l.instances.map((x) => x.profile)), placementText(l.instances)]);
      io.out(renderTable(['#', 'PROFILES', 'PLACEMENTS (profile@start:size)'], rows));
      io.out(`${layouts.length} ${opts.maximal ? 'maximal ' : ''}layouts of ${model.name}`);
    });
}

/** `migpool check --gpu MODEL PROFILE...`: exit 0 when the profiles can share one GPU, 1 if not. */
export function registerCheck(program: Command, io: Io): void {
  program
    .command('check')
    .description('check whether MIG profiles can share one GPU; print a placement or the reason not')
    .requiredOption('--gpu <model>', 'GPU: product name, PCI ID or short name')
    .argument('<profiles...>', 'profiles, e.g. 3g.20gb 2g.10gb 2x1g.5gb (names or profile IDs)')
    .option('--json', 'print JSON')
    .action((args: string[], opts: { gpu: string; json?: boolean }) => {
      const model = resolveGpuModel(opts.gpu);
      const profiles = parseProfileArgs(model, args);
      const outcome = placeProfiles(model, profiles);
      const sorted = outcome.valid ? [...outcome.placements].sort((a, b) => a.start - b.start) : [];
      if (opts.json) {
        writeJson(io, {
          gpu: model.name,
          valid: outcome.valid,
          placements: sorted.map(placementJson),
          ...(outcome.valid ? {} : { reason: outcome.reason }),
        });
      } else if (outcome.valid) {
        io.out(`ok: ${multisetKey(profiles)} fits on ${model.name}: ${placementText(sorted)}`);
      }
      if (!outcome.valid) {
        throw new MigpoolError('CHECK_FAILED', `${multisetKey(profiles)} does not fit on ${model.name}: ${outcome.reason}`, {
          quiet: opts.json === true,
        });
      }
    });
}
