import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { resolveGpuModel } from '../mig/catalog/index.js';
import { gresConfLines, gresItems, rewriteGresConf, rewriteSlurmConfGres, sameGres } from './conf.js';
import { formatGres, parseGres, parseSacctLines, parseScontrolNodes, parseSqueueJson, parseSqueueLines, splitWaitStatus } from './parse.js';
import { blockedReason, nodeMigPartedConfig, planSlurm, profileOfGresType } from './plan.js';
import { parseSiteFile } from './site.js';

const fixture = (name: string) => readFileSync(new URL(`../../test/fixtures/slurm/${name}`, import.meta.url), 'utf8');
const A100 = resolveGpuModel('A100-SXM4-40GB');

describe('Slurm parsers over Slurm 22.05.8 output', () => {
  it('reads GRES lists in every form Slurm prints', () => {
    expect(parseGres('gpu:2g.10gb:1(IDX:0),gpu:1g.5gb:2(IDX:1-2)')).toEqual([
      { name: 'gpu', type: '2g.10gb', count: 1 },
      { name: 'gpu', type: '1g.5gb', count: 2 },
    ]);
    expect(parseGres('gres:gpu:1')).toEqual([{ name: 'gpu', type: null, count: 1 }]);
    expect(parseGres('gpu:a100:4(S:0,1),gpu')).toEqual([
      { name: 'gpu', type: 'a100', count: 4 },
      { name: 'gpu', type: null, count: 1 },
    ]);
    expect(parseGres('(null)')).toEqual([]);
    expect(formatGres(parseGres('gpu:1g.5gb:7,gpu:2'))).toBe('gpu:1g.5gb:7,gpu:2');
  });

  it('reads squeue --json: states, typed and untyped GRES, exit codes from wait statuses', () => {
    const jobs = parseSqueueJson(fixture('squeue.json'));
    expect(jobs.map((j) => [j.id, j.state, formatGres(j.gres)])).toEqual([
      ['1', 'FAILED', 'gpu:1g.5gb:2'],
      ['2', 'RUNNING', 'gpu:1g.5gb:2'],
      ['3', 'RUNNING', 'gpu:2g.10gb:1'],
      ['4', 'FAILED', 'gpu:3g.20gb:1'],
      ['5', 'PENDING', 'gpu:1g.5gb:2'],
      ['6', 'PENDING', 'gpu:1'],
    ]);
    expect(jobs[0]).toMatchObject({ exitCode: 3, signal: null, stdout: '/tmp/sj/o.log', name: 'migpool-x' });
    expect(jobs[1]).toMatchObject({ exitCode: null, nodes: 'vm' });
    expect(jobs[4]).toMatchObject({ reason: 'Resources', nodes: '' });
    expect(splitWaitStatus(9)).toEqual({ exitCode: null, signal: 9 });
    expect(() => parseSqueueJson('squeue: error')).toThrow(/not JSON/);
  });

  it('reads the squeue -o fallback the same way', () => {
    const lines = parseSqueueLines(fixture('squeue-o.txt'));
    const json = parseSqueueJson(fixture('squeue.json'));
    const key = (j: { id: string; state: string; gres: unknown; name: string }) => [j.id, j.state, j.name, j.gres];
    expect(lines.map(key).sort()).toEqual(json.map(key).sort());
  });

  it('reads scontrol show node -o -d: GRES, GRES in use, state, and reasons with spaces', () => {
    const [n] = parseScontrolNodes(fixture('scontrol-show-node.txt'));
    expect(n).toMatchObject({ name: 'vm', state: 'ALLOCATED', reason: null, features: [] });
    expect(formatGres(n!.gres)).toBe('gpu:2g.10gb:1,gpu:1g.5gb:3');
    expect(formatGres(n!.gresUsed)).toBe('gpu:2g.10gb:1,gpu:1g.5gb:2');
    const drained = parseScontrolNodes('NodeName=g1 Arch=x86_64 State=IDLE+DRAIN Gres=gpu:1 Reason=migpool-repartition [root@2026-11-22T09:00:00] Comment=(null)\n');
    expect(drained[0]).toMatchObject({ state: 'IDLE+DRAIN', reason: 'migpool-repartition [root@2026-11-22T09:00:00]' });
  });

  it('reads sacct --parsable2 lines', () => {
    expect(parseSacctLines('12|COMPLETED|0:0\n13|CANCELLED by 0|0:15\n14|FAILED|3:0\n')).toEqual([
      { id: '12', state: 'COMPLETED', exitCode: 0, signal: null },
      { id: '13', state: 'CANCELLED', exitCode: null, signal: 15 },
      { id: '14', state: 'FAILED', exitCode: 3, signal: null },
    ]);
  });
});

