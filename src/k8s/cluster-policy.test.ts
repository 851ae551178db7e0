import { describe, expect, it } from 'vitest';
import { checkClusterPolicy, MIGPOOL_CONFIGMAP } from './cluster-policy.js';

const policy = (migManager: Record<string, unknown>) => ({ metadata: { name: 'cluster-policy' }, spec: { migManager } });

describe('checkClusterPolicy', () => {
  it('passes when migManager.config.name names the ConfigMap', () => {
    expect(checkClusterPolicy([policy({ enabled: true, config: { name: MIGPOOL_CONFIGMAP } })], 'gpu-operator', MIGPOOL_CONFIGMAP)).toBeNull();
  });

  it('the operator defaults (no name): one line naming the ClusterPolicy and the kubectl patch that fixes it', () => {
    expect(() => checkClusterPolicy([policy({ enabled: true, config: { default: 'all-disabled' } })], 'gpu-operator', MIGPOOL_CONFIGMAP)).toThrow(
      /^ClusterPolicy cluster-policy leaves migManager.config.name unset, .* never reads ConfigMap gpu-operator\/migpool-mig-parted-config; point it there: kubectl patch clusterpolicy cluster-policy --type merge -p '\{"spec":\{"migManager":\{"config":\{"name":"migpool-mig-parted-config"\}\}\}\}'$/,
    );
    expect(() => checkClusterPolicy([policy({ config: { name: 'default-mig-parted-config' } })], 'gpu-operator', MIGPOOL_CONFIGMAP)).toThrow(/leaves migManager.config.name at default-mig-parted-config/);
  });

  it('another ConfigMap named: says which, and both ways out', () => {
    expect(() => checkClusterPolicy([policy({ config: { name: 'site-mig' } })], 'gpu-operator', MIGPOOL_CONFIGMAP)).toThrow(/has migManager.config.name=site-mig, .*pass --configmap site-mig, or point it at migpool-mig-parted-config/);
  });

  it('refuses the operator-owned ConfigMap and a disabled MIG manager', () => {
    expect(() => checkClusterPolicy([], 'gpu-operator', 'default-mig-parted-config')).toThrow(/rewrites it on every reconcile/);
    expect(() => checkClusterPolicy([policy({ enabled: false, config: { name: MIGPOOL_CONFIGMAP } })], 'gpu-operator', MIGPOOL_CONFIGMAP)).toThrow(/migManager.enabled=false/);
  });

  it('no GPU Operator: a warning, not an error', () => {
    expect(checkClusterPolicy(null, 'gpu-operator', MIGPOOL_CONFIGMAP)).toMatch(/CRD is not installed/);
    expect(checkClusterPolicy([], 'gpu-operator', MIGPOOL_CONFIGMAP)).toMatch(/none exists/);
  });
});
