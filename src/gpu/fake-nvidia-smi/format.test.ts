import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { formatLci, formatLcip, formatLgi, formatLgip, formatLgipp, formatListGpus } from './format.js';
import { fakeSession, machineWithMig } from './test-support.js';

const dir = new URL('../../../test/fixtures/nvidia-smi/', import.meta.url);
const fixture = (name: string): string => readFileSync(new URL(`${name}.txt`, dir), 'utf8');

/** Drops the two-line row of `profile` (and its rule) from a `-lgip` table. */
function withoutLgipRow(table: string, profile: string): string {
  const lines = table.split('\n');
  const at = lines.findIndex((l) => l.includes(`MIG ${profile} `));
  expect(at).toBeGreaterThan(0);
  lines.splice(at, 3);
  return lines.join('\n');
}

/** Sets every `Free` of a `-lgip` table to 0, keeping the widths. */
function noneFree(table: string): string {
  return table.replace(/^(\|.{26})(\s*\d+)\//gm, (_, head: string, free: string) => `${head}${'0'.padStart(free.length)}/`);
}

/** Replaces GPU and MIG UUIDs (and PCI bus IDs) by placeholders, to compare layouts. */
function anonymous(text: string): string {
  return text
    .replace(/GPU-[0-9a-f-]{36}/g, 'GPU-<uuid>')
    .replace(/MIG-[0-9a-f-]{36}/g, 'MIG-<uuid>')
    .replace(/[0-9A-F]{8}:[0-9A-F]{2}:[0-9A-F]{2}\.[0-9A-F]/g, '<bus>');
}

describe('fake nvidia-smi formats: byte-compatible with real captures', () => {
  it('-lgipp of an A100-40GB is the R525 listing of the MIG User Guide', () => {
    expect(formatLgipp(machineWithMig('A100-SXM4-40GB'), [0])).toBe(fixture('a100-40gb_lgipp-r525_mig-user-guide'));
  });

  it('-lgipp of an H100 NVL and an A30 (less the R525 2g.12gb+me line) match their captures', () => {
    expect(formatLgipp(machineWithMig('H100-NVL'), [0])).toBe(fixture('h100-nvl-94gb_lgipp_alizeechen11-mig-and-mps'));
    const a30 = formatLgipp(machineWithMig('A30'), [0])
      .split('\n')
      .filter((l) => !l.includes('Profile ID  6 '))
      .join('\n');
    expect(a30).toBe(fixture('a30-24gb_lgipp_summer-lo-docker-configuration'));
  });

  it('-lgip of an all-free A30 has the layout of the fully-allocated A30 capture', () => {
    const ours = formatLgip(machineWithMig('A30'), [0]);
    expect([...ours.matchAll(/(\d+)\/(\d+)/g)].map((m) => `${m[1]}/${m[2]}`)).toEqual(['4/4', '1/1', '2/2', '1/1', '1/1']);
    // The capture predates 2g.12gb+me (R525) and shows every instance taken.
    expect(noneFree(withoutLgipRow(ours, '2g.12gb+me'))).toBe(fixture('a30-24gb_lgip-fully-allocated_summer-lo-docker-configuration'));
  });

  it('-lgip of an A100-40GB has the layout of the R510 capture, and GH200 / H100 NVL match theirs', () => {
    const a100 = formatLgip(machineWithMig('A100-PCIE-40GB'), [0]);
    expect(noneFree(withoutLgipRow(a100, '1g.10gb'))).toBe(fixture('a100-pcie-40gb_lgip-r510-esxi_yokatayama-e-learning'));
    expect(formatLgip(machineWithMig('GH200'), [0])).toBe(fixture('gh200-96gb_lgip_kf-cuanschutz'));
    expect(formatLgip(machineWithMig('H100-NVL'), [0])).toBe(fixture('h100-nvl-94gb_lgip_alizeechen11-mig-and-mps'));
  });

  it('-lgi matches the 57-column captures (A30 4x1g.6gb; H100 GPUs 2 and 3 with 2g+2g+3g)', () => {
    const a30 = machineWithMig('A30');
    for (const start of [0, 1, 2, 3]) a30.createGpuInstance(0, '1g.6gb', start);
    expect(formatLgi(a30, [0])).toBe(fixture('a30-24gb_lgi-4x1g.6gb_summer-lo-docker-configuration'));
    const h100 = machineWithMig('4xH100-80GB');
    for (const g of [2, 3]) {
      h100.createGpuInstance(g, '2g.20gb', 0);
      h100.createGpuInstance(g, '2g.20gb', 2);
      h100.createGpuInstance(g, '3g.40gb', 4);
    }
    expect(fakeSession(h100).run('mig', '-lgi').stdout).toBe(fixture('h100-80gb_lgi-2gpus_go-nvml-146'));
  });

  it('-lci and -lcip match the R510 captures', () => {
    const two = machineWithMig('A100-PCIE-40GB');
    for (const start of [4, 5]) two.createComputeInstance(0, two.createGpuInstance(0, '1g.5gb', start).id);
    expect(formatLci(two, [0])).toBe(fixture('a100-pcie-40gb_lci-two-gis_yokatayama-e-learning'));

    const m = machineWithMig('A100-PCIE-40GB');
    const twoG = m.createGpuInstance(0, '2g.10gb', 0);
    const oneG = m.createGpuInstance(0, '1g.5gb', 2);
    expect([twoG.id, oneG.id]).toEqual([3, 9]);
    m.createComputeInstance(0, twoG.id);
    m.createComputeInstance(0, oneG.id);
    expect(formatLcip(m, [0])).toBe(fixture('a100-pcie-40gb_lcip-all-gis_yokatayama-e-learning'));
  });

  it('-L has the R470+ layout of the R510 and GH200 captures', () => {
    const a100 = machineWithMig('A100-PCIE-40GB');
    a100.createComputeInstance(0, a100.createGpuInstance(0, '1g.5gb').id);
    expect(anonymous(formatListGpus(a100, [0]))).toBe(anonymous(fixture('a100-pcie-40gb_L-r510_yokatayama-e-learning')));
    const gh = machineWithMig('GH200');
    for (const [profile, start] of [['1g.24gb', 0], ['1g.24gb', 2], ['1g.24gb', 4], ['1g.12gb', 6]] as const) {
      gh.createComputeInstance(0, gh.createGpuInstance(0, profile, start).id);
    }
    expect(anonymous(formatListGpus(gh, [0]))).toBe(anonymous(fixture('gh200-96gb_L-with-mig_kf-cuanschutz')));
  });

  it('-cgi, -cci, -dci and -dgi print the captured messages', () => {
    const s = fakeSession(machineWithMig('A100-SXM4-40GB'));
    expect(s.run('mig', '-i', '0', '-cgi', '14,19,19,19,19,19')).toEqual({ stdout: fixture('a100-40gb_cgi-2-1-1-1-1-1-success_mig-user-guide'), stderr: '', code: 0 });

    const t = fakeSession(machineWithMig('A100-SXM4-40GB'));
    const r = t.run('mig', '-i', '0', '-cgi', '19,19,14,9');
    expect(r.stdout + r.stderr).toBe(fixture('a100-40gb_cgi-insufficient-resources-3g-not-first_mig-user-guide'));
    expect(r.code).toBe(255);

    const p = machineWithMig('A100-PCIE-40GB');
    p.createGpuInstance(0, '1g.5gb', 4);
    expect(fakeSession(p).run('mig', '-i', '0', '-gi', '11', '-cci').stdout).toBe(fixture('a100-pcie-40gb_cci-success_yokatayama-e-learning'));

    const d = machineWithMig('A100-SXM4-40GB');
    const gi1 = d.createGpuInstance(0, '3g.20gb', 0);
    const gi2 = d.createGpuInstance(0, '3g.20gb', 4);
    expect([gi1.id, gi2.id]).toEqual([1, 2]);
    for (let k = 0; k < 3; k++) d.createComputeInstance(0, gi1.id, '1c.3g.20gb');
    const ds = fakeSession(d);
    expect(ds.run('mig', '-i', '0', '-gi', '1', '-dci').stdout).toBe(fixture('a100-40gb_dci_mig-user-guide'));
    expect(ds.run('mig', '-i', '0', '-dgi').stdout).toBe(fixture('a100-40gb_dgi_mig-user-guide'));
  });

  it('-mig and -r print the captured messages', () => {
    const h100 = fakeSession(machineWithMig('H100-80GB', []));
    expect(anonymous(h100.run('-i', '0', '-mig', '1').stdout)).toBe(anonymous(fixture('a100-40gb_mig-enable-success_mig-user-guide')));

    const a100 = fakeSession(machineWithMig('A100-SXM4-40GB', []));
    expect(anonymous(a100.run('-i', '0', '-mig', '1').stdout)).toBe(anonymous(fixture('a100_mig-enable-pending-not-supported_mig-user-guide')));

    const busy = machineWithMig('H100-80GB', []);
    busy.attachProcess(0);
    // The capture's bus ID is the fake's first one, 00000000:07:00.0.
    expect(fakeSession(busy).run('-mig', '1').stdout).toBe(fixture('a100_mig-enable-pending-in-use_mig-user-guide'));

    expect(anonymous(a100.run('-i', '0', '-r').stdout)).toBe(anonymous(fixture('h100_gpu-reset-success_nvsentinel-1692')));

    const four = machineWithMig('4xA100-SXM4-40GB', []);
    for (const g of [0, 1, 2, 3]) four.attachProcess(g);
    const blocked = fakeSession(four).run('-r');
    expect(anonymous(blocked.stderr)).toBe(anonymous(fixture('multi-a100_gpu-reset-in-use_mig-parted-181')));
    expect(blocked.code).toBe(255);
  });
});
