import type { Command } from 'commander';
import { badInput, MigpoolError } from '../../errors.js';
import { decimalValue } from '../../decimal-number.js';
import { applySlurmPlan } from '../../slurm/apply.js';
import { execRunner, SlurmClient, type CommandRunner } from '../../slurm/client.js';
import { layoutText, planSlurm, type NodeGpuState, type SlurmPlan } from '../../slurm/plan.js';
import { loadSiteFile, type SiteNode } from '../../slurm/site.js';
import { localSlurmVersion } from '../../slurm/version.js';
import { writeJson, type Io } from '../io.js';
import { renderTable } from '../table.js';

interface SlurmFlags {
  nodes: string;
  force?: boolean;
  json?: boolean;
  dryRun?: boolean;
  drainTimeout: string;
}

/** A node's GPUs from `migpool status --json` run there. */
export function parseNodeStatus(json: string, node: string): NodeGpuState[] {
  let doc: unknown;
  try {
    doc = JSON.parse(json);
  } catch {
    throw new MigpoolError('RUNTIME', `migpool status --json on ${node} printed something that is not JSON`);
  }
  const gpus = (doc as { gpus?: unknown }).gpus;
  if (!Array.isArray(gpus)) throw new MigpoolError('RUNTIME', `migpool status --json on ${node} printed no gpus list`);
  return gpus.map((g: { index: number; migMode: { current: string } | null; gpuInstances: { profile: string; start: number }[] }) => ({
    index: g.index,
    instances: g.migMode?.current === 'enabled' ? g.gpuInstances.map((i) => ({ profile: i.profile, start: i.start })) : null,
  }));
}

/** Reads Slurm and each site node's GPUs, and plans. */
export async function gatherPlan(site: readonly SiteNode[], force: boolean, run: CommandRunner = execRunner): Promise<{ plan: SlurmPlan; notes: string[] }> {
  const client = new SlurmClient(run);
  const [nodes, jobs] = await Promise.all([client.nodes(), client.jobs()]);
  const states = new Map<string, NodeGpuState[]>();
  const notes: string[] = [];
  for (const s of site) {
    const argv = [...s.remote, ...s.migpool, 'status', '--json'];
    const r = await run(argv[0]!, argv.slice(1), { timeoutMs: 120_000 });
    if (r.code !== 0) {
      notes.push(`${s.name}: ${argv.join(' ')} failed (exit ${r.code}): ${r.stderr.trim().split('\n').at(-1) ?? ''}`);
      continue;
    }
    states.set(s.name, parseNodeStatus(r.stdout, s.name));
  }
  return { plan: planSlurm(site, nodes, jobs, states, force), notes };
}

function counts(c: Readonly<Record<string, number>>): string {
  const entries = Object.entries(c);
  return entries.length === 0 ? 'none' : entries.map(([p, n]) => `${n}x${p}`).join(', ');
}

function renderPlan(plan: SlurmPlan): string {
  const rows = plan.nodes.map((n) => [
    n.name,
    n.model,
    n.current.map(layoutText).join(' | ') || '?',
    n.changed ? n.planned.map(layoutText).join(' | ') : 'unchanged',
    n.changeable ? 'yes' : `no: ${n.blocked}`,
  ]);
  const lines = [renderTable(['NODE', 'GPU', 'NOW', 'PLANNED', 'CHANGEABLE'], rows)];
  lines.push(`waiting: ${counts(plan.demand)}; served: ${counts(plan.served)}; left waiting: ${counts(plan.unserved)}`);
  if (Object.keys(plan.unknownTypes).length > 0) lines.push(`GRES types no site GPU has: ${counts(plan.unknownTypes)}`);
  return lines.join('\n');
}

function planJson(plan: SlurmPlan) {
  return {
    demand: plan.demand,
    served: plan.served,
    unserved: plan.unserved,
    unknownTypes: plan.unknownTypes,
    nodes: plan.nodes.map((n) => ({ ...n, blocked: n.blocked === '' ? null : n.blocked })),
  };
}

/** `migpool slurm plan|apply`. */
export function registerSlurm(program: Command, io: Io): void {
  const slurm = program.command('slurm').description('choose and apply MIG layouts for Slurm GPU nodes from the jobs waiting in its queue');
  const common = (c: Command) =>
    c
      .requiredOption('--nodes <file>', 'site file: the GPU nodes migpool may re-partition, their GPUs and how to reach them (README: Slurm)')
      .option('--force', 'also plan for nodes with GPU jobs running (apply drains them and waits for those jobs to end)')
      .option('--json', 'print JSON');
  common(slurm.command('plan').description("print the layouts migpool would give the nodes whose GPU slices are idle, for Slurm's pending GPU jobs")).action(async (f: SlurmFlags) => {
    const site = loadSiteFile(f.nodes);
    const { plan, notes } = await gatherPlan(site, f.force === true);
    for (const n of notes) io.err(`warning: ${n}`);
    if (f.json) return writeJson(io, planJson(plan));
    io.out(renderPlan(plan));
  });
  common(slurm.command('apply').description('plan, then per changed node: drain, wait for its GPU jobs, re-partition it, rewrite its gres.conf/Gres= (Include files and host lists too) and AccountingStorageTRES, scontrol reconfigure (Slurm 23.11+) or restart the daemons that must be, resume'))
    .option('--dry-run', 'print the plan and the commands, change nothing')
    .option('--drain-timeout <seconds>', "how long to wait for a drained node's GPU jobs to end", '600')
    .action(async (f: SlurmFlags) => {
      const drain = decimalValue(f.drainTimeout);
      if (!(Number.isFinite(drain) && drain >= 0)) throw badInput(`--drain-timeout '${f.drainTimeout}': give seconds >= 0`);
      const site = loadSiteFile(f.nodes);
      const { plan, notes } = await gatherPlan(site, f.force === true);
      for (const n of notes) io.err(`warning: ${n}`);
      const slurmVersion = await localSlurmVersion(execRunner, [['scontrol', '--version']]);
      const results = await applySlurmPlan(plan, site, { dryRun: f.dryRun === true, drainTimeoutSeconds: drain, slurmVersion, log: f.json ? undefined : (l) => io.err(`migpool slurm apply: ${l}`) });
      if (f.json) writeJson(io, { plan: planJson(plan), results });
      else {
        io.out(renderPlan(plan));
        if (results.length === 0) io.out('nothing to change');
        for (const r of results) {
          io.out(r.message);
          if (f.dryRun) for (const c of r.commands) io.out(`  ${c.join(' ')}`);
        }
      }
      const failed = results.filter((r) => !r.ok);
      if (failed.length > 0) throw new MigpoolError('RUNTIME', `${failed.length} of ${results.length} nodes not re-partitioned: ${failed.map((r) => r.message).join(' | ')}`);
    });
}
