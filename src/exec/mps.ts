import { execFile, spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { MigpoolError } from '../errors.js';

/**
 * Starts NVIDIA's MPS control daemon (`nvidia-cuda-mps-control -d`) with its pipe and log
 * directory at `pipeDir`, and returns the function that stops it (`quit` on its stdin). Clients
 * find it through CUDA_MPS_PIPE_DIRECTORY.
 */
export async function startMpsDaemon(pipeDir: string, env: NodeJS.ProcessEnv = process.env): Promise<() => Promise<void>> {
  mkdirSync(pipeDir, { recursive: true });
  const childEnv = { ...env, CUDA_MPS_PIPE_DIRECTORY: pipeDir, CUDA_MPS_LOG_DIRECTORY: pipeDir };
  await new Promise<void>((resolve, reject) => {
    execFile('nvidia-cuda-mps-control', ['-d'], { env: childEnv, timeout: 15_000 }, (error, _out, stderr) => {
      if (error && (error as NodeJS.ErrnoException).code === 'ENOENT') {
        reject(new MigpoolError('DEVICE', 'nvidia-cuda-mps-control not found: MPS configs need the CUDA MPS server (part of the NVIDIA driver); drop the NxMPS configs or install it'));
      } else if (error) {
        reject(new MigpoolError('DEVICE', `nvidia-cuda-mps-control -d failed: ${stderr.trim() || error.message}`));
      } else {
        resolve();
      }
    });
  });
  return () =>
    new Promise<void>((resolve) => {
      const child = spawn('nvidia-cuda-mps-control', [], { env: childEnv, stdio: ['pipe', 'ignore', 'ignore'] });
      child.on('error', () => resolve());
      child.on('exit', () => resolve());
      child.stdin.end('quit\n');
    });
}
