import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { BIN, cli } from './run-cli.js';

const run = promisify(execFile);

interface Metrics {
  completed: number;
  makespanSeconds: number;
  avgJctSeconds: number;
  utilization: number;
}
interface SimulateJson {
  trace: string;
  fleet: string;
  jobs: number;
  policies: (Metrics & { name: string; byPriority: Record<'foreground' | 'background', Metrics & { jobs: number }> })[];
}

const POLICY_KEYS = [
  'name',
  'completed',
  'makespanSeconds',
  'avgJctSeconds',
  'p50JctSeconds',
  'p95JctSeconds',
  'p99JctSeconds',
  'avgQueueSeconds',
  'utilization',
  'throughputJobsPerHour',
  'reconfigurations',
  'slowdown',
  'bigJobs',
  'preemptions',
  'byPriority',
];

const dir = mkdtempSync(join(tmpdir(), 'migpool-simulate-'));

async function simulateJson(...argv: string[]): Promise<SimulateJson> {
  const { code, out, err } = await cli('simulate', ...argv, '--json');
  expect(err).toBe('');
  expect(code).toBe(0);
  return JSON.parse(out) as SimulateJson;
}

describe('migpool simulate', () => {
  it('replays the first Philly jobs: the JSON of the issue, policy names exactly as given', async () => {
    const policies = ['exclusive', 'timeslice:2', 'static:3g.20gb+2g.10gb+1g.5gb+1g.5gb', 'migpool'];
    const json = await simulateJson('--trace', 'philly', '--fleet', '8xA100-SXM4-40GB', '--policies', policies.join(','), '--limit', '40');
    expect(json.trace).toBe('philly');
    expect(json.fleet).toBe('8xA100-SXM4-40GB');
    expect(json.jobs).toBe(40);
    expect(Object.keys(json)).toEqual(['trace', 'fleet', 'jobs', 'info', 'preemptionCostSeconds', 'seed', 'seeds', 'bounds', 'unknownMemoryJobs', 'policies']);
    expect(json.policies.map((p) => p.name)).toEqual(policies);
    for (const p of json.policies) {
      expect(Object.keys(p)).toEqual(POLICY_KEYS);
      expect(p.completed).toBeGreaterThan(0);
      expect(p.byPriority.foreground.jobs).toBe(40);
      expect(p.byPriority.background.jobs).toBe(0);
    }
  });

  it('replays Alibaba pods, best-effort ones in the background', async () => {
    const json = await simulateJson('--trace', 'alibaba', '--fleet', '8xA100-SXM4-40GB', '--policies', 'exclusive,miso', '--limit', '60');
    expect(json.jobs).toBe(60);
    for (const p of json.policies) {
      expect(p.byPriority.background.jobs).toBeGreaterThan(0);
      expect(p.byPriority.foreground.jobs + p.byPriority.background.jobs).toBe(60);
    }
  });

  it('counts the jobs of unknown memory and places them only where their user allowed', async () => {
    const file = join(dir, 'unknown-memory.csv');
    // deeppool-vit-b32 has no memory figure: one job names no profile, one asks for 1g.5gb.
    writeFileSync(file, 'arrival,workload,gpus,duration,profile\n0,deeppool-vit-b32,1,600,\n0,deeppool-vit-b32,1,600,1g.5gb\n0,small,1,600,\n');
    const json = (await simulateJson('--trace', file, '--fleet', '1xA100-SXM4-40GB', '--policies', 'migpool')) as SimulateJson & { unknownMemoryJobs: number };
    expect(json.unknownMemoryJobs).toBe(2);
    expect(json.policies[0]?.completed).toBe(3);
    const { out } = await cli('simulate', '--trace', file, '--fleet', '1xA100-SXM4-40GB', '--policies', 'migpool');
    expect(out).toContain('2 of 3 jobs have unknown memory: placed only on a whole GPU or the profile they asked for');
  });

  it('generates a synthetic trace of --limit jobs, the same for the same seed', async () => {
    const args = ['--trace', 'synthetic', '--fleet', '4xA100-40GB', '--policies', 'exclusive,mps:2', '--limit', '50'];
    const a = await simulateJson(...args, '--seed', '5');
    expect(a.jobs).toBe(50);
    expect(a.policies.every((p) => p.completed === 50)).toBe(true);
    expect(await simulateJson(...args, '--seed', '5')).toEqual(a);
    expect(await simulateJson(...args, '--seed', '6')).not.toEqual(a);
  });

  it('reads a job CSV, prints a table per policy and per priority, and writes the HTML report', async () => {
    const file = join(dir, 'jobs.csv');
    writeFileSync(file, 'arrival,workload,gpus,duration,priority,profile\n0,small,1,600,background,\n0,small,1,600,,1g.5gb\n30,medium,1,1200,,\n60,large,2,900,,\n');
    const report = join(dir, 'report.html');
    const { code, out, err } = await cli('simulate', '--trace', file, '--fleet', '2xA100-SXM4-40GB', '--policies', 'exclusive,migpool', '--reconfigure-seconds', '5', '--report', report);
    expect(code).toBe(0);
    expect(out).toMatch(/: 4 jobs\nPOLICY\s+COMPLETED\s+MAKESPAN\s+AVG JCT/);
    expect(out).toMatch(/^exclusive\s+4\/4\s/m);
    expect(out).toMatch(/^migpool\s+4\/4\s/m);
    expect(out).toMatch(/^migpool\s+background\s+1\/1\s/m);
    expect(out).toContain(`report: ${report}`);
    expect(err).toMatch(/^note: seed 1; info noisy; preemption cost 60 s; mix /);
    const html = readFileSync(report, 'utf8');
    expect(html).toContain('<td>exclusive</td>');
    expect(html).toContain('<td>migpool</td>');
    expect(html.match(/<svg /g)).toHaveLength(4);
  });

  it('leaves the jobs no policy can run out of the bounds, and shows no big-job tail when no big job completed', async () => {
    // Found as a user: 'simulate --trace philly --fleet 8xA100-SXM4-40GB --limit 500' printed a makespan "lower bound" of
    // 520 d beside policies that ended by 464 d, and a BIG P99 JCT of '0 s' where no big job ran.
    const file = join(dir, 'too-big.csv');
    writeFileSync(file, 'arrival,workload,gpus,duration\n0,small,1,600\n0,small,4,100000\n');
    const { code, out, err } = await cli('simulate', '--trace', file, '--fleet', '2xA100-SXM4-40GB', '--policies', 'exclusive,migpool');
    expect(code).toBe(0);
    expect(out).toMatch(/^exclusive\s+1\/2\s+10\.0 min\s+10\.0 min\s.*\s-\s+0 \(0\)/m);
    expect(out).toContain('lower bounds: avg JCT 10.0 min, makespan 10.0 min (no policy can do better; over the jobs that can run, 1 of the trace never can)');
    expect(err).toContain("1 jobs ask for more GPUs than the fleet's 2: they never run");
  });

  it('reads a Philly or Alibaba file given as --trace FILE by its header', async () => {
    const philly = readFileSync(new URL('../data/traces/philly/philly.csv', import.meta.url), 'utf8').split('\n').slice(0, 21).join('\n');
    const file = join(dir, 'philly-head.csv');
    writeFileSync(file, philly);
    const json = await simulateJson('--trace', file, '--fleet', '8xA100-SXM4-40GB', '--policies', 'exclusive');
    expect(json.jobs).toBe(20);
  });

  it('runs from any directory as the installed command, with the traces of the package', async () => {
    const { stdout } = await run('node', [BIN, 'simulate', '--trace', 'philly', '--fleet', '4xA100-SXM4-40GB', '--policies', 'exclusive', '--limit', '10', '--json'], { cwd: dir });
    expect((JSON.parse(stdout) as SimulateJson).jobs).toBe(10);
  });

  it.each([
    [['--policies', 'fifo'], /^migpool: --policies: unknown policy 'fifo'/],
    [['--policies', 'exclusive,exclusive'], /^migpool: --policies: 'exclusive' is named twice/],
    [['--fleet', '8xV100'], /^migpool: --fleet: fleet term '8xV100'/],
    [['--fleet', 'eight'], /^migpool: --fleet: fleet term 'eight' is not COUNTxGPU/],
    [['--mix', 'small=0.5,tiny=0.5'], /^migpool: --mix: mix entry 'tiny=0.5': unknown workload 'tiny'/],
    [['--mix', 'small'], /^migpool: --mix: mix entry 'small' is not WORKLOAD=WEIGHT/],
    [['--limit', '0'], /^migpool: --limit must be a whole number of at least 1/],
    [['--seed', 'x'], /^migpool: --seed must be a whole number/],
    [['--reconfigure-seconds', '-1'], /^migpool: --reconfigure-seconds must be a non-negative number/],
    [['--trace', 'nowhere.csv'], /^migpool: --trace 'nowhere.csv': no such file/],
    [['--users', 'alice:2,bob:x'], /^migpool: --users: 'bob:x': the weight must be a positive number, got 'x'; e\.g\. alice:2,bob:1,carol:1:q4/],
    // The name rule of `migpool users add` (src/sched/user-rules.ts), in its words.
    [['--users', 'alice:1e300'], /^migpool: --users: 'alice:1e300': the weight 1e\+300 is too large: give a positive number \(1 is the default share; 2 is twice that\) up to 1000000\n$/],
    [['--users', 'alice:2,1bob:1'], /^migpool: --users: user name "1bob": use a letter, then letters, digits, _ \. - \(64 characters at most\)\n$/],
  ])('exits 2 with one line for %j', async (args, message) => {
    const defaults: Record<string, string> = { '--trace': 'synthetic', '--fleet': '2xA100-SXM4-40GB', '--policies': 'exclusive', '--limit': '5' };
    for (let i = 0; i < args.length; i += 2) defaults[args[i]!] = args[i + 1]!;
    const { code, out, err } = await cli('simulate', ...Object.entries(defaults).flat());
    expect(code).toBe(2);
    expect(out).toBe('');
    expect(err.trim().split('\n')).toHaveLength(1);
    expect(err).toMatch(message);
  });

  it('--users: gives jobs to users and reports each one\'s share against their weight, in text and JSON', async () => {
    const args = ['simulate', '--trace', 'synthetic', '--fleet', '4xA100-SXM4-40GB', '--policies', 'exclusive', '--limit', '60', '--arrival-rate', '20', '--users', 'alice:2,bob:1:q2'];
    const text = await cli(...args);
    expect(text.code).toBe(0);
    expect(text.out).toMatch(/per user: SHARE is the user's part/);
    expect(text.out).toMatch(/exclusive\s+alice\s+2\s+-\s+30\/30\s+[\d.]+%\s+66\.7%/);
    expect(text.out).toMatch(/exclusive\s+bob\s+1\s+2\s+30\/30\s+[\d.]+%\s+33\.3%/);
    const json = await cli(...args, '--json');
    const byUser = (JSON.parse(json.out) as { policies: { byUser: { user: string; weight: number; quotaGpus: number | null; peakGpus: number; contendedShare: number }[] }[] }).policies[0]!.byUser;
    expect(byUser.map((u) => [u.user, u.weight, u.quotaGpus])).toEqual([
      ['alice', 2, null],
      ['bob', 1, 2],
    ]);
    expect(byUser[1]!.peakGpus).toBeLessThanOrEqual(2);
    expect(byUser[0]!.contendedShare + byUser[1]!.contendedShare).toBeCloseTo(1, 9);
  });

  it('exits 2 with file:line and field for a bad CSV line, and for a profile the fleet lacks', async () => {
    const bad = join(dir, 'bad.csv');
    writeFileSync(bad, 'arrival,workload,gpus,duration\n0,small,1,60\n10,small,two,60\n');
    const a = await cli('simulate', '--trace', bad, '--fleet', '2xA100-SXM4-40GB', '--policies', 'exclusive');
    expect(a.code).toBe(2);
    expect(a.err.trim().split('\n')).toHaveLength(1);
    expect(a.err).toContain(`migpool: ${bad}:3: field 'gpus': expected a positive whole number of GPUs, got 'two'`);
    const h100 = join(dir, 'h100.csv');
    writeFileSync(h100, 'arrival,workload,gpus,duration,profile\n0,small,1,60,1g.5gb\n');
    const b = await cli('simulate', '--trace', h100, '--fleet', '2xH100-80GB', '--policies', 'exclusive');
    expect(b.code).toBe(2);
    expect(b.err).toMatch(/^migpool: job 'job-1' asks for MIG profile 1g\.5gb, which no GPU of fleet '2xH100-80GB'/);
  });
});
