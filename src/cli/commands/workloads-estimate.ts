import type { Command } from 'commander';
import { badInput } from '../../errors.js';
import { resolveGpuModel } from '../../mig/catalog/index.js';
import { estimateTrainingMemory, MEMORY_MODELS, memoryModelInput, type Optimizer, type Precision } from '../../perf/memory/estimate.js';
import { fitsOn, type MemoryFit } from '../../perf/fits.js';
import { writeJson, type Io } from '../io.js';
import { renderTable } from '../table.js';

interface EstimateOptions {
  model: string;
  batch: string;
  imageSize?: string;
  seqLen?: string;
  optimizer: string;
  precision: string;
  gpu: string;
  json?: boolean;
}

const OPTIMIZERS: readonly Optimizer[] = ['sgd', 'adam', 'adamw'];
const PRECISIONS: readonly Precision[] = ['fp32', 'amp', 'bf16'];

function whole(text: string, flag: string): number {
  if (!/^\d+$/.test(text.trim()) || Number(text) < 1) throw badInput(`${flag} must be a positive whole number, got '${text}'`);
  return Number(text);
}

const gib = (bytes: number) => bytes / 1024 ** 3;

/** `migpool workloads estimate`: training memory of a named network, and where it fits. */
export function registerWorkloadsEstimate(parent: Command, io: Io): void {
  parent
    .command('estimate')
    .description('training memory of a network from first principles (weights, gradients, optimizer state, activations, CUDA context), and which profiles of a GPU it fits')
    .requiredOption('--model <name>', `network: ${Object.keys(MEMORY_MODELS).join(', ')}`)
    .requiredOption('--batch <n>', 'samples per iteration')
    .option('--image-size <px>', 'image side, pixels (image models; default 224, inception_v3 299)')
    .option('--seq-len <tokens>', 'sequence length (bert-base, bert-large: default 384; gpt2: 1024)')
    .option('--optimizer <name>', 'sgd (with momentum), adam or adamw', 'adamw')
    .option('--precision <p>', 'fp32, amp (autocast fp16) or bf16 (autocast bfloat16)', 'fp32')
    .option('--gpu <model>', 'GPU whose profiles to check', 'A100-SXM4-40GB')
    .option('--json', 'print JSON')
    .action((own: EstimateOptions, cmd: Command) => {
      // `--json` is also an option of `workloads`, which commander may hand to the parent.
      const opts: EstimateOptions = { ...own, json: own.json ?? (cmd.optsWithGlobals<{ json?: boolean }>().json === true) };
      const input = memoryModelInput(opts.model);
      if (input.input === 'image' && opts.seqLen !== undefined) throw badInput(`--seq-len is for language models; ${opts.model} takes --image-size`);
      if (input.input === 'tokens' && opts.imageSize !== undefined) throw badInput(`--image-size is for image models; ${opts.model} takes --seq-len`);
      if (!OPTIMIZERS.includes(opts.optimizer as Optimizer)) throw badInput(`--optimizer '${opts.optimizer}': use ${OPTIMIZERS.join(', ')}`);
      if (!PRECISIONS.includes(opts.precision as Precision)) throw badInput(`--precision '${opts.precision}': use ${PRECISIONS.join(', ')}`);
      const size = opts.imageSize ?? opts.seqLen;
      const est = estimateTrainingMemory({
        model: opts.model,
        batch: whole(opts.batch, '--batch'),
        ...(size !== undefined ? { inputSize: whole(size, opts.imageSize !== undefined ? '--image-size' : '--seq-len') } : {}),
        optimizer: opts.optimizer as Optimizer,
        precision: opts.precision as Precision,
      });
      const gpu = resolveGpuModel(opts.gpu);
      const fits: Record<string, MemoryFit> = {};
      for (const p of gpu.giProfiles) fits[p.name] = fitsOn(est.totalGiB, { kind: 'mig', gpu, profile: p.name });
      fits.full = fitsOn(est.totalGiB, { kind: 'full', gpu });
      const memoryGiB = Number(est.totalGiB.toFixed(3));
      if (opts.json) return writeJson(io, { memoryGiB, fits, gpu: gpu.name, estimate: est });
      const rows: string[][] = [
        ['parameters', `${(est.params / 1e6).toFixed(1)} M`],
        ['weights', `${gib(est.weightsBytes).toFixed(2)} GiB`],
        ['gradients', `${gib(est.gradientBytes).toFixed(2)} GiB`],
        [`optimizer (${est.optimizer})`, `${gib(est.optimizerBytes).toFixed(2)} GiB`],
        [`activations (batch ${est.batch}, ${input.input === 'image' ? `${est.inputSize}x${est.inputSize}` : `${est.inputSize} tokens`}, ${est.precision})`, `${gib(est.activationBytes).toFixed(2)} GiB`],
        ['CUDA context', `${gib(est.contextBytes).toFixed(2)} GiB`],
        ['library workspace', `${gib(est.workspaceBytes).toFixed(2)} GiB`],
        ['total (with allocator overhead)', `${memoryGiB.toFixed(2)} GiB`],
      ];
      io.out(`${input.description}\n${renderTable(['PART', 'MEMORY'], rows)}`);
      io.out(`\nfits on ${gpu.name}:\n${renderTable(['PROFILE', 'MEMORY GiB', 'FITS'], [...gpu.giProfiles.map((p) => [p.name, p.memoryGiB === null ? '?' : String(p.memoryGiB), fmtFit(fits[p.name])]), ['full', String(gpu.memoryGB), fmtFit(fits.full)]])}`);
      for (const n of est.notes) io.err(`note: ${n}`);
    });
}

function fmtFit(f: MemoryFit | undefined): string {
  return f === 'unknown' || f === undefined ? 'unknown' : f ? 'yes' : 'no';
}
