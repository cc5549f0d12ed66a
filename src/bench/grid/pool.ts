/**
 * Runs many FGD tasks on worker threads (one per core by default) or in-process. Tasks are handed out one
 * at a time as workers free up; results come back in task order whatever the completion order, so the
 * output does not depend on the number of workers.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import type { FgdRun } from '../fgd/run.ts';
import { runFgdTask, type FgdTask } from './tasks.ts';
import type { WorkerReply } from './worker.ts';

export interface GridProgress {
  readonly done: number;
  readonly total: number;
  readonly task: FgdTask;
  readonly run: FgdRun;
}

export class GridTaskError extends Error {
  override readonly name = 'GridTaskError';
  constructor(
    readonly task: FgdTask,
    message: string,
    readonly causeName: string,
  ) {
    super(message);
  }
}

export interface GridOptions {
  /** 0 = in-process (no threads); default: available cores, at most the task count. */
  readonly workers?: number;
  readonly onProgress?: (p: GridProgress) => void;
}

export function defaultWorkers(): number {
  return availableParallelism();
}

export async function runGrid(tasks: readonly FgdTask[], opts: GridOptions = {}): Promise<FgdRun[]> {
  const workers = Math.min(opts.workers ?? defaultWorkers(), tasks.length);
  const results: FgdRun[] = new Array<FgdRun>(tasks.length);
  let done = 0;
  const finished = (i: number, run: FgdRun): void => {
    results[i] = run;
    done++;
    opts.onProgress?.({ done, total: tasks.length, task: tasks[i] as FgdTask, run });
  };
  if (workers <= 0) {
    tasks.forEach((t, i) => {
      try {
        finished(i, runFgdTask(t));
      } catch (e) {
        throw new GridTaskError(t, (e as Error).message, (e as Error).name);
      }
    });
    return results;
  }
  const entry = new URL('./worker-entry.mjs', import.meta.url);
  const pool = Array.from({ length: workers }, () => new Worker(entry));
  let next = 0;
  try {
    await new Promise<void>((resolve, reject) => {
      let active = 0;
      const feed = (w: Worker): void => {
        if (next >= tasks.length) {
          if (active === 0) resolve();
          return;
        }
        const id = next++;
        active++;
        w.postMessage({ id, task: tasks[id] });
      };
      for (const w of pool) {
        w.on('message', (reply: WorkerReply) => {
          active--;
          if (!reply.ok) {
            reject(new GridTaskError(tasks[reply.id] as FgdTask, reply.error, reply.name));
            return;
          }
          finished(reply.id, reply.run);
          feed(w);
        });
        w.on('error', reject);
        w.on('exit', (code) => {
          if (code !== 0) reject(new Error(`grid worker exited with code ${code}`));
        });
      }
      for (const w of pool) feed(w);
    });
  } finally {
    await Promise.all(pool.map((w) => w.terminate()));
  }
  return results;
}
