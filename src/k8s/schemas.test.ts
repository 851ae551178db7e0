/**
 * The objects migpool writes to Kubernetes, checked against the Kubernetes OpenAPI schemas (the
 * validators kubernetes-models generates from them), plus the label syntax rules the schemas do
 * not carry (apimachinery's IsQualifiedName / IsValidLabelValue).
 */
import { readFileSync } from 'node:fs';
import { Job } from 'kubernetes-models/batch/v1/Job';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Node } from 'kubernetes-models/v1/Node';
import { Pod } from 'kubernetes-models/v1/Pod';
import { describe, expect, it } from 'vitest';
import { resolveGpuModel } from '../mig/catalog/index.js';
import { editMigConfigs } from './configmap.js';
import { jobManifest, type ManifestOptions } from './manifest.js';
import { nodeConfig } from './plan.js';
import type { K8sNodeView } from './inventory.js';

const DEFAULT_CONFIG = readFileSync(new URL('../../test/fixtures/mig-parted/config-default.yaml', import.meta.url), 'utf8');
const OPTIONS: ManifestOptions = { kind: 'Job', image: 'nvcr.io/nvidia/pytorch:24.08-py3', gpu: 'A100-SXM4-40GB', priorityClasses: { foreground: 'migpool-foreground', background: 'migpool-background' } };

// k8s.io/apimachinery/pkg/util/validation: label keys are [prefix/]name, values at most 63.
const QUALIFIED_NAME = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

function expectLabelsValid(labels: Record<string, string | null>): void {
  for (const [k, v] of Object.entries(labels)) {
    expect(k, k).toMatch(QUALIFIED_NAME);
    if (v !== null) {
      expect(v.length, v).toBeLessThanOrEqual(63);
      expect(v, v).toMatch(LABEL_VALUE);
    }
  }
}

const spec = (over: Record<string, unknown>): Record<string, unknown> => ({ name: 'resnet_CIFAR.v2', command: ['python', 'train.py'], ...over });

