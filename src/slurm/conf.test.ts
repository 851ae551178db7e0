import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MigpoolError } from '../errors.js';
import { readSlurmConfFiles } from './apply.js';
import { addAccountingTres, gresConfLines, includedPaths, rewriteGresConf, rewriteSlurmConfGres } from './conf.js';

const items = [
  { name: 'gpu', type: 'nvidia_a100_3g.39gb', count: 2 },
  { name: 'gpu', type: 'nvidia_a100_1g.10gb', count: 1 },
];

describe('slurm.conf node lines as sites write them', () => {
  it('splits a node out of a host list, keeping the others and pairing NodeAddr and Port', () => {
    const text = 'NodeName=DEFAULT CPUs=64 RealMemory=512000\nNodeName=gpu[01-04] NodeAddr=10.0.0.[1-4] Port=[6818-6821] Gres=gpu:nvidia_a100_7g.79gb:1 State=UNKNOWN # A100 nodes\nNodeName=cpu01\n';
    const [out] = rewriteSlurmConfGres([{ path: '/etc/slurm/nodes.conf', text }], 'gpu02', items);
    expect(out!.path).toBe('/etc/slurm/nodes.conf');
    expect(out!.text.split('\n')).toEqual([
      'NodeName=DEFAULT CPUs=64 RealMemory=512000',
      'NodeName=gpu[01,03-04] NodeAddr=10.0.0.[1,3-4] Port=[6818,6820-6821] Gres=gpu:nvidia_a100_7g.79gb:1 State=UNKNOWN # A100 nodes',
      'NodeName=gpu02 NodeAddr=10.0.0.2 Port=6819 Gres=gpu:nvidia_a100_3g.39gb:2,gpu:nvidia_a100_1g.10gb:1 State=UNKNOWN',
      'NodeName=cpu01',
      '',
    ]);
  });

  it('finds the node in an included file and changes only that file; keys in any case', () => {
    const files = [
      { path: '/etc/slurm/slurm.conf', text: 'ClusterName=c\ninclude nodes.conf\n' },
      { path: '/etc/slurm/nodes.conf', text: 'nodename=gpu[1-2] gres=gpu:2\n' },
    ];
    const out = rewriteSlurmConfGres(files, 'gpu1', items);
    expect(out).toEqual([{ path: '/etc/slurm/nodes.conf', text: 'nodename=gpu2 gres=gpu:2\nnodename=gpu1 gres=gpu:nvidia_a100_3g.39gb:2,gpu:nvidia_a100_1g.10gb:1\n' }]);
    expect(() => rewriteSlurmConfGres(files, 'gpu9', items)).toThrow(MigpoolError);
  });

  it('resolves Include paths: relative to slurm.conf, %c the cluster name', () => {
    expect(includedPaths('Include nodes.conf\n# Include x\nINCLUDE /abs/%c_gres.conf\n', '/etc/slurm', 'ml')).toEqual(['/etc/slurm/nodes.conf', '/abs/ml_gres.conf']);
    expect(() => includedPaths('Include %c.conf', '/etc/slurm', null)).toThrow(/ClusterName/);
  });

  it('reads slurm.conf with what it includes, and names the file it cannot read', () => {
    const dir = mkdtempSync(join(tmpdir(), 'migpool-conf-'));
    try {
      writeFileSync(join(dir, 'slurm.conf'), 'ClusterName=ml\nInclude %c-nodes.conf\n');
      writeFileSync(join(dir, 'ml-nodes.conf'), 'NodeName=gpu[01-02]\nInclude more.conf\n');
      writeFileSync(join(dir, 'more.conf'), 'NodeName=gpu03\n');
      expect(readSlurmConfFiles(join(dir, 'slurm.conf')).map((f) => f.path)).toEqual([join(dir, 'slurm.conf'), join(dir, 'ml-nodes.conf'), join(dir, 'more.conf')]);
      writeFileSync(join(dir, 'slurm.conf'), 'Include missing.conf\n');
      expect(() => readSlurmConfFiles(join(dir, 'slurm.conf'))).toThrow(/cannot read .*missing\.conf/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('adds new GPU types to AccountingStorageTRES where it is set, and only then', () => {
    const files = [{ path: 's', text: 'AccountingStorageTRES=gres/gpu,gres/gpu:nvidia_a100_1g.10gb  # tracked\nNodeName=a\n' }];
    const r = addAccountingTres(files, items);
    expect(r.added).toEqual(['gres/gpu:nvidia_a100_3g.39gb']);
    expect(r.files[0]!.text).toBe('AccountingStorageTRES=gres/gpu,gres/gpu:nvidia_a100_1g.10gb,gres/gpu:nvidia_a100_3g.39gb # tracked\nNodeName=a\n');
    expect(addAccountingTres(r.files, items).added).toEqual([]);
    expect(addAccountingTres([{ path: 's', text: 'NodeName=a\n' }], items)).toEqual({ files: [], added: [] });
    expect(addAccountingTres([{ path: 's', text: 'AccountingStorageTRES=license/x\n' }], items).added).toEqual(['gres/gpu', 'gres/gpu:nvidia_a100_3g.39gb', 'gres/gpu:nvidia_a100_1g.10gb']);
  });
});

describe('gres.conf with host lists', () => {
  it("gives the node its own lines and leaves the others' shared line", () => {
    const conf = 'AutoDetect=off\nNodeName=gpu[01-03] Name=gpu Type=nvidia_a100_7g.79gb File=/dev/nvidia0\nNodeName=gpu[01-03] Name=mps Count=100\n';
    const lines = gresConfLines('gpu02', [{ name: 'gpu', type: 'nvidia_a100_1g.10gb', count: 2 }], '/dev/nvidia{n}');
    expect(rewriteGresConf(conf, 'gpu02', lines)).toBe(
      'AutoDetect=off\nNodeName=gpu[01,03] Name=gpu Type=nvidia_a100_7g.79gb File=/dev/nvidia0\nNodeName=gpu02 Name=gpu Type=nvidia_a100_1g.10gb File=/dev/nvidia0\nNodeName=gpu02 Name=gpu Type=nvidia_a100_1g.10gb File=/dev/nvidia1\nNodeName=gpu[01-03] Name=mps Count=100\n',
    );
    expect(() => rewriteGresConf('NodeName=gpu[1-2] Name=gpu File=/dev/nvidia[0-3]\n', 'gpu1', lines)).toThrow(/File= range shared/);
  });
});
