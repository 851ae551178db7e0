import { execFile, spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { MigpoolError } from '../errors.js';

/**
 * Starts NVIDIA's MPS control daemon (`nvidia-cuda-mps-control -d`) with its pipe directory at
 * `pipeDir` and its log directory at `logDir` (the pipe directory when not given), and returns the
 * function that stops it (`quit` on the control program's stdin, with the same pipe directory).
 * Clients find it through CUDA_MPS_PIPE_DIRECTORY. `env` is the daemon's whole environment: set
 * CUDA_VISIBLE_DEVICES there to give it one GPU or MIG instance (by UUID: NVIDIA's MPS
 * documentation, "Appendix: Environment Variables", CUDA_VISIBLE_DEVICES, recommends UUIDs so that
 * the daemon and its clients name the same device). The program is found by PATH.
 *
 * `quit` shuts the daemon and its servers down once their clients are done (nvidia-cuda-mps-control(1),
 * "quit": it stops accepting new clients while waiting for the current ones to finish).
 */
export async function startMpsDaemon(pipeDir: string, env: NodeJS.ProcessEnv = process.env, logDir: string = pipeDir): Promise<() => Promise<void>> {
  mkdirSync(pipeDir, { recursive: true });
  mkdirSync(logDir, { recursive: true });
  const childEnv = { ...env, CUDA_MPS_PIPE_DIRECTORY: pipeDir, CUDA_MPS_LOG_DIRECTORY: logDir };
  await new Promise<void>((resolve, reject) => {
    execFile('nvidia-cuda-mps-control', ['-d'], { env: childEnv, timeout: 15_000 }, (error, _out, stderr) => {
      if (error && (error as NodeJS.ErrnoException).code === 'ENOENT') {
        reject(new MigpoolError('DEVICE', 'nvidia-cuda-mps-control not found on PATH: MPS needs the CUDA MPS control daemon (part of the NVIDIA driver); install it, or do without MPS (bench: drop the NxMPS configs; serve: a policy other than mps:N)'));
      } else if (error) {
        reject(new MigpoolError('DEVICE', `nvidia-cuda-mps-control -d failed: ${stderr.trim() || error.message}`));
      } else {
        resolve();
      }
    });
  });
  return () => quitMpsDaemon(childEnv);
}

/** Sends `quit` to the MPS control daemon whose pipe directory `env` names; resolves when the control program exits (never rejects). */
export function quitMpsDaemon(env: NodeJS.ProcessEnv): Promise<void> {
  return new Promise<void>((resolve) => {
    const child = spawn('nvidia-cuda-mps-control', [], { env, stdio: ['pipe', 'ignore', 'ignore'] });
    child.on('error', () => resolve());
    child.on('exit', () => resolve());
    child.stdin.on('error', () => undefined);
    child.stdin.end('quit\n');
  });
}