describe('manifests against the Kubernetes OpenAPI schemas', () => {
  const cases: [string, Record<string, unknown>][] = [
    ['a profile', spec({ resources: { profile: '1g.5gb' } })],
    ['a +me profile', spec({ resources: { profile: '1g.5gb+me' } })],
    ['memory', spec({ resources: { memory: '12GiB' }, env: { A: 'b' }, workdir: '/work', maxRuntime: '90m', retries: 3, priority: 'background', workload: 'small', estimatedSeconds: 600 })],
    ['whole GPUs', spec({ resources: { gpus: 4 } })],
    ['the default (one GPU)', spec({})],
  ];
  for (const [what, raw] of cases) {
    it(`a Job and a Pod for ${what} are valid`, () => {
      const job = jobManifest(raw, 'job.yaml', OPTIONS);
      expect(() => new Job(job as never).validate()).not.toThrow();
      expect(job.metadata['name']).toMatch(DNS_SUBDOMAIN);
      expectLabelsValid(job.metadata['labels'] as Record<string, string>);
      if ((raw['retries'] ?? 0) === 0) {
        const pod = jobManifest(raw, 'job.yaml', { ...OPTIONS, kind: 'Pod' });
        expect(() => new Pod(pod as never).validate()).not.toThrow();
      }
    });
  }

  it('with requests, /dev/shm, a product nodeSelector and a Kueue queue: a valid Job and Pod', () => {
    const full: ManifestOptions = { ...OPTIONS, cpu: '4', memory: '16Gi', shm: '8Gi', gpuProduct: 'NVIDIA-A100-SXM4-40GB', queue: 'team-a' };
    for (const kind of ['Job', 'Pod'] as const) {
      const m = jobManifest(spec({ resources: { profile: '3g.20gb' } }), 'job.yaml', { ...full, kind });
      expect(() => (kind === 'Job' ? new Job(m as never) : new Pod(m as never)).validate()).not.toThrow();
      expectLabelsValid(m.metadata['labels'] as Record<string, string>);
      const podSpec = (kind === 'Job' ? (m.spec['template'] as { spec: Record<string, unknown> }).spec : m.spec) as Record<string, unknown>;
      expect(podSpec['nodeSelector']).toEqual({ 'nvidia.com/gpu.product': 'NVIDIA-A100-SXM4-40GB' });
      expectLabelsValid(podSpec['nodeSelector'] as Record<string, string>);
      expect(podSpec['volumes']).toEqual([{ name: 'dshm', emptyDir: { medium: 'Memory', sizeLimit: '8Gi' } }]);
      const [c] = podSpec['containers'] as { resources: unknown; volumeMounts: unknown }[];
      expect(c?.resources).toEqual({ requests: { cpu: '4', memory: '16Gi' }, limits: { 'nvidia.com/mig-3g.20gb': 1 } });
      expect(c?.volumeMounts).toEqual([{ name: 'dshm', mountPath: '/dev/shm' }]);
      expect((m.metadata['labels'] as Record<string, string>)['kueue.x-k8s.io/queue-name']).toBe('team-a');
    }
    // --gpu alone: a node affinity on every product name of the model, each a valid label value.
    const job = jobManifest(spec({}), 'job.yaml', OPTIONS) as unknown as { spec: { template: { spec: { affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: { matchExpressions: { values: string[] }[] }[] } } } } } } };
    expect(() => new Job(job as never).validate()).not.toThrow();
    const values = job.spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]?.matchExpressions[0]?.values ?? [];
    expect(values).toContain('NVIDIA-A100-SXM4-40GB');
    expect(values).toContain('NVIDIA-A100-PCIE-40GB');
    for (const v of values) expectLabelsValid({ k: v });
  });

  it('refuses quantities and label values Kubernetes would reject', () => {
    expect(() => jobManifest(spec({}), 'job.yaml', { ...OPTIONS, memory: '16 GB' })).toThrow(/--memory '16 GB': not a Kubernetes quantity/);
    expect(() => jobManifest(spec({}), 'job.yaml', { ...OPTIONS, cpu: 'four' })).toThrow(/--cpu 'four'/);
    expect(() => jobManifest(spec({}), 'job.yaml', { ...OPTIONS, queue: 'team a' })).toThrow(/--queue 'team a': not a valid label value/);
    expect(() => jobManifest(spec({}), 'job.yaml', { ...OPTIONS, gpuProduct: 'NVIDIA A100' })).toThrow(/--gpu-product/);
  });

  it('the validator does reject a broken manifest (control)', () => {
    const job = jobManifest(spec({}), 'job.yaml', OPTIONS) as unknown as { spec: { template: { spec: { restartPolicy: string } } } };
    job.spec.template.spec.restartPolicy = 'Sometimes';
    expect(() => new Job(job as never).validate()).toThrow(/restartPolicy/);
    const pod = jobManifest(spec({}), 'job.yaml', { ...OPTIONS, kind: 'Pod' }) as unknown as { spec: { activeDeadlineSeconds: unknown } };
    pod.spec.activeDeadlineSeconds = 'soon';
    expect(() => new Pod(pod as never).validate()).toThrow(/activeDeadlineSeconds/);
    const withShm = jobManifest(spec({}), 'job.yaml', { ...OPTIONS, kind: 'Pod', shm: '8Gi', cpu: '4' }) as unknown as { spec: { volumes: { emptyDir: { sizeLimit: string } }[]; containers: { resources: { requests: { cpu: string } } }[] } };
    expect(() => new Pod(withShm as never).validate()).not.toThrow();
    (withShm.spec.volumes[0] as { emptyDir: { sizeLimit: string } }).emptyDir.sizeLimit = 'lots';
    expect(() => new Pod(withShm as never).validate()).toThrow(/sizeLimit must match format "quantity"/);
  });

  it('the ConfigMap migpool writes, and its node label and cordon patches, are valid', () => {
    const model = resolveGpuModel('A100-SXM4-40GB');
    const view = { name: 'gpu-node-1', product: 'NVIDIA-A100-SXM4-40GB', model } as unknown as K8sNodeView;
    const cfg = nodeConfig(view, [null, [{ profile: '1g.5gb', start: 0 }, { profile: '3g.20gb', start: 4 }]]);
    const edit = editMigConfigs(DEFAULT_CONFIG, { [cfg.name]: cfg.entries }, new Set(), 'cm');
    const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'default-mig-parted-config', namespace: 'gpu-operator', resourceVersion: '1234' }, data: { 'config.yaml': edit.text } };
    expect(() => new ConfigMap(cm as never).validate()).not.toThrow();
    expect(() => new ConfigMap({ ...cm, data: { 'config.yaml': 7 } } as never).validate()).toThrow();

    const labels = { 'nvidia.com/mig.config': cfg.name, 'nvidia.com/mig.config.state': null };
    expectLabelsValid(labels);
    const node = { apiVersion: 'v1', kind: 'Node', metadata: { name: 'gpu-node-1', labels: { 'nvidia.com/mig.config': cfg.name } }, spec: { unschedulable: true } };
    expect(() => new Node(node as never).validate()).not.toThrow();
    expect(() => new Node({ ...node, spec: { unschedulable: 'yes' } } as never).validate()).toThrow();
  });
});