describe('slurm plan', () => {
  const site = parseSiteFile('defaults: {remote: []}\nnodes:\n  vm: {gpu: A100-SXM4-40GB, count: 1}\n', 'nodes.yaml', {});

  it('maps GRES types to profiles, as named plainly or by AutoDetect=nvml', () => {
    expect(profileOfGresType('1g.5gb', A100)).toBe('1g.5gb');
    expect(profileOfGresType('nvidia_a100_3g.20gb', A100)).toBe('3g.20gb');
    expect(profileOfGresType(null, A100)).toBe('gpu');
    expect(profileOfGresType('nvidia_a100-sxm4-40gb', A100)).toBe('gpu');
    expect(profileOfGresType('5g.9gb', A100)).toBeNull();
    expect(profileOfGresType('nvidia_h100_80gb_hbm3_7g.79gb', resolveGpuModel('H100-80GB'))).toBe('7g.80gb');
    const a80 = resolveGpuModel('A100-SXM4-80GB');
    expect(profileOfGresType('nvidia_a100_3g.39gb', a80)).toBe('3g.40gb');
    expect(profileOfGresType('nvidia_a100_3g.40gb', a80)).toBe('3g.40gb');
    expect(profileOfGresType('a100_4g.39gb', a80)).toBe('4g.40gb');
    expect(profileOfGresType('nvidia_a100_1g.10gb+me', a80)).toBe('1g.10gb+me');
    expect(profileOfGresType('nvidia_a100_1c.3g.40gb', a80)).toBe('3g.40gb');
    // Another GPU's type is no demand for this one.
    expect(profileOfGresType('nvidia_h100_80gb_hbm3_3g.40gb', a80)).toBeNull();
  });

  it('leaves a node with GPU jobs running alone, and plans for it with --force', () => {
    const nodes = parseScontrolNodes(fixture('scontrol-show-node.txt'));
    const jobs = parseSqueueJson(fixture('squeue.json'));
    const states = new Map([['vm', [{ index: 0, instances: [{ profile: '2g.10gb', start: 0 }, { profile: '1g.5gb', start: 2 }, { profile: '1g.5gb', start: 3 }, { profile: '1g.5gb', start: 4 }] }]]]);
    const plan = planSlurm(site, nodes, jobs, states);
    expect(plan.demand).toEqual({ '1g.5gb': 2, gpu: 1 });
    expect(plan.nodes[0]).toMatchObject({ changeable: false, changed: false, blocked: '3 GPU GRES in use (--force drains it and waits for them)' });
    // The one free 1g.5gb of the busy node serves one of the two requests.
    expect(plan.served).toEqual({ '1g.5gb': 1, gpu: 0 });
    const forced = planSlurm(site, nodes, jobs, states, true);
    expect(forced.nodes[0]!.changeable).toBe(true);
  });

  it('plans an idle node for the waiting jobs and writes the layout as a mig-parted config', () => {
    const idle = parseScontrolNodes('NodeName=vm State=IDLE Gres=gpu:1 GresUsed=gpu:0\n');
    const jobs = parseSqueueLines(Array.from({ length: 7 }, (_, i) => `${i + 1}|d|PENDING|gres:gpu:1g.5gb:1||PartitionDown`).join('\n'));
    const plan = planSlurm(site, idle, jobs, new Map([['vm', [{ index: 0, instances: null }]]]));
    expect(plan.nodes[0]).toMatchObject({ changeable: true, changed: true });
    expect(plan.unserved).toEqual({});
    expect(nodeMigPartedConfig(plan.nodes[0]!.planned, 'x')).toEqual({ version: 'v1', 'mig-configs': { x: [{ devices: [0], 'mig-enabled': true, 'mig-devices': { '1g.5gb': 7 } }] } });
    // Held jobs are not demand; a node drained by someone else is not touched.
    const held = parseSqueueLines('1|d|PENDING|gres:gpu:1g.5gb:1||JobHeldUser');
    expect(planSlurm(site, idle, held, new Map([['vm', [{ index: 0, instances: null }]]])).demand).toEqual({});
    expect(blockedReason(parseScontrolNodes('NodeName=vm State=IDLE+DRAIN Reason=disk swap [root@now]')[0], false)).toMatch(/drained for another reason/);
  });

  it('refuses a bad site file in one line naming the field', () => {
    expect(() => parseSiteFile('nodes:\n  vm: {gpu: A100-SXM4-40GB}\n', 'nodes.yaml')).toThrow(/nodes\.yaml: nodes\.vm\.count/);
    expect(() => parseSiteFile('nodes:\n  vm: {gpu: Z9, count: 1}\n', 'nodes.yaml')).toThrow(/nodes\.vm\.gpu/);
    // The real limit and the fix, in plain words (zod said 'Too big: expected number to be <=64').
    expect(() => parseSiteFile('nodes:\n  vm: {gpu: A100-SXM4-40GB, count: 1e308}\n', 'nodes.yaml')).toThrow(
      "nodes.yaml: nodes.vm.count: 1e+308 is more GPUs than a node here holds (at most 64 per node); give the node's GPU count, as `nvidia-smi -L` lists them; see README's Slurm section for the format",
    );
    expect(() => parseSiteFile('nodes:\n  vm: {gpu: A100-SXM4-40GB, count: 0}\n', 'nodes.yaml')).toThrow('nodes.vm.count: expected a number of at least 1, got 0');
    // Types named by profile are dropped by AutoDetect=nvml: only with explicit File= devices.
    expect(() => parseSiteFile('defaults: {gresTypes: profile}\nnodes:\n  vm: {gpu: A100-SXM4-80GB, count: 1}\n', 'nodes.yaml', {})).toThrow(/gresTypes: profile names types such as 3g\.40gb.*use gresTypes: nvml/);
    expect(parseSiteFile('defaults: {gresTypes: profile, devices: "/dev/nvidia{n}"}\nnodes:\n  vm: {gpu: A100-SXM4-80GB, count: 1}\n', 'nodes.yaml', {})[0]!.gresTypes).toBe('profile');
    expect(parseSiteFile('defaults: {slurmVersion: "22.05.8"}\nnodes:\n  vm: {gpu: A100-SXM4-80GB, count: 1}\n', 'nodes.yaml', {})[0]).toMatchObject({ gresTypes: 'nvml', slurmVersion: { major: 22, minor: 5, micro: 8 } });
    expect(() => parseSiteFile('nodes:\n  vm: {gpu: A100-SXM4-80GB, count: 1, slurmVersion: latest}\n', 'nodes.yaml', {})).toThrow(/nodes\.vm\.slurmVersion 'latest'/);
  });
});

