import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  classifyError,
  parseCreatedComputeInstances,
  parseCreatedGpuInstances,
  parseDestroyed,
  parseMigModeChange,
  parseReset,
} from './messages.js';

const dir = new URL('../../../test/fixtures/nvidia-smi/', import.meta.url);
const fixture = (name: string): string => readFileSync(new URL(`${name}.txt`, dir), 'utf8');

describe('parseCreatedGpuInstances', () => {
  it('reads -cgi 9,19,14,19 from the guide and from an R510 host', () => {
    expect(parseCreatedGpuInstances(fixture('a100-40gb_cgi-3-2-1-1-success_mig-user-guide'))).toEqual([
      { gpu: 0, instanceId: 2, profile: '3g.20gb', profileId: 9 },
      { gpu: 0, instanceId: 7, profile: '1g.5gb', profileId: 19 },
      { gpu: 0, instanceId: 4, profile: '2g.10gb', profileId: 14 },
      { gpu: 0, instanceId: 8, profile: '1g.5gb', profileId: 19 },
    ]);
    const r510 = parseCreatedGpuInstances(fixture('a100-pcie-40gb_cgi-3-2-1-1-success_yokatayama-e-learning'));
    expect(r510.map((g) => g.instanceId)).toEqual([1, 11, 6, 12]);
  });

  it('reads -cgi 14,19,19,19,19,19 (two-digit IDs)', () => {
    const gis = parseCreatedGpuInstances(fixture('a100-40gb_cgi-2-1-1-1-1-1-success_mig-user-guide'));
    expect(gis.map((g) => g.instanceId)).toEqual([5, 13, 7, 8, 9, 10]);
    expect(gis[0]).toEqual({ gpu: 0, instanceId: 5, profile: '2g.10gb', profileId: 14 });
  });

  it('keeps the successes printed before a failure', () => {
    const text = fixture('a100-40gb_cgi-insufficient-resources-3g-not-first_mig-user-guide');
    expect(parseCreatedGpuInstances(text).map((g) => [g.instanceId, g.profileId])).toEqual([
      [13, 19],
      [11, 19],
      [3, 14],
    ]);
    expect(parseCreatedGpuInstances(fixture('gh200-96gb_cgi-C-in-use-by-another-client_kf-cuanschutz'))).toEqual([]);
  });

  it('reads -cgi ... -C, skipping the CI lines', () => {
    const gh = parseCreatedGpuInstances(fixture('gh200-96gb_cgi-C-success-3x1g.24gb_kf-cuanschutz'));
    expect(gh).toEqual([5, 3, 4].map((id) => ({ gpu: 0, instanceId: id, profile: '1g.24gb', profileId: 15 })));
    const guide = parseCreatedGpuInstances(fixture('a100-40gb_cgi-C-2x3g.20gb_mig-user-guide'));
    expect(guide.map((g) => [g.instanceId, g.profile, g.profileId])).toEqual([
      [2, '3g.20gb', 9],
      [1, '3g.20gb', 9],
    ]);
  });
});

describe('parseCreatedComputeInstances', () => {
  it('reads the form with a CI ID (R510)', () => {
    expect(parseCreatedComputeInstances(fixture('a100-pcie-40gb_cci-success_yokatayama-e-learning'))).toEqual([
      { gpu: 0, gpuInstanceId: 11, instanceId: 0, profile: '1g.5gb', profileId: 0 },
    ]);
  });

  it('reads the older form without a CI ID', () => {
    const cis = parseCreatedComputeInstances(fixture('a100-40gb_cci-3x1c-on-3g_mig-user-guide'));
    expect(cis).toHaveLength(3);
    expect(cis.every((c) => c.instanceId === null && c.gpuInstanceId === 1 && c.profile === '1c.3g.20gb')).toBe(true);
    expect(cis[0]?.profileId).toBe(0);
  });

  it('reads the CI lines of -cgi ... -C', () => {
    const gh = parseCreatedComputeInstances(fixture('gh200-96gb_cgi-C-success-3x1g.24gb_kf-cuanschutz'));
    expect(gh.map((c) => [c.gpuInstanceId, c.instanceId, c.profile, c.profileId])).toEqual([
      [5, 0, '1g.24gb', 7],
      [3, 0, '1g.24gb', 7],
      [4, 0, '1g.24gb', 7],
    ]);
    const guide = parseCreatedComputeInstances(fixture('a100-40gb_cgi-C-2x3g.20gb_mig-user-guide'));
    expect(guide).toEqual([
      { gpu: 0, gpuInstanceId: 2, instanceId: 0, profile: '3g.20gb', profileId: 2 },
      { gpu: 0, gpuInstanceId: 1, instanceId: 0, profile: '3g.20gb', profileId: 2 },
    ]);
  });
});

describe('parseDestroyed', () => {
  it('reads -dci and -dgi', () => {
    expect(parseDestroyed(fixture('a100-40gb_dci_mig-user-guide'))).toEqual([0, 1, 2].map((ci) => ({
      kind: 'compute-instance',
      gpu: 0,
      gpuInstanceId: 1,
      computeInstanceId: ci,
    })));
    expect(parseDestroyed(fixture('a100-40gb_dgi_mig-user-guide'))).toEqual([
      { kind: 'gpu-instance', gpu: 0, gpuInstanceId: 1, computeInstanceId: null },
      { kind: 'gpu-instance', gpu: 0, gpuInstanceId: 2, computeInstanceId: null },
    ]);
  });

  it('gives [] for a refusal', () => {
    expect(parseDestroyed(fixture('h100_dci-in-use-lowercased_dcgm-95'))).toEqual([]);
  });
});