describe('jobManifest', () => {
  it('maps each field of the job spec', () => {
    const job = jobManifest(
      spec({ resources: { memory: '12GiB' }, env: { WANDB_MODE: 'offline' }, workdir: '/work', maxRuntime: '90m', retries: 3, priority: 'background', workload: 'small' }),
      'job.yaml',
      OPTIONS,
    );
    expect(job).toMatchObject({
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: 'resnet-cifar-v2', annotations: { 'migpool.io/job-name': 'resnet_CIFAR.v2', 'migpool.io/workload': 'small' }, labels: { 'migpool.io/priority': 'background' } },
      spec: {
        backoffLimit: 3,
        template: {
          spec: {
            restartPolicy: 'Never',
            priorityClassName: 'migpool-background',
            activeDeadlineSeconds: 5400,
            containers: [{ image: OPTIONS.image, command: ['python'], args: ['train.py'], workingDir: '/work', env: [{ name: 'WANDB_MODE', value: 'offline' }], resources: { limits: { 'nvidia.com/mig-3g.20gb': 1 } } }],
          },
        },
      },
    });
  });

  it('names resources as the device plugin does, and whole GPUs as nvidia.com/gpu', () => {
    const limits = (raw: Record<string, unknown>, o: ManifestOptions = OPTIONS): unknown =>
      ((jobManifest(raw, 'j', { ...o, kind: 'Pod' }).spec['containers'] as { resources: { limits: unknown } }[])[0]?.resources.limits);
    expect(limits(spec({ resources: { profile: '1g.5gb+me' } }))).toEqual({ 'nvidia.com/mig-1g.5gb.me': 1 });
    expect(limits(spec({ resources: { gpus: 2 } }))).toEqual({ 'nvidia.com/gpu': 2 });
    // Memory as nvidia-smi reports it: a 2g.20gb holds 19.62 GiB, so 20 GiB needs a 3g.40gb.
    expect(limits(spec({ resources: { memory: '16GiB' } }), { ...OPTIONS, gpu: 'H100-80GB' })).toEqual({ 'nvidia.com/mig-1g.20gb': 1 });
    expect(limits(spec({ resources: { memory: '20GiB' } }), { ...OPTIONS, gpu: 'H100-80GB' })).toEqual({ 'nvidia.com/mig-3g.40gb': 1 });
  });

  it('refuses what cannot be expressed, naming the fix', () => {
    expect(() => jobManifest(spec({ resources: { memory: '8GiB' } }), 'job.yaml', { ...OPTIONS, gpu: undefined } as ManifestOptions)).toThrow(/resources.memory needs --gpu MODEL/);
    expect(() => jobManifest(spec({ resources: { memory: '100GiB' } }), 'job.yaml', OPTIONS)).toThrow(/more than any MIG profile of A100-40GB holds.*resources.gpus/);
    expect(() => jobManifest(spec({ resources: { profile: '1g.10gb' } }), 'job.yaml', { ...OPTIONS, gpu: 'A30' })).toThrow(/not offered by A30/);
    expect(() => jobManifest(spec({ retries: 1 }), 'job.yaml', { ...OPTIONS, kind: 'Pod' })).toThrow(/--kind Job/);
    expect(() => jobManifest(spec({ name: '___' }), 'job.yaml', OPTIONS)).toThrow(/no letter or digit/);
  });
});
