/** Worker thread body: runs FGD tasks posted by the pool, one at a time, and posts results back. */
import { parentPort } from 'node:worker_threads';
import { runFgdTask, type FgdTask } from './tasks.ts';

export type WorkerReply = { readonly id: number; readonly ok: true; readonly run: ReturnType<typeof runFgdTask> } | { readonly id: number; readonly ok: false; readonly error: string; readonly name: string };

const port = parentPort;
if (port === null) throw new Error('grid worker must run in a worker thread');
port.on('message', (msg: { id: number; task: FgdTask }) => {
  let reply: WorkerReply;
  try {
    reply = { id: msg.id, ok: true, run: runFgdTask(msg.task) };
  } catch (e) {
    const err = e as Error;
    reply = { id: msg.id, ok: false, error: err.message, name: err.name };
  }
  port.postMessage(reply);
});
