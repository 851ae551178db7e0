import { startPool } from '../src/cli/pool.js';

/**
 * A service for the API benchmark, in its own process like a real `migpool serve`: simulated GPUs,
 * jobs accepted and kept but not started. Prints `{"url", "token"}` once listening; SIGTERM stops it.
 */
const dir = process.argv[2];
if (!dir) throw new Error('usage: held-service.js DATA_DIR');
const pool = await startPool({ dataDir: dir, listen: '127.0.0.1:0', simulate: '8xA100-SXM4-40GB', hold: true });
process.stdout.write(`${JSON.stringify({ url: pool.url, token: pool.token })}\n`);
process.on('SIGTERM', () => {
  void pool.close().then(() => process.exit(0));
});
