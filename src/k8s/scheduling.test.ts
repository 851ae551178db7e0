import { describe, expect, it } from 'vitest';
import { schedulingGates, tolerates, whyNotOnNode, type NodePlacement } from './scheduling.js';

const node = (over: Partial<NodePlacement> = {}): NodePlacement => ({
  name: 'a100-1',
  labels: { 'nvidia.com/gpu.product': 'NVIDIA-A100-SXM4-40GB', pool: 'train', 'gpu.rank': '3' },
  taints: [],
  unschedulable: false,
  ...over,
});

describe('whyNotOnNode', () => {
  it('nodeSelector: every key with that value', () => {
    expect(whyNotOnNode({ nodeSelector: { pool: 'train' } }, node())).toBeNull();
    expect(whyNotOnNode({ nodeSelector: { pool: 'infer' } }, node())).toBe('nodeSelector pool=infer');
    expect(whyNotOnNode({ nodeSelector: { pool: 'train', zone: 'a' } }, node())).toBe('nodeSelector zone=a');
  });

  it('required node affinity: terms ORed, expressions ANDed, an empty term matches nothing', () => {
    const req = (...nodeSelectorTerms: unknown[]) => ({ affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms } } } }) as never;
    const inTrain = { matchExpressions: [{ key: 'pool', operator: 'In', values: ['train', 'dev'] }] };
    const inInfer = { matchExpressions: [{ key: 'pool', operator: 'In', values: ['infer'] }] };
    expect(whyNotOnNode(req(inTrain), node())).toBeNull();
    expect(whyNotOnNode(req(inInfer), node())).toBe('required node affinity');
    expect(whyNotOnNode(req(inInfer, inTrain), node())).toBeNull();
    expect(whyNotOnNode(req({ matchExpressions: [...inTrain.matchExpressions, { key: 'zone', operator: 'Exists' }] }), node())).toBe('required node affinity');
    expect(whyNotOnNode(req({}), node())).toBe('required node affinity');
    expect(whyNotOnNode(req({ matchExpressions: [{ key: 'pool', operator: 'NotIn', values: ['infer'] }, { key: 'zone', operator: 'DoesNotExist' }] }), node())).toBeNull();
    expect(whyNotOnNode(req({ matchExpressions: [{ key: 'gpu.rank', operator: 'Gt', values: ['2'] }] }), node())).toBeNull();
    expect(whyNotOnNode(req({ matchExpressions: [{ key: 'gpu.rank', operator: 'Lt', values: ['2'] }] }), node())).toBe('required node affinity');
    expect(whyNotOnNode(req({ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['a100-1'] }] }), node())).toBeNull();
    expect(whyNotOnNode(req({ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['a100-2'] }] }), node())).toBe('required node affinity');
  });

  it('NoSchedule and NoExecute taints need a toleration; PreferNoSchedule does not', () => {
    const tainted = node({ taints: [{ key: 'dedicated', value: 'infer', effect: 'NoSchedule' }] });
    expect(whyNotOnNode({}, tainted)).toBe('taint dedicated=infer:NoSchedule');
    expect(whyNotOnNode({ tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'infer', effect: 'NoSchedule' }] }, tainted)).toBeNull();
    expect(whyNotOnNode({ tolerations: [{ key: 'dedicated', value: 'train' }] }, tainted)).toBe('taint dedicated=infer:NoSchedule');
    expect(whyNotOnNode({ tolerations: [{ key: 'dedicated', operator: 'Exists' }] }, tainted)).toBeNull();
    expect(whyNotOnNode({ tolerations: [{ operator: 'Exists' }] }, tainted)).toBeNull();
    expect(whyNotOnNode({ tolerations: [{ key: 'dedicated', operator: 'Exists', effect: 'NoExecute' }] }, tainted)).toBe('taint dedicated=infer:NoSchedule');
    expect(whyNotOnNode({}, node({ taints: [{ key: 'x', effect: 'PreferNoSchedule' }] }))).toBeNull();
    expect(whyNotOnNode({}, node({ taints: [{ key: 'nvidia.com/gpu', effect: 'NoExecute' }] }))).toBe('taint nvidia.com/gpu:NoExecute');
  });

  it('a cordoned node takes only pods that tolerate node.kubernetes.io/unschedulable', () => {
    expect(whyNotOnNode({}, node({ unschedulable: true }))).toBe('cordoned');
    expect(whyNotOnNode({ tolerations: [{ key: 'node.kubernetes.io/unschedulable', operator: 'Exists', effect: 'NoSchedule' }] }, node({ unschedulable: true }))).toBeNull();
  });

  it('toleration matching follows Toleration.ToleratesTaint', () => {
    expect(tolerates({ key: '', operator: 'Equal' }, { key: 'a', effect: 'NoSchedule' })).toBe(false);
    expect(tolerates({ key: 'a' }, { key: 'a', effect: 'NoSchedule' })).toBe(true);
    expect(tolerates({ key: 'a', value: 'v' }, { key: 'a', effect: 'NoSchedule' })).toBe(false);
  });

  it('scheduling gates', () => {
    expect(schedulingGates({ schedulingGates: [{ name: 'kueue.x-k8s.io/admission' }] })).toEqual(['kueue.x-k8s.io/admission']);
    expect(schedulingGates({})).toEqual([]);
  });
});
