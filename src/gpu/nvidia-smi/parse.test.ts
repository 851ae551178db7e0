import { readFileSync, readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { MigpoolError } from '../../errors.js';
import {
  parseCsvQuery,
  parseLci,
  parseLcip,
  parseLgi,
  parseLgip,
  parseLgipp,
  parseListGpus,
} from './parse.js';

const dir = new URL('../../../test/fixtures/nvidia-smi/', import.meta.url);
const fixture = (name: string): string => readFileSync(new URL(`${name}.txt`, dir), 'utf8');

function deviceErrorOf(f: () => unknown): MigpoolError {
  try {
    f();
  } catch (e) {
    if (e instanceof MigpoolError) return e;
    throw e;
  }
  throw new Error('expected a MigpoolError');
}

describe('fixtures', () => {
  it('every capture has a .src naming its source', () => {
    const files = readdirSync(dir);
    const txt = files.filter((f) => f.endsWith('.txt'));
    expect(txt.length).toBeGreaterThan(40);
    for (const f of txt) {
      const src = readFileSync(new URL(f.replace(/\.txt$/, '.src'), dir), 'utf8');
      expect(src, f).toMatch(/^source/m);
      expect(src, f).toMatch(/^command:/m);
    }
  });
});

describe('parseListGpus', () => {
  it('reads the pre-R470 MIG-GPU-<uuid>/<gi>/<ci> form (R450, 7x1g.5gb)', () => {
    const gpus = parseListGpus(fixture('a100-40gb_L-old-format-7x1g.5gb_nvidia-cloud-native-docs'));
    expect(gpus).toHaveLength(1);
    const [gpu] = gpus;
    expect(gpu?.index).toBe(0);
    expect(gpu?.name).toBe('A100-SXM4-40GB');
    expect(gpu?.uuid).toBe('GPU-4200ccc0-2667-d4cb-9137-f932c716232a');
    expect(gpu?.migDevices.map((d) => d.gpuInstanceId)).toEqual([7, 8, 9, 10, 11, 12, 13]);
    expect(gpu?.migDevices.every((d) => d.computeInstanceId === 0 && d.profile === '1g.5gb')).toBe(true);
    expect(gpu?.migDevices[3]).toEqual({
      index: 3,
      profile: '1g.5gb',
      gpuInstanceId: 10,
      computeInstanceId: 0,
      uuid: 'MIG-GPU-4200ccc0-2667-d4cb-9137-f932c716232a/10/0',
    });
  });

  it('reads a mixed pre-R470 geometry', () => {
    const [gpu] = parseListGpus(fixture('a100-40gb_L-old-format-mixed-3g-2g-1g_nvidia-cloud-native-docs'));
    expect(gpu?.migDevices.map((d) => [d.profile, d.gpuInstanceId, d.computeInstanceId])).toEqual([
      ['3g.20gb', 2, 0],
      ['2g.10gb', 3, 0],
      ['1g.5gb', 9, 0],
    ]);
  });

  it('reads eight GPUs with the padded R470+ form, indented as the guide prints it', () => {
    const gpus = parseListGpus(fixture('a100-40gb_L-r470-8gpu_mig-user-guide'));
    expect(gpus.map((g) => g.index)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(gpus.map((g) => g.migDevices.length)).toEqual([7, 3, 2, 1, 6, 1, 3, 3]);
    expect(gpus[4]?.migDevices.every((d) => d.profile === '1c.3g.20gb')).toBe(true);
    expect(gpus[6]?.migDevices.map((d) => d.profile)).toEqual(['1c.7g.40gb', '2c.7g.40gb', '3c.7g.40gb']);
    expect(gpus[7]?.migDevices.map((d) => d.profile)).toEqual(['4g.20gb', '2g.10gb', '1g.5gb']);
    expect(gpus[7]?.uuid).toBe('GPU-95fac899-e21a-0e44-b0fc-e4e3bf106feb');
    expect(gpus[0]?.migDevices[6]).toEqual({
      index: 6,
      profile: '1g.5gb',
      gpuInstanceId: null,
      computeInstanceId: null,
      uuid: 'MIG-7df6b45c-a92d-5e09-8540-a6b389968c31',
    });
  });

  it('reads the R510 form with an "NVIDIA " product name', () => {
    const [gpu] = parseListGpus(fixture('a100-pcie-40gb_L-r510_yokatayama-e-learning'));
    expect(gpu?.name).toBe('NVIDIA A100-PCIE-40GB');
    expect(gpu?.migDevices).toEqual([
      {
        index: 0,
        profile: '1g.5gb',
        gpuInstanceId: null,
        computeInstanceId: null,
        uuid: 'MIG-b6cd45f2-9655-5269-9b96-65446729d5dc',
      },
    ]);
  });

  it('reads the single-spaced MIG-<uuid> form of the guide', () => {
    const [gpu] = parseListGpus(fixture('a100-40gb_L-single-space-new-uuid_mig-user-guide'));
    expect(gpu?.migDevices.map((d) => [d.index, d.profile, d.uuid])).toEqual([
      [0, '3g.20gb', 'MIG-c7384736-a75d-5afc-978f-d2f1294409fd'],
      [1, '3g.20gb', 'MIG-a28ad590-3fda-56dd-84fc-0a0b96edc58d'],
    ]);
  });

  it('reads GH200 (R550) and H100 per-CI devices (R570)', () => {
    const [gh] = parseListGpus(fixture('gh200-96gb_L-with-mig_kf-cuanschutz'));
    expect(gh?.name).toBe('NVIDIA GH200 480GB');
    expect(gh?.migDevices.map((d) => d.profile)).toEqual(['1g.24gb', '1g.24gb', '1g.24gb', '1g.12gb']);
    const [h100] = parseListGpus(fixture('h100-80gb_L-r570-compute-instances_mig-user-guide'));
    expect(h100?.name).toBe('NVIDIA H100 80GB HBM3');
    expect(h100?.migDevices.map((d) => d.profile)).toEqual([
      '1c.3g.40gb',
      '1c.3g.40gb',
      '1c.3g.40gb',
      '1g.10gb',
      '1g.10gb',
    ]);
    expect(h100?.migDevices[4]?.uuid).toBe('MIG-c71dc464-b9f9-5611-9d29-d601a47cffd6');
  });

  it('gives [] for empty output', () => {
    expect(parseListGpus('')).toEqual([]);
  });

  it('throws DEVICE naming the command and quoting the line', () => {
    const e = deviceErrorOf(() => parseListGpus('GPU 0: A100 (UUID: GPU-1)\n  MIG 1g.5gb Device zero\n'));
    expect(e.code).toBe('DEVICE');
    expect(e.message).toContain('nvidia-smi -L');
    expect(e.message).toContain('"MIG 1g.5gb Device zero"');
    const orphan = deviceErrorOf(() =>
      parseListGpus('  MIG 1g.5gb      Device  0: (UUID: MIG-b6cd45f2-9655-5269-9b96-65446729d5dc)'),
    );
    expect(orphan.message).toContain('before any GPU');
    const driver = deviceErrorOf(() => parseListGpus(fixture('unknown_driver-not-loaded_shine-cluster-50')));
    expect(driver.message).toContain("NVIDIA-SMI has failed because it couldn't communicate");
  });
});

describe('parseCsvQuery', () => {
  it('reads a header without units (MIG User Guide)', () => {
    const text = fixture('a100-40gb_query-gpu-mig-mode-csv_mig-user-guide');
    expect(parseCsvQuery(text)).toEqual([{ 'pci.bus_id': '00000000:36:00.0', 'mig.mode.current': 'Enabled' }]);
  });

  it('strips units from keys and keeps values as printed', () => {
    const h200 = parseCsvQuery(fixture('h200_query-gpu-index-name-memory-csv_public-notes'));
    expect(h200).toHaveLength(4);
    expect(h200[3]).toEqual({ index: '3', name: 'NVIDIA H200', 'memory.total': '143771 MiB' });
    const a100 = parseCsvQuery(fixture('a100-sxm4-80gb_query-gpu-name-memory-driver-csv_public-notes'));
    expect(a100).toHaveLength(8);
    expect(a100.every((r) => r['memory.total'] === '81920 MiB' && r['driver_version'] === '570.133.20')).toBe(true);
    const a6000 = parseCsvQuery(fixture('rtx-a6000_query-gpu-memory-util-csv_public-notes'));
    expect(a6000.map((r) => [r['index'], r['memory.used'], r['utilization.gpu']])).toEqual([
      ['0', '299 MiB', '0 %'],
      ['1', '11 MiB', '0 %'],
    ]);
  });

  it('takes field names for noheader output and skips a header when one is there', () => {
    const fields = ['pci.bus_id', 'mig.mode.current'];
    const body = fixture('a100-40gb_query-gpu-mig-mode-csv_mig-user-guide').split('\n').slice(1).join('\n');
    expect(parseCsvQuery(body, fields)).toEqual([{ 'pci.bus_id': '00000000:36:00.0', 'mig.mode.current': 'Enabled' }]);
    const withHeader = fixture('rtx-a6000_query-gpu-memory-util-csv_public-notes');
    const rows = parseCsvQuery(withHeader, ['index', 'name', 'memory.total', 'memory.used', 'utilization.gpu']);
    expect(rows).toHaveLength(2);
    expect(rows[0]?.['name']).toBe('NVIDIA RTX A6000');
  });

  it('gives [] for a header alone or no output', () => {
    expect(parseCsvQuery('pci.bus_id, mig.mode.current\n')).toEqual([]);
    expect(parseCsvQuery('', ['pid'])).toEqual([]);
  });

  it('throws DEVICE when an error message stands where the CSV should be', () => {
    const e = deviceErrorOf(() =>
      parseCsvQuery(fixture('unknown_driver-not-loaded_shine-cluster-50'), undefined, 'nvidia-smi --query-compute-apps'),
    );
    expect(e.code).toBe('DEVICE');
    expect(e.message).toContain('nvidia-smi --query-compute-apps');
    const cells = deviceErrorOf(() => parseCsvQuery('index, name\n0, A, B\n'));
    expect(cells.message).toContain('"0, A, B"');
  });
});

describe('parseLgi', () => {
  it('reads the 54-wide layout (2-1-1-1-1-1)', () => {
    const rows = parseLgi(fixture('a100-40gb_lgi-2-1-1-1-1-1_mig-user-guide'));
    expect(rows).toHaveLength(6);
    expect(rows.map((r) => `${r.instanceId}@${r.placement.start}:${r.placement.size}`)).toEqual([
      '7@0:1',
      '8@1:1',
      '9@2:1',
      '10@3:1',
      '13@6:1',
      '5@4:2',
    ]);
    expect(rows[5]).toEqual({ gpu: 0, name: '2g.10gb', profileId: 14, instanceId: 5, placement: { start: 4, size: 2 } });
  });

  it('reads 3-2-1-1 from the guide and from an R510 host (57 wide)', () => {
    const guide = parseLgi(fixture('a100-40gb_lgi-3-2-1-1_mig-user-guide'));
    expect(guide.map((r) => [r.name, r.profileId, r.instanceId])).toEqual([
      ['1g.5gb', 19, 7],
      ['1g.5gb', 19, 8],
      ['2g.10gb', 14, 4],
      ['3g.20gb', 9, 2],
    ]);
    const r510 = parseLgi(fixture('a100-pcie-40gb_lgi-3-2-1-1_yokatayama-e-learning'));
    expect(r510.map((r) => [r.instanceId, r.placement])).toEqual([
      [11, { start: 0, size: 1 }],
      [12, { start: 1, size: 1 }],
      [6, { start: 2, size: 2 }],
      [1, { start: 4, size: 4 }],
    ]);
  });

  it('reads 7x1g.5gb, A30 4x1g.6gb and 2x3g.20gb', () => {
    const seven = parseLgi(fixture('a100-40gb_lgi-7x1g.5gb_nvidia-cloud-native-docs'));
    expect(seven.map((r) => r.instanceId)).toEqual([7, 8, 9, 10, 11, 12, 13]);
    expect(seven.map((r) => r.placement.start)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    const a30 = parseLgi(fixture('a30-24gb_lgi-4x1g.6gb_summer-lo-docker-configuration'));
    expect(a30.map((r) => [r.name, r.profileId, r.instanceId, r.placement.start])).toEqual([
      ['1g.6gb', 14, 3, 0],
      ['1g.6gb', 14, 4, 1],
      ['1g.6gb', 14, 5, 2],
      ['1g.6gb', 14, 6, 3],
    ]);
    const two = parseLgi(fixture('a100-40gb_lgi-2x3g.20gb_mig-user-guide'));
    expect(two.map((r) => [r.instanceId, r.placement.start])).toEqual([
      [1, 4],
      [2, 0],
    ]);
  });

  it('reads the 59-wide R58x layout and several GPUs', () => {
    const wide = parseLgi(fixture('a100-or-h100-80gb_lgi-r58x-59wide-gpu3_dra-driver-nvidia-gpu-933'));
    expect(wide.map((r) => [r.gpu, r.name, r.instanceId, r.placement.start])).toEqual([
      [3, '1g.10gb', 7, 0],
      [3, '1g.10gb', 8, 1],
      [3, '1g.10gb', 12, 5],
    ]);
    const two = parseLgi(fixture('h100-80gb_lgi-2gpus_go-nvml-146'));
    expect(two.map((r) => r.gpu)).toEqual([2, 2, 2, 3, 3, 3]);
    expect(two.filter((r) => r.gpu === 3).map((r) => [r.name, r.instanceId, r.placement.start, r.placement.size])).toEqual([
      ['2g.20gb', 3, 0, 2],
      ['2g.20gb', 4, 2, 2],
      ['3g.40gb', 2, 4, 4],
    ]);
  });

  it('gives [] for "No GPU instances found" and throws on anything else', () => {
    expect(parseLgi('No GPU instances found: Not Found\n')).toEqual([]);
    expect(parseLgi('')).toEqual([]);
    const off = deviceErrorOf(() => parseLgi('No MIG-enabled devices found.\n'));
    expect(off.code).toBe('DEVICE');
    expect(off.message).toContain('nvidia-smi mig -lgi');
    expect(off.message).toContain('"No MIG-enabled devices found."');
    const broken = fixture('a100-40gb_lgi-3-2-1-1_mig-user-guide').replace('4:4', '4-4');
    expect(deviceErrorOf(() => parseLgi(broken, 'nvidia-smi mig -lgi -i 0')).message).toMatch(
      /^nvidia-smi mig -lgi -i 0 .*"0 {2}MIG 3g\.20gb {7}9 {8}2 {10}4-4"/,
    );
  });
});

describe('parseLci', () => {
  it('reads the table without a Placement column (pre-R510)', () => {
    const rows = parseLci(fixture('a100-40gb_lci-3x1c.3g.20gb-no-placement-column_mig-user-guide'));
    expect(rows).toEqual([0, 1, 2].map((id) => ({
      gpu: 0,
      gpuInstanceId: 1,
      name: '1c.3g.20gb',
      profileId: 0,
      instanceId: id,
      placement: null,
    })));
  });

  it('reads the R510 table with a Placement column', () => {
    expect(parseLci(fixture('a100-pcie-40gb_lci-one-gi_yokatayama-e-learning'))).toEqual([
      { gpu: 0, gpuInstanceId: 11, name: '1g.5gb', profileId: 0, instanceId: 0, placement: { start: 0, size: 1 } },
    ]);
    const two = parseLci(fixture('a100-pcie-40gb_lci-two-gis_yokatayama-e-learning'));
    expect(two.map((r) => [r.gpuInstanceId, r.instanceId, r.placement?.start, r.placement?.size])).toEqual([
      [11, 0, 0, 1],
      [12, 0, 0, 1],
    ]);
  });

  it('gives [] for "No compute instances found: Not Found"', () => {
    expect(parseLci(fixture('a100-pcie-40gb_lci-no-compute-instances_yokatayama-e-learning'))).toEqual([]);
  });

  it('throws DEVICE on a refusal', () => {
    const e = deviceErrorOf(() => parseLci(fixture('unknown_lci-insufficient-permissions_hami-1044')));
    expect(e.code).toBe('DEVICE');
    expect(e.message).toContain('nvidia-smi mig -lci');
    expect(e.message).toContain('"Failed to display compute instances: Insufficient Permissions"');
  });
});

describe('parseLcip', () => {
  it('reads two-line rows and the default marker', () => {
    const rows = parseLcip(fixture('a100-pcie-40gb_lcip-all-gis_yokatayama-e-learning'));
    expect(rows).toHaveLength(3);
    expect(rows[0]).toEqual({
      gpu: 0,
      gpuInstanceId: 9,
      name: '1g.5gb',
      profileId: 0,
      isDefault: true,
      free: 0,
      total: 1,
      sms: 14,
      decoders: 0,
      encoders: 0,
      ofa: 0,
      copyEngines: 1,
      jpeg: 0,
    });
    expect(rows.map((r) => [r.gpuInstanceId, r.name, r.profileId, r.isDefault, r.total, r.sms])).toEqual([
      [9, '1g.5gb', 0, true, 1, 14],
      [3, '1c.2g.10gb', 0, false, 2, 14],
      [3, '2g.10gb', 1, true, 1, 28],
    ]);
    expect(rows[2]?.decoders).toBe(1);
    expect(rows[2]?.copyEngines).toBe(2);
  });

  it('throws DEVICE on a row missing its engine line', () => {
    const text = fixture('a100-pcie-40gb_lcip-all-gis_yokatayama-e-learning').split('\n');
    text.splice(7, 1);
    const e = deviceErrorOf(() => parseLcip(text.join('\n')));
    expect(e.message).toContain('nvidia-smi mig -lcip');
  });
});

describe('parseLgip', () => {
  it('reads the R510 A100-PCIE-40GB profile set', () => {
    const rows = parseLgip(fixture('a100-pcie-40gb_lgip-r510-esxi_yokatayama-e-learning'));
    expect(rows.map((r) => [r.name, r.id, r.total, r.memoryGiB, r.sms])).toEqual([
      ['1g.5gb', 19, 7, 4.75, 14],
      ['1g.5gb+me', 20, 1, 4.75, 14],
      ['2g.10gb', 14, 3, 9.75, 28],
      ['3g.20gb', 9, 2, 19.62, 42],
      ['4g.20gb', 5, 1, 19.62, 56],
      ['7g.40gb', 0, 1, 39.5, 98],
    ]);
    expect(rows[5]).toEqual({
      gpu: 0,
      name: '7g.40gb',
      id: 0,
      free: 0,
      total: 1,
      memoryGiB: 39.5,
      p2p: 'No',
      sms: 98,
      decoders: 5,
      encoders: 0,
      copyEngines: 7,
      jpeg: 1,
      ofa: 1,
    });
    expect(rows[1]).toMatchObject({ decoders: 1, copyEngines: 1, jpeg: 1, ofa: 1 });
  });

  it('reads a fully allocated A30', () => {
    const rows = parseLgip(fixture('a30-24gb_lgip-fully-allocated_summer-lo-docker-configuration'));
    expect(rows.map((r) => [r.name, r.id, r.free, r.total, r.memoryGiB])).toEqual([
      ['1g.6gb', 14, 0, 4, 5.81],
      ['1g.6gb+me', 21, 0, 1, 5.81],
      ['2g.12gb', 5, 0, 2, 11.69],
      ['4g.24gb', 0, 0, 1, 23.5],
    ]);
    expect(rows[3]).toMatchObject({ sms: 56, decoders: 4, copyEngines: 4, jpeg: 1, ofa: 1 });
  });

  it('reads GH200 96GB and H100 NVL 94GB profile sets', () => {
    const gh = parseLgip(fixture('gh200-96gb_lgip_kf-cuanschutz'));
    expect(gh.map((r) => r.name)).toEqual(['1g.12gb', '1g.12gb+me', '1g.24gb', '2g.24gb', '3g.48gb', '4g.48gb', '7g.96gb']);
    expect(gh[6]).toMatchObject({ id: 0, free: 1, total: 1, memoryGiB: 93, sms: 132, decoders: 7, copyEngines: 8, jpeg: 7, ofa: 1 });
    expect(gh[0]).toMatchObject({ id: 19, free: 7, total: 7, memoryGiB: 11 });
    const nvl = parseLgip(fixture('h100-nvl-94gb_lgip_alizeechen11-mig-and-mps'));
    expect(nvl.map((r) => [r.name, r.id, r.memoryGiB])).toEqual([
      ['1g.12gb', 19, 10.75],
      ['1g.12gb+me', 20, 10.75],
      ['1g.24gb', 15, 21.62],
      ['2g.24gb', 14, 21.62],
      ['3g.47gb', 9, 46.38],
      ['4g.47gb', 5, 46.38],
      ['7g.94gb', 0, 93.12],
    ]);
  });

  it('throws DEVICE on a row of no known form', () => {
    const broken = fixture('gh200-96gb_lgip_kf-cuanschutz').replace('7/7', '7 of 7');
    const e = deviceErrorOf(() => parseLgip(broken));
    expect(e.code).toBe('DEVICE');
    expect(e.message).toContain('nvidia-smi mig -lgip');
    expect(e.message).toContain('7 of 7');
  });
});

describe('parseLgipp', () => {
  it('reads plural and singular placement lines', () => {
    const rows = parseLgipp(fixture('a100-40gb_lgipp-r525_mig-user-guide'));
    expect(rows.map((r) => r.profileId)).toEqual([19, 20, 15, 14, 9, 5, 0]);
    expect(rows[3]).toEqual({
      gpu: 0,
      profileId: 14,
      placements: [
        { start: 0, size: 2 },
        { start: 2, size: 2 },
        { start: 4, size: 2 },
      ],
    });
    expect(rows[6]).toEqual({ gpu: 0, profileId: 0, placements: [{ start: 0, size: 8 }] });
    expect(rows[0]?.placements).toHaveLength(7);
  });

  it('reads A30 and H100 NVL', () => {
    const a30 = parseLgipp(fixture('a30-24gb_lgipp_summer-lo-docker-configuration'));
    expect(a30.map((r) => [r.profileId, r.placements.map((p) => p.start), r.placements[0]?.size])).toEqual([
      [14, [0, 1, 2, 3], 1],
      [21, [0, 1, 2, 3], 1],
      [5, [0, 2], 2],
      [0, [0], 4],
    ]);
    const nvl = parseLgipp(fixture('h100-nvl-94gb_lgipp_alizeechen11-mig-and-mps'));
    expect(nvl.find((r) => r.profileId === 15)?.placements.map((p) => p.start)).toEqual([0, 2, 4, 6]);
    expect(nvl.find((r) => r.profileId === 5)?.placements).toEqual([{ start: 0, size: 4 }]);
  });

  it('throws DEVICE on a line of no known form', () => {
    const e = deviceErrorOf(() => parseLgipp('GPU  0 Profile ID 19 Placements: {0,1,2}\n'));
    expect(e.message).toContain('nvidia-smi mig -lgipp');
    expect(e.message).toContain('"GPU  0 Profile ID 19 Placements: {0,1,2}"');
  });
});