describe('gres.conf and slurm.conf rewriting', () => {
  const records = [
    { gpuIndex: 0, type: 'nvidia_a100_1g.5gb', count: 2, profile: '1g.5gb', files: [], filesComplete: false },
    { gpuIndex: 0, type: 'nvidia_a100_1g.5gb', count: 1, profile: '1g.5gb+me', files: [], filesComplete: false },
    { gpuIndex: 1, type: 'nvidia_a100-sxm4-40gb', count: 1, profile: null, files: [], filesComplete: true },
  ];

  it('names GRES by profile or as AutoDetect=nvml does', () => {
    expect(formatGres(gresItems(records, 'profile'))).toBe('gpu:1g.5gb:3,gpu:1');
    expect(formatGres(gresItems(records, 'nvml'))).toBe('gpu:nvidia_a100_1g.5gb:3,gpu:nvidia_a100-sxm4-40gb:1');
  });

  it("replaces only the node's GPU lines", () => {
    const conf = '# site\nNodeName=a Name=gpu Type=1g.5gb File=/dev/x0\nNodeName=vm Name=gpu Type=2g.10gb File=/d/0\nNodeName=vm Name=mps Count=100\nNodeName=vm Name=gpu Type=1g.5gb File=/d/1\n';
    const lines = gresConfLines('vm', [{ name: 'gpu', type: '1g.5gb', count: 2 }], '/d/{n}');
    expect(rewriteGresConf(conf, 'vm', lines)).toBe('# site\nNodeName=a Name=gpu Type=1g.5gb File=/dev/x0\nNodeName=vm Name=gpu Type=1g.5gb File=/d/0\nNodeName=vm Name=gpu Type=1g.5gb File=/d/1\nNodeName=vm Name=mps Count=100\n');
  });

  it("sets the node's Gres= in slurm.conf, keeping other GRES and other nodes", () => {
    const conf = 'GresTypes=gpu,mps\nNodeName=vm CPUs=2 Gres=gpu:2g.10gb:1,mps:100 State=UNKNOWN\nNodeName=vm2 CPUs=2\n';
    const items = [{ name: 'gpu', type: '1g.5gb', count: 7 }];
    const one = (node: string) => rewriteSlurmConfGres([{ path: 'slurm.conf', text: conf }], node, items)[0]!.text;
    expect(one('vm')).toBe('GresTypes=gpu,mps\nNodeName=vm CPUs=2 Gres=mps:100,gpu:1g.5gb:7 State=UNKNOWN\nNodeName=vm2 CPUs=2\n');
    expect(one('vm2')).toContain('NodeName=vm2 CPUs=2 Gres=gpu:1g.5gb:7\n');
    expect(() => one('gpu7')).toThrow(/no NodeName= line declares gpu7/);
    expect(sameGres(parseGres('gpu:1g.5gb:7(S:0)'), items)).toBe(true);
  });
});
