import { parentPort } from 'node:worker_threads';
import { runTask, type RunTask } from './compare-run.js';

/** A worker thread of `npm run compare`: runs the tasks it is sent, one at a time, and answers each. */
parentPort?.on('message', (task: RunTask) => {
  try {
    parentPort?.postMessage({ id: task.id, figures: runTask(task) });
  } catch (e) {
    parentPort?.postMessage({ id: task.id, error: e instanceof Error ? e.message : String(e) });
  }
});
