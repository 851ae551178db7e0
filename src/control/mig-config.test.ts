import { readFileSync } from 'node:fs';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MigpoolError } from '../errors.js';
import { SimulatedGpuPort } from '../gpu/simulated/driver.js';
import { SimulatedMachine } from '../gpu/simulated/machine.js';
import { parseSimulateSpec } from '../gpu/simulated/spec.js';
import { GPU_MODELS } from '../mig/catalog/index.js';
import { parseMigPartedConfig, selectConfig } from '../partition/config.js';
import { executePlans, planAll } from './apply.js';
import { JournalFile } from './journal.js';
import { assertDifferences, desiredStates } from './mig-config.js';
import { readCurrentState } from './state-reader.js';

const FILE = 'test/fixtures/mig-parted/config-default.yaml';
const config = parseMigPartedConfig(readFileSync(new URL(`../../${FILE}`, import.meta.url), 'utf8'), FILE);
/** Configs of profiles that config-default.yaml names for no GPU (see catalog.test.ts). */
const UNASSIGNED = ['all-3g.95gb', 'all-4g.95gb', 'all-7g.189gb'];

describe("every config of mig-parted's config-default.yaml applies and asserts on each simulated GPU it is meant for", () => {
  const names = [...config.configs.keys()];

  it.each(names)('%s', async (name) => {
    const entries = selectConfig(config, name);
    const meantFor: string[] = [];
    for (const model of GPU_MODELS) {
      const port = new SimulatedGpuPort(SimulatedMachine.create(parseSimulateSpec(model.name)));
      const found = await readCurrentState(port);
      let desired;
      try {
        desired = desiredStates(found, entries, FILE, name);
      } catch (e) {
        // Not meant for this GPU: no entry selects it, or it names profiles the GPU lacks.
        expect(e).toBeInstanceOf(MigpoolError);
        expect((e as MigpoolError).code).toBe('BAD_INPUT');
        continue;
      }
      meantFor.push(model.name);
      const { plans, refusals } = planAll(found, desired, {});
      expect(refusals).toEqual([]);
      await executePlans(port, plans, name, new JournalFile(join(mkdtempSync(join(tmpdir(), 'mp-j-')), 'j.json')));
      expect(assertDifferences(await readCurrentState(port), desired, false)).toEqual([]);
    }
    if (UNASSIGNED.includes(name)) expect(meantFor).toEqual([]);
    else expect(meantFor.length).toBeGreaterThan(0);
    // Every GPU a device-filter names is among those the config applies to.
    for (const entry of entries) {
      for (const id of entry.deviceFilter ?? []) {
        const model = GPU_MODELS.find((m) => m.pciDeviceIds[0]?.toUpperCase() === id.toUpperCase());
        if (model) expect(meantFor, `${name} on ${model.name}`).toContain(model.name);
      }
    }
  });
});