describe('parseMigModeChange', () => {
  it('reads an immediate enable (Ampere with reset, Hopper with a persistence warning)', () => {
    expect(parseMigModeChange(fixture('a100-40gb_mig-enable-success_mig-user-guide'))).toEqual([
      { busId: '00000000:36:00.0', enabled: true, pending: false, rebootRequired: false, reason: null },
    ]);
    expect(parseMigModeChange(fixture('gh200-96gb_mig-enable-persistence-warning_kf-cuanschutz'))).toEqual([
      { busId: '00000009:01:00.0', enabled: true, pending: false, rebootRequired: false, reason: null },
    ]);
  });

  it('reads a pending enable the platform cannot reset', () => {
    expect(parseMigModeChange(fixture('a100_mig-enable-pending-not-supported_mig-user-guide'))).toEqual([
      { busId: '00000000:00:03.0', enabled: true, pending: true, rebootRequired: true, reason: 'Not Supported' },
    ]);
  });

  it('reads a pending enable blocked by clients', () => {
    expect(parseMigModeChange(fixture('a100_mig-enable-pending-in-use_mig-user-guide'))).toEqual([
      {
        busId: '00000000:07:00.0',
        enabled: true,
        pending: true,
        rebootRequired: false,
        reason: 'In use by another client',
      },
    ]);
  });

  it('reads a disable (form quoted in user captures)', () => {
    expect(parseMigModeChange('Disabled MIG Mode for GPU 00000000:01:00.0\nAll done.\n')).toEqual([
      { busId: '00000000:01:00.0', enabled: false, pending: false, rebootRequired: false, reason: null },
    ]);
  });
});

describe('parseReset', () => {
  it('reads a successful reset', () => {
    expect(parseReset(fixture('h100_gpu-reset-success_nvsentinel-1692'))).toEqual({
      reset: ['00000000:1A:00.0'],
      blocked: [],
    });
  });

  it('reads GPUs whose reset was refused', () => {
    const r = parseReset(fixture('multi-a100_gpu-reset-in-use_mig-parted-181'));
    expect(r.reset).toEqual([]);
    expect(r.blocked.map((b) => b.busId)).toEqual(['00000000:01:00.0', '00000000:47:00.0', '00000000:81:00.0', '00000000:C2:00.0']);
    expect(r.blocked.every((b) => b.reason === 'In use by another client')).toBe(true);
  });
});

describe('classifyError', () => {
  const cases: Array<[string, string, string]> = [
    [
      'a100-40gb_cgi-insufficient-resources-3g-not-first_mig-user-guide',
      'insufficient-resources',
      'Unable to create a GPU instance on GPU  0 using profile 9: Insufficient Resources',
    ],
    [
      'gh200-96gb_cgi-C-insufficient-resources_kf-cuanschutz',
      'insufficient-resources',
      'Unable to create a GPU instance on GPU  0 using profile 20: Insufficient Resources',
    ],
    [
      'gh200-96gb_cgi-C-in-use-by-another-client_kf-cuanschutz',
      'in-use',
      'Unable to create a GPU instance on GPU  0 using profile 20: In use by another client',
    ],
    [
      'h100_dci-in-use-lowercased_dcgm-95',
      'in-use',
      'unable to destroy compute instance id  0 from gpu  0 gpu instance id  3: in use by another client',
    ],
    [
      'a100_mig-enable-pending-not-supported_mig-user-guide',
      'mode-change-pending',
      'Warning: MIG mode is in pending enable state for GPU 00000000:00:03.0:Not Supported',
    ],
    [
      'a100_mig-enable-pending-in-use_mig-user-guide',
      'mode-change-pending',
      'Warning: MIG mode is in pending enable state for GPU 00000000:07:00.0:In use by another client',
    ],
    ['multi-a100_gpu-reset-in-use_mig-parted-181', 'reset-blocked', 'GPU 00000000:01:00.0: In use by another client'],
    ['a100_gpu-reset-not-supported_mig-user-guide', 'not-supported', 'Resetting GPU 00000000:00:03.0 is not supported.'],
    [
      'unknown_lci-insufficient-permissions_hami-1044',
      'no-permission',
      'Failed to display compute instances: Insufficient Permissions',
    ],
    [
      'unknown_driver-not-loaded_shine-cluster-50',
      'driver-not-loaded',
      "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.",
    ],
    ['a100-pcie-40gb_lci-no-compute-instances_yokatayama-e-learning', 'not-found', 'No compute instances found: Not Found'],
  ];
  it.each(cases)('%s -> %s', (name, kind, line) => {
    expect(classifyError(fixture(name))).toEqual({ kind, line });
  });

  it('classifies message forms quoted in user captures', () => {
    expect(
      classifyError('Unable to enable MIG Mode for GPU 00000000:21:00.0: Not Supported\nTreating as warning and moving on.\nAll done.\n'),
    ).toEqual({ kind: 'not-supported', line: 'Unable to enable MIG Mode for GPU 00000000:21:00.0: Not Supported' });
    expect(classifyError('No MIG-enabled devices found.\n')).toEqual({ kind: 'not-found', line: 'No MIG-enabled devices found.' });
    expect(classifyError('No MIG-supported devices found.\n').kind).toBe('not-supported');
    expect(classifyError('Invalid combination of input arguments.\n').kind).toBe('invalid-argument');
  });

  it('gives unknown with the first line other than "All done."', () => {
    expect(classifyError(fixture('a100-40gb_dgi_mig-user-guide'))).toEqual({
      kind: 'unknown',
      line: 'Successfully destroyed GPU instance ID  1 from GPU  0',
    });
    expect(classifyError('All done.\n')).toEqual({ kind: 'unknown', line: '' });
    expect(classifyError('')).toEqual({ kind: 'unknown', line: '' });
  });
});
