import { GPU_MODELS } from '../mig/catalog/index.js';
import { predict } from '../perf/model.js';
import { resolveWorkload } from '../perf/workloads.js';
import type { Resource } from '../perf/types.js';
import { loadMachine } from '../gpu/simulated/state-file.js';

/**
 * A stand-in training job for benchmarking simulated GPUs end to end: it finds the device
 * CUDA_VISIBLE_DEVICES names in the simulated machine (MIGPOOL_FAKE_NVIDIA_SMI_STATE), asks the
 * performance model how long one iteration of `--workload` takes there (sharing the GPU with the
 * other jobs on it: time-slicing, or MPS when CUDA_MPS_PIPE_DIRECTORY is set), and then "trains"
 * at that speed, printing the bench progress protocol. `--time-scale F` runs F times the model's
 * time per iteration (0.01: a hundred times faster). A job that does not fit exits like a CUDA
 * out-of-memory error. `--iterations N` ends it (exit 0) after N iterations, as a finite training
 * run; without it, it trains until SIGTERM. `--report-ms M` prints progress at most every M ms.
 */
function option(args: readonly string[], name: string, fallback: string): string {
  const at = args.indexOf(name);
  return at >= 0 && args[at + 1] !== undefined ? (args[at + 1] as string) : fallback;
}

function resourceNow(uuid: string, statePath: string): { resource: Resource; label: string } {
  const machine = loadMachine(statePath);
  if (!machine) throw new Error(`no simulated machine in ${statePath}`);
  for (const gpu of machine.state.gpus) {
    const model = GPU_MODELS.find((m) => m.name === gpu.family);
    if (!model) continue;
    if (gpu.uuid === uuid) {
      const tenants = Math.max(1, gpu.processes.filter((p) => p.gpuInstanceId === null).length);
      if (tenants === 1) return { resource: { kind: 'full', gpu: model }, label: `${model.name} whole GPU` };
      const kind = process.env['CUDA_MPS_PIPE_DIRECTORY'] ? 'mps' : 'timeslice';
      return { resource: { kind, gpu: model, jobs: tenants }, label: `${model.name} ${kind} x${tenants}` };
    }
    for (const gi of gpu.gpuInstances) {
      if (gi.computeInstances.some((c) => c.uuid === uuid)) return { resource: { kind: 'mig', gpu: model, profile: gi.profile }, label: `${model.name} ${gi.profile}` };
    }
  }
  throw new Error(`CUDA_VISIBLE_DEVICES=${uuid} is not a device of the simulated machine in ${statePath}`);
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const workload = resolveWorkload(option(args, '--workload', 'small'));
  const scale = Number(option(args, '--time-scale', '1'));
  const limit = Number(option(args, '--iterations', 'Infinity'));
  const reportMs = Number(option(args, '--report-ms', '0'));
  let lastReport = -Infinity;
  const uuid = process.env['CUDA_VISIBLE_DEVICES'] ?? '';
  const statePath = process.env['MIGPOOL_FAKE_NVIDIA_SMI_STATE'] ?? '';
  if (!uuid || !statePath) {
    process.stderr.write('fake-workload: needs CUDA_VISIBLE_DEVICES and MIGPOOL_FAKE_NVIDIA_SMI_STATE (migpool bench --simulate-gpus sets both)\n');
    process.exit(2);
  }
  let stop = false;
  process.on('SIGTERM', () => {
    stop = true;
  });
  // Progress is integrated over time rather than slept per iteration, so that timer granularity
  // does not distort short (scaled) iterations.
  let iterations = 0;
  let lastCheck = -Infinity;
  let iterationMs = 1;
  let last = performance.now();
  process.stdout.write(`${JSON.stringify({ migpool_samples: 0, dataset_size: workload.datasetSize })}\n`);
  while (!stop) {
    const now = performance.now();
    if (now - lastCheck > 200) {
      const { resource, label } = resourceNow(uuid, statePath);
      const p = predict(workload, resource);
      if (!p.fits || p.iterationMs === null) {
        process.stderr.write(`RuntimeError: CUDA out of memory: ${workload.name} does not fit on ${label}\n`);
        process.exit(1);
      }
      iterationMs = p.iterationMs * scale;
      lastCheck = now;
    }
    iterations += (now - last) / iterationMs;
    last = now;
    if (now - lastReport >= reportMs || iterations >= limit) {
      process.stdout.write(`${JSON.stringify({ migpool_samples: Math.floor(Math.min(iterations, limit)) * workload.batchSize })}\n`);
      lastReport = now;
    }
    if (iterations >= limit) {
      process.stdout.write(`${JSON.stringify({ done: true, iterations: limit, on: resourceNow(uuid, statePath).label })}\n`);
      return;
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`fake-workload: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});
