import { hostname } from 'node:os';
import type { Command } from 'commander';
import { exportGpusOf } from '../../control/mig-config.js';
import { readCurrentState } from '../../control/state-reader.js';
import { badInput } from '../../errors.js';
import { exportK8s, exportMigPartedJson, exportMigPartedYaml, exportSlurm } from '../../partition/export.js';
import { migNamingOf } from '../../partition/slurm-gres-type.js';
import { localSlurmVersion, parseSlurmVersionFlag } from '../../slurm/version.js';
import { openGpuPort, type DeviceOptions } from '../device.js';
import { writeJson, type Io } from '../io.js';
import { withDeviceOptions } from './status.js';
import { stringFlag } from './mig-parted-env.js';

/** `migpool export`: the current state as a mig-parted config, or as Kubernetes or Slurm see it. */
export function registerExport(program: Command, io: Io): void {
  withDeviceOptions(program.command('export').description('print the current MIG state as a mig-parted v1 config (or as Kubernetes / Slurm see it)'))
    .option('-o, --output-format <format>', 'yaml or json (or $MIG_PARTED_OUTPUT_FORMAT; default yaml)')
    .option('-l, --config-label <label>', 'name of the config in the output (or $MIG_PARTED_CONFIG_LABEL; default current)')
    .option('-d, --debug', 'accepted as mig-parted accepts it (or $MIG_PARTED_DEBUG)')
    .option('--format <kind>', 'mig-parted, k8s or slurm', 'mig-parted')
    .option('--node <name>', 'node name for --format slurm (default: this host)')
    .option('--slurm-version <version>', "--format slurm: the Slurm version whose AutoDetect=nvml names to use (MIG types changed in 23.02.6); default: what slurmd -V or scontrol --version says, else the current naming")
    .option('--json', 'print JSON (same as -o json)')
    .action(async (flags: DeviceOptions & { outputFormat?: string; configLabel?: string; format: string; node?: string; slurmVersion?: string; json?: boolean }) => {
      // mig-parted's export reads both from its environment (export/export.go BuildCommand).
      const opts = { ...flags, outputFormat: stringFlag(flags.outputFormat, 'MIG_PARTED_OUTPUT_FORMAT', 'yaml'), configLabel: stringFlag(flags.configLabel, 'MIG_PARTED_CONFIG_LABEL', 'current') };
      const output = opts.json ? 'json' : opts.outputFormat;
      if (output !== 'yaml' && output !== 'json') throw badInput(`-o '${opts.outputFormat}'${flags.outputFormat === undefined ? ' (from MIG_PARTED_OUTPUT_FORMAT)' : ''}: use yaml or json`);
      if (!['mig-parted', 'k8s', 'slurm'].includes(opts.format)) throw badInput(`--format '${opts.format}': use mig-parted, k8s or slurm`);
      const gpus = exportGpusOf(await readCurrentState(openGpuPort(opts)));
      if (opts.format === 'k8s') {
        const k8s = exportK8s(gpus, opts.configLabel);
        if (output === 'json') return writeJson(io, { label: k8s.label, resources: k8s.resources, warnings: k8s.warnings });
        for (const w of k8s.warnings) io.err(`warning: ${w}`);
        return io.out(k8s.text);
      }
      if (opts.format === 'slurm') {
        const version = opts.slurmVersion !== undefined ? parseSlurmVersionFlag(opts.slurmVersion, '--slurm-version') : await localSlurmVersion();
        const slurm = exportSlurm(gpus, opts.node ?? hostname().split('.')[0] ?? 'localhost', migNamingOf(version));
        if (version === null) slurm.warnings.push('no Slurm version given or found (slurmd -V, scontrol --version): MIG types named as Slurm 23.02.6 and later name them; pass --slurm-version for an older Slurm');
        if (output === 'json') return writeJson(io, { nodeName: slurm.nodeName, gres: slurm.gres, gresValue: slurm.gresValue, slurmConfLine: slurm.slurmConfLine, gresConf: slurm.gresConf, warnings: slurm.warnings });
        for (const w of slurm.warnings) io.err(`warning: ${w}`);
        return io.out(slurm.text);
      }
      io.out(output === 'json' ? exportMigPartedJson(gpus, opts.configLabel) : exportMigPartedYaml(gpus, opts.configLabel));
    });
}
