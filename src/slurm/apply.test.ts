import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseSlurmVersion } from '../partition/slurm-gres-type.js';
import { applySlurmPlan } from './apply.js';
import type { CommandRunner } from './client.js';
import type { SlurmPlan } from './plan.js';
import { parseSiteFile } from './site.js';

/** A Slurm and a node that answer like the real ones: the node offers the new GRES once Slurm re-read its files. */
function fakeSlurm(before: string, exported: { type: string; count: number; profile: string }[]) {
  const calls: string[] = [];
  let gres = before;
  const after = exported.map((r) => `gpu:${r.type}:${r.count}`).join(',');
  const run: CommandRunner = async (file, args) => {
    const line = [file, ...args].join(' ');
    calls.push(line);
    if (line.startsWith('scontrol show node')) return { code: 0, stdout: `NodeName=gpu02 State=IDLE+DRAIN Reason=migpool-repartition Gres=${gres} GresUsed=gpu:0\n`, stderr: '' };
    if (args.includes('export')) return { code: 0, stdout: JSON.stringify({ gres: exported.map((r) => ({ gpuIndex: 0, files: [], filesComplete: false, ...r })) }), stderr: '' };
    if (line === 'scontrol reconfigure' || line.startsWith('restart-ctld')) gres = after;
    return { code: 0, stdout: '', stderr: '' };
  };
  return { run, calls };
}

const plan: SlurmPlan = {
  demand: {},
  served: {},
  unserved: {},
  unknownTypes: {},
  nodes: [{ name: 'gpu02', model: 'A100-80GB', changeable: true, blocked: '', current: [null], planned: [[{ profile: '3g.40gb', start: 0 }, { profile: '3g.40gb', start: 4 }]], changed: true }],
};

describe('slurm apply: files and how Slurm is made to read them', () => {
  let dir: string;
  let site: ReturnType<typeof parseSiteFile>;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'migpool-apply-'));
    writeFileSync(join(dir, 'slurm.conf'), 'ClusterName=ml\nAccountingStorageTRES=gres/gpu\nGresTypes=gpu\nInclude nodes.conf\n');
    writeFileSync(join(dir, 'nodes.conf'), 'NodeName=gpu[01-03] CPUs=64 Gres=gpu:nvidia_a100-sxm4-80gb:1\n');
    const yaml = `defaults: {remote: [], migpool: [migpool], slurmConf: ${join(dir, 'slurm.conf')}, restartSlurmd: [restart-slurmd], restartController: [restart-ctld]}\nnodes:\n  gpu02: {gpu: A100-SXM4-80GB, count: 1}\n`;
    site = parseSiteFile(yaml, 'nodes.yaml', {});
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  const exported = [{ type: 'nvidia_a100_3g.39gb', count: 2, profile: '3g.40gb' }];

  it('Slurm 22.05, GPU count 1 -> 2 and a new TRES: rewrites the included file, restarts slurmd then slurmctld and says why', async () => {
    const fake = fakeSlurm('gpu:nvidia_a100-sxm4-80gb:1', exported);
    const [r] = await applySlurmPlan(plan, site, { run: fake.run, slurmVersion: parseSlurmVersion('slurm 22.05.8'), pollMs: 1, sleep: async () => undefined });
    expect(r).toMatchObject({ ok: true, gres: 'gpu:nvidia_a100_3g.39gb:2', reload: { how: 'restart-slurmd+slurmctld' } });
    expect(r!.reload!.why).toMatch(/GPU count changes from 1 to 2.*AccountingStorageTRES gains gres\/gpu:nvidia_a100_3g\.39gb/);
    expect(readFileSync(join(dir, 'nodes.conf'), 'utf8')).toBe('NodeName=gpu[01,03] CPUs=64 Gres=gpu:nvidia_a100-sxm4-80gb:1\nNodeName=gpu02 CPUs=64 Gres=gpu:nvidia_a100_3g.39gb:2\n');
    expect(readFileSync(join(dir, 'slurm.conf'), 'utf8')).toContain('AccountingStorageTRES=gres/gpu,gres/gpu:nvidia_a100_3g.39gb\n');
    expect(fake.calls.filter((c) => /restart|reconfigure/.test(c))).toEqual(['restart-slurmd', 'restart-ctld']);
    expect(fake.calls.at(-1)).toBe('scontrol update nodename=gpu02 state=resume');
  });

  it('Slurm 22.05, same GPU count and types already tracked: restarts slurmd only, then scontrol reconfigure', async () => {
    writeFileSync(join(dir, 'slurm.conf'), 'AccountingStorageTRES=gres/gpu,gres/gpu:nvidia_a100_3g.39gb\nInclude nodes.conf\n');
    const fake = fakeSlurm('gpu:nvidia_a100_1g.10gb:2', exported);
    const [r] = await applySlurmPlan(plan, site, { run: fake.run, slurmVersion: parseSlurmVersion('22.05.8'), pollMs: 1, sleep: async () => undefined });
    expect(r).toMatchObject({ ok: true, reload: { how: 'restart-slurmd' } });
    expect(fake.calls.filter((c) => /restart|reconfigure/.test(c))).toEqual(['restart-slurmd', 'scontrol reconfigure']);
  });

  it('Slurm 23.11 and later: scontrol reconfigure alone, no daemon restarted', async () => {
    const fake = fakeSlurm('gpu:nvidia_a100-sxm4-80gb:1', [{ type: 'nvidia_a100_3g.40gb', count: 2, profile: '3g.40gb' }]);
    const [r] = await applySlurmPlan(plan, site, { run: fake.run, slurmVersion: parseSlurmVersion('slurm 24.11.1'), pollMs: 1, sleep: async () => undefined });
    expect(r).toMatchObject({ ok: true, gres: 'gpu:nvidia_a100_3g.40gb:2', reload: { how: 'reconfigure' } });
    expect(fake.calls.filter((c) => /restart|reconfigure/.test(c))).toEqual(['scontrol reconfigure']);
    const dry = await applySlurmPlan(plan, site, { run: fake.run, slurmVersion: parseSlurmVersion('slurm 24.11.1'), dryRun: true });
    expect(dry[0]!.commands.map((c) => c.join(' '))).toContain('scontrol reconfigure');
    expect(dry[0]!.message).toMatch(/Slurm 24\.11\.1: scontrol reconfigure restarts the daemons itself/);
  });
});
