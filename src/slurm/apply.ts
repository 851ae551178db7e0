/**
 * `migpool slurm apply`: carries out a plan node by node. For each node whose layout changes:
 * 1. `scontrol update nodename=N state=drain reason=migpool-repartition`;
 * 2. waits until no GPU GRES of the node is in use (`scontrol show node -o -d`, GresUsed);
 * 3. on the node (through the site's remote prefix): `migpool apply -f - -c migpool-slurm`, the
 *    node's new layouts as a mig-parted config on stdin, then `migpool export --format slurm --json`
 *    for the GRES it now has, typed as that node's slurmd will name them (its version decides);
 * 4. rewrites the node's `Name=gpu` lines in gres.conf (when the site gives device files) and its
 *    `Gres=` in slurm.conf or the file slurm.conf `Include`s that declares it (a node in a host
 *    list such as `NodeName=gpu[01-04]` gets a line of its own), and adds the new types to
 *    `AccountingStorageTRES` where that is set;
 * 5. makes Slurm read it: from Slurm 23.11 `scontrol reconfigure` alone (it starts the daemons
 *    afresh); before, slurmd is restarted on the node and then slurmctld is restarted when it must
 *    be (the node's GPU count changed: "Attempt to change gres/gpu Count ... invalid with File
 *    configuration"; or new TRES: set up only when slurmctld starts), else `scontrol reconfigure`;
 *    then waits until `scontrol show node` offers the new GRES;
 * 6. `scontrol update nodename=N state=resume`.
 * Whatever fails after step 1, the node is resumed and the failure said in one line; config files
 * are restored when the GPUs were not changed.
 */
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import YAML from 'yaml';
import { MigpoolError } from '../errors.js';
import type { SlurmGres } from '../partition/export.js';
import { execRunner, SlurmClient, type CommandRunner } from './client.js';
import { formatSlurmVersion, reconfigureRestarts, type SlurmVersion } from '../partition/slurm-gres-type.js';
import { addAccountingTres, gpuCount, gresConfLines, gresItems, includedPaths, clusterNameOf, rewriteGresConf, rewriteSlurmConfGres, sameGres, type ConfFile } from './conf.js';
import { formatGres, isDrained, type GresItem } from './parse.js';
import { DRAIN_REASON, nodeMigPartedConfig, type SlurmPlan } from './plan.js';
import type { SiteNode } from './site.js';

export interface ApplyOptions {
  readonly run?: CommandRunner;
  /** Seconds to wait for a drained node's GPU jobs to end [600]. */
  readonly drainTimeoutSeconds?: number;
  /** Seconds to wait for Slurm to offer the new GRES after the restarts [60]. */
  readonly slurmTimeoutSeconds?: number;
  readonly pollMs?: number;
  /** Print what would run, change nothing. */
  readonly dryRun?: boolean;
  readonly log?: (line: string) => void;
  readonly sleep?: (ms: number) => Promise<void>;
  /** The controller's Slurm version (`scontrol --version`); null: unknown, restarts as before 23.11. */
  readonly slurmVersion?: SlurmVersion | null;
}

export interface NodeApplyResult {
  readonly node: string;
  readonly ok: boolean;
  /** The GPU GRES Slurm offers afterwards (`gpu:1g.5gb:7`), or what it would be. */
  readonly gres: string | null;
  /** What happened, in one line. */
  readonly message: string;
  /** Commands run (or, with dryRun, to be run). */
  readonly commands: readonly string[][];
  /** How Slurm was made to read the change, and why (null with dryRun or before it got there). */
  readonly reload: { readonly how: 'reconfigure' | 'restart-slurmd' | 'restart-slurmd+slurmctld'; readonly why: string } | null;
  /** Config files written. */
  readonly filesChanged: readonly string[];
}

export const CONFIG_LABEL = 'migpool-slurm';

