/**
 * One FGD-protocol run described by plain data (file paths, policy, seed) so that it can cross a worker
 * thread, and the function that performs it. Traces are parsed once per thread and reused.
 */
import { basename } from 'node:path';
import { loadOpenbNodes, loadOpenbPods } from '../../sim/trace/openb.ts';
import { prepareFgdTrace, runFgd, type FgdRun, type FgdTrace } from '../fgd/run.ts';

export interface FgdTask {
  readonly nodesFile: string;
  readonly podsFile: string;
  readonly policy: string;
  readonly seed: number;
  readonly tune: number;
  /** Measure runMs with the wall clock (off for byte-identical output). */
  readonly timing: boolean;
}

const traces = new Map<string, FgdTrace>();

export function loadFgdTrace(nodesFile: string, podsFile: string): FgdTrace {
  const key = `${nodesFile}\n${podsFile}`;
  let t = traces.get(key);
  if (t === undefined) {
    t = prepareFgdTrace(basename(podsFile), loadOpenbNodes(nodesFile), loadOpenbPods(podsFile).pods);
    traces.set(key, t);
  }
  return t;
}

export function runFgdTask(task: FgdTask): FgdRun {
  const trace = loadFgdTrace(task.nodesFile, task.podsFile);
  return runFgd(trace, task.policy, task.seed, { tune: task.tune, ...(task.timing ? { now: () => performance.now() } : {}) });
}
