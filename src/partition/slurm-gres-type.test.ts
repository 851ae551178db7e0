import { describe, expect, it } from 'vitest';
import { MigpoolError } from '../errors.js';
import { migNamingOf, parseSlurmVersion, reconfigureRestarts, slurmGpuType, slurmMigGresType } from './slurm-gres-type.js';

const old = (product: string, profile: string) => slurmMigGresType(product, profile, 'attributes').type;
const cur = (product: string, profile: string) => slurmMigGresType(product, profile, 'device-name').type;

describe('Slurm AutoDetect=nvml MIG type names', () => {
  it('A100-40GB: the memory rounds to the profile name, under both namings', () => {
    expect(old('NVIDIA A100-SXM4-40GB', '1g.5gb')).toBe('nvidia_a100_1g.5gb');
    expect(old('NVIDIA A100-SXM4-40GB', '3g.20gb')).toBe('nvidia_a100_3g.20gb');
    expect(old('NVIDIA A100-SXM4-40GB', '7g.40gb')).toBe('nvidia_a100_7g.40gb');
    expect(cur('NVIDIA A100-SXM4-40GB', '3g.20gb')).toBe('nvidia_a100_3g.20gb');
    expect(slurmGpuType('NVIDIA A100-SXM4-40GB')).toBe('nvidia_a100-sxm4-40gb');
  });

  it('A100-80GB: 3g.40gb is 39.25 GiB, so Slurm before 23.02.6 names it 3g.39gb', () => {
    expect(old('NVIDIA A100-SXM4-80GB', '1g.10gb')).toBe('nvidia_a100_1g.10gb');
    expect(old('NVIDIA A100-SXM4-80GB', '2g.20gb')).toBe('nvidia_a100_2g.20gb');
    expect(old('NVIDIA A100-SXM4-80GB', '3g.40gb')).toBe('nvidia_a100_3g.39gb');
    expect(old('NVIDIA A100-SXM4-80GB', '4g.40gb')).toBe('nvidia_a100_4g.39gb');
    expect(old('NVIDIA A100-SXM4-80GB', '7g.80gb')).toBe('nvidia_a100_7g.79gb');
    // The PCIe card's name has no '-': the whole name stays.
    expect(old('NVIDIA A100 80GB PCIe', '3g.40gb')).toBe('nvidia_a100_80gb_pcie_3g.39gb');
    expect(cur('NVIDIA A100-SXM4-80GB', '3g.40gb')).toBe('nvidia_a100_3g.40gb');
  });

  it('H100-80GB: the name keeps 80gb_hbm3, the memory rounds down', () => {
    expect(old('NVIDIA H100 80GB HBM3', '1g.10gb')).toBe('nvidia_h100_80gb_hbm3_1g.10gb');
    expect(old('NVIDIA H100 80GB HBM3', '3g.40gb')).toBe('nvidia_h100_80gb_hbm3_3g.40gb');
    expect(old('NVIDIA H100 80GB HBM3', '7g.80gb')).toBe('nvidia_h100_80gb_hbm3_7g.79gb');
    expect(cur('NVIDIA H100 80GB HBM3', '7g.80gb')).toBe('nvidia_h100_80gb_hbm3_7g.80gb');
  });

  it('H200: 1g.18gb is 16 GiB', () => {
    expect(old('NVIDIA H200', '1g.18gb')).toBe('nvidia_h200_1g.16gb');
    expect(old('NVIDIA H200', '3g.71gb')).toBe('nvidia_h200_3g.70gb');
    expect(old('NVIDIA H200', '7g.141gb')).toBe('nvidia_h200_7g.140gb');
    expect(cur('NVIDIA H200', '3g.71gb')).toBe('nvidia_h200_3g.71gb');
  });

  it('B200: 1g.23gb is 22 GiB; a profile without a measured size keeps its name and says so', () => {
    expect(old('NVIDIA B200', '1g.23gb')).toBe('nvidia_b200_1g.22gb');
    expect(old('NVIDIA B200', '2g.45gb')).toBe('nvidia_b200_2g.44gb');
    const unknown = slurmMigGresType('NVIDIA B200', '7g.180gb', 'attributes');
    expect(unknown.type).toBe('nvidia_b200_7g.180gb');
    expect(unknown.caveat).toMatch(/no measured memory size for 7g\.180gb/);
    expect(cur('NVIDIA B200', '1g.23gb')).toBe('nvidia_b200_1g.23gb');
  });

  it('+me and partial compute instances: dropped before 23.02.6, kept after', () => {
    expect(old('NVIDIA A100-SXM4-80GB', '1g.10gb+me')).toBe(old('NVIDIA A100-SXM4-80GB', '1g.10gb'));
    expect(old('NVIDIA A100-SXM4-40GB', '1c.3g.20gb')).toBe('nvidia_a100_3g.20gb');
    expect(cur('NVIDIA A100-SXM4-80GB', '1g.10gb+me')).toBe('nvidia_a100_1g.10gb+me');
    expect(cur('NVIDIA A100-SXM4-40GB', '1c.3g.20gb')).toBe('nvidia_a100_1c.3g.20gb');
  });

  it('refuses a name that is no MIG profile', () => {
    expect(() => old('NVIDIA A100-SXM4-40GB', 'gpu')).toThrow(MigpoolError);
  });
});

describe('Slurm versions', () => {
  it('reads what the commands print and picks the naming and the reconfigure behaviour', () => {
    const v = parseSlurmVersion('slurm-wlm 22.05.8\n');
    expect(v).toEqual({ major: 22, minor: 5, micro: 8 });
    expect(migNamingOf(v)).toBe('attributes');
    expect(migNamingOf(parseSlurmVersion('slurm 23.02.5'))).toBe('attributes');
    expect(migNamingOf(parseSlurmVersion('slurm 23.02.6'))).toBe('device-name');
    expect(migNamingOf(parseSlurmVersion('slurm 24.11.1'))).toBe('device-name');
    expect(migNamingOf(null)).toBe('device-name');
    expect(reconfigureRestarts(v)).toBe(false);
    expect(reconfigureRestarts(parseSlurmVersion('slurm 23.11.4'))).toBe(true);
    expect(parseSlurmVersion('no version')).toBeNull();
  });
});