/** slurm.conf and every file it includes (recursively), the main one first. */
export function readSlurmConfFiles(path: string, read: (p: string) => string = (p) => readFileSync(p, 'utf8')): ConfFile[] {
  const files: ConfFile[] = [];
  const seen = new Set<string>();
  const visit = (p: string, cluster: string | null) => {
    if (seen.has(p)) return;
    seen.add(p);
    let text: string;
    try {
      text = read(p);
    } catch (e) {
      throw new MigpoolError('RUNTIME', `cannot read ${p}${files.length > 0 ? ` (included by ${files[0]!.path})` : ''}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    }
    files.push({ path: p, text });
    const name = cluster ?? clusterNameOf(text);
    for (const inc of includedPaths(text, dirname(path), name)) visit(inc, name);
  };
  visit(path, null);
  return files;
}

function writeAtomic(path: string, text: string): void {
  const temp = `${path}.migpool-tmp`;
  writeFileSync(temp, text);
  renameSync(temp, path);
}

/** Applies the plan's changed nodes one after another; a node that fails does not stop the others. */
export async function applySlurmPlan(plan: SlurmPlan, site: readonly SiteNode[], o: ApplyOptions = {}): Promise<NodeApplyResult[]> {
  const run = o.run ?? execRunner;
  const client = new SlurmClient(run);
  const sleep = o.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const pollMs = o.pollMs ?? 1000;
  const log = o.log ?? (() => undefined);
  const results: NodeApplyResult[] = [];
  for (const planned of plan.nodes) {
    if (!planned.changed || !planned.changeable) continue;
    const s = site.find((n) => n.name === planned.name)!;
    const commands: string[][] = [];
    const config = YAML.stringify(nodeMigPartedConfig(planned.planned, CONFIG_LABEL));
    const onNode = (args: readonly string[]) => [...s.remote, ...args];
    const apply = onNode([...s.migpool, 'apply', '-f', '-', '-c', CONFIG_LABEL]);
    const exportCmd = onNode([...s.migpool, 'export', '--format', 'slurm', '--json', '--node', s.name, ...(s.slurmVersion !== null ? ['--slurm-version', formatSlurmVersion(s.slurmVersion)] : [])]);
    const version = o.slurmVersion ?? s.slurmVersion ?? null;
    const versionText = version === null ? 'an unknown Slurm version' : `Slurm ${formatSlurmVersion(version)}`;
    const reconfigure = reconfigureRestarts(version);
    if (o.dryRun) {
      commands.push(
        ['scontrol', 'update', `nodename=${s.name}`, 'state=drain', `reason=${DRAIN_REASON}`],
        apply,
        exportCmd,
        ...(reconfigure ? [['scontrol', 'reconfigure']] : [...(s.restartSlurmd.length > 0 ? [onNode(s.restartSlurmd)] : []), ...(s.restartController.length > 0 ? [[...s.restartController]] : [])]),
        ['scontrol', 'update', `nodename=${s.name}`, 'state=resume'],
      );
      const reload = reconfigure
        ? `${versionText}: scontrol reconfigure restarts the daemons itself`
        : `${versionText}: slurmd restarted on the node, then slurmctld restarted if the node's GPU count or the tracked TRES change, else scontrol reconfigure`;
      results.push({ node: s.name, ok: true, gres: null, message: `would re-partition ${s.name}; ${reload} (config on stdin of migpool apply:\n${config.trimEnd()})`, commands, reload: null, filesChanged: [] });
      continue;
    }
    const exec = async (argv: readonly string[], input?: string): Promise<string> => {
      commands.push([...argv]);
      const [file, ...args] = argv;
      const r = await run(file!, args, { input, timeoutMs: 600_000 });
      if (r.code !== 0) throw new MigpoolError('RUNTIME', `${argv.join(' ')} failed (exit ${r.code}): ${(r.stderr.trim() || r.stdout.trim()).split('\n').at(-1) ?? ''}`);
      return r.stdout;
    };
    let gpusChanged = false;
    const originals: { path: string; text: string }[] = [];
    let newGres: string | null = null;
    let reload: NodeApplyResult['reload'] = null;
    try {
      log(`${s.name}: draining`);
      await exec(['scontrol', 'update', `nodename=${s.name}`, 'state=drain', `reason=${DRAIN_REASON}`]);
      const deadline = Date.now() + (o.drainTimeoutSeconds ?? 600) * 1000;
      let before: readonly GresItem[] = [];
      for (;;) {
        const [node] = await client.nodes([s.name]);
        before = node?.gres ?? [];
        const busy = node?.gresUsed.filter((g) => g.name === 'gpu').reduce((n, g) => n + g.count, 0) ?? 0;
        if (busy === 0) break;
        if (Date.now() > deadline) throw new MigpoolError('RUNTIME', `${busy} GPU GRES still in use after ${o.drainTimeoutSeconds ?? 600} s (raise --drain-timeout)`);
        await sleep(pollMs);
      }
      log(`${s.name}: re-partitioning`);
      await exec(apply, config);
      gpusChanged = true;
      const exported = JSON.parse(await exec(exportCmd)) as { gres?: SlurmGres[] };
      if (!Array.isArray(exported.gres)) throw new MigpoolError('RUNTIME', `migpool export on ${s.name} printed no gres list`);
      const items = gresItems(exported.gres, s.gresTypes);
      newGres = formatGres(items);
      const writes: ConfFile[] = [];
      if (s.devices !== null) {
        const text = readFileSync(s.gresConf, 'utf8');
        writes.push({ path: s.gresConf, text: rewriteGresConf(text, s.name, gresConfLines(s.name, items, s.devices)) });
      }
      let conf = readSlurmConfFiles(s.slurmConf);
      const nodeFile = rewriteSlurmConfGres(conf, s.name, items);
      conf = conf.map((f) => nodeFile.find((c) => c.path === f.path) ?? f);
      const tres = addAccountingTres(conf, items);
      const slurmWrites = [...nodeFile.filter((f) => !tres.files.some((t) => t.path === f.path)), ...tres.files];
      for (const w of [...writes, ...slurmWrites]) {
        originals.push({ path: w.path, text: readFileSync(w.path, 'utf8') });
        writeAtomic(w.path, w.text);
      }
      const countChanged = gpuCount(before) !== gpuCount(items);
      if (reconfigure) reload = { how: 'reconfigure', why: `${versionText} starts its daemons afresh on scontrol reconfigure` };
      else if (countChanged || tres.added.length > 0) {
        const why = [
          ...(countChanged ? [`the node's GPU count changes from ${gpuCount(before)} to ${gpuCount(items)}, which slurmctld before 23.11 takes only at a restart`] : []),
          ...(tres.added.length > 0 ? [`AccountingStorageTRES gains ${tres.added.join(',')}, set up only when slurmctld starts`] : []),
        ].join('; ');
        reload = { how: 'restart-slurmd+slurmctld', why: `${versionText}: ${why}` };
      } else reload = { how: 'restart-slurmd', why: `${versionText}: same GPU count, so slurmd is restarted to find the new devices and scontrol reconfigure does the rest` };
      log(`${s.name}: Gres=${newGres || '(none)'}; ${reload.how === 'reconfigure' ? 'scontrol reconfigure' : reload.how === 'restart-slurmd' ? 'restarting slurmd, then scontrol reconfigure' : 'restarting slurmd and slurmctld'} (${reload.why})`);
      if (reload.how === 'reconfigure') await exec(['scontrol', 'reconfigure']);
      else {
        if (s.restartSlurmd.length > 0) await exec(onNode(s.restartSlurmd));
        if (reload.how === 'restart-slurmd') await exec(['scontrol', 'reconfigure']);
        else if (s.restartController.length > 0) await exec(s.restartController);
        else throw new MigpoolError('RUNTIME', `slurmctld must be restarted (${reload.why}) but the site file gives no restartController; restart it by hand`);
      }
      const until = Date.now() + (o.slurmTimeoutSeconds ?? 60) * 1000;
      for (;;) {
        const node = await client.nodes([s.name]).then(
          (n) => n[0],
          () => undefined,
        );
        // Until slurmd has registered again the node is UNKNOWN / NOT_RESPONDING and cannot be resumed.
        if (node && sameGres(node.gres, items) && !/UNKNOWN|NOT_RESPONDING|DOWN/.test(node.state.toUpperCase())) break;
        if (Date.now() > until) throw new MigpoolError('RUNTIME', `Slurm still offers ${node ? formatGres(node.gres) || 'no GPU' : 'nothing (controller not answering)'} on ${s.name}, not ${newGres || 'no GPU'}, ${o.slurmTimeoutSeconds ?? 60} s after ${reload.how === 'reconfigure' ? 'scontrol reconfigure' : 'the restarts'}`);
        await sleep(pollMs);
      }
      // A controller restart may already have cleared the drain.
      const [after] = await client.nodes([s.name]);
      if (after && isDrained(after.state)) await exec(['scontrol', 'update', `nodename=${s.name}`, 'state=resume']);
      results.push({ node: s.name, ok: true, gres: newGres, message: `${s.name}: re-partitioned; Slurm offers Gres=${newGres || '(no GPU)'} (${reload.why})`, commands, reload, filesChanged: originals.map((f) => f.path) });
    } catch (error) {
      const what = error instanceof Error ? error.message : String(error);
      let restored = '';
      if (!gpusChanged && originals.length > 0) {
        for (const f of originals) writeAtomic(f.path, f.text);
        restored = '; config files restored';
      }
      let resumed = 'resumed';
      try {
        // The controller may be restarting: give it a few tries.
        for (let i = 0; ; i += 1) {
          const [now] = await client.nodes([s.name]).catch(() => []);
          if (now && !isDrained(now.state)) break;
          const r = await run('scontrol', ['update', `nodename=${s.name}`, 'state=resume']);
          if (r.code === 0 || i >= 10) {
            if (r.code !== 0) resumed = `NOT resumed (${r.stderr.trim().split('\n')[0]}): run scontrol update nodename=${s.name} state=resume`;
            break;
          }
          await sleep(pollMs);
        }
      } catch (e) {
        resumed = `NOT resumed (${(e as Error).message})`;
      }
      const state = gpusChanged ? `its GPUs were re-partitioned${newGres !== null ? ` (Gres=${newGres || 'none'})` : ''} but Slurm was not updated` : 'its GPUs were not changed';
      results.push({ node: s.name, ok: false, gres: newGres, message: `${s.name}: ${what}; ${state}${restored}; node ${resumed}`, commands, reload, filesChanged: gpusChanged ? originals.map((f) => f.path) : [] });
    }
  }
  return results;
}
