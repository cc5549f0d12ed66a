import {
  WORKLOAD_KINDS,
  argTokens,
  containerGpus,
  cpuLimit,
  distributedSignal,
  envOf,
  flagValue,
  inferenceEngine,
  int,
  isTrainingKind,
  podSites,
  processesPerPod,
  type ContainerSite,
} from '../pod-specs.ts';
import type { FieldPath, Rule, RuleHit } from '../rule.ts';

const FLAGS = ['--num-workers', '--dataloader-num-workers', '--num-data-workers', '--data-workers', '--loader-workers'];
const ENV = ['DATALOADER_WORKERS', 'DATALOADER_NUM_WORKERS', 'NUM_DATA_WORKERS', 'DATA_LOADER_WORKERS', 'SITS_DATALOADER_NUM_WORKERS'];
// Names web servers use too (gunicorn --workers, WORKERS/NUM_WORKERS): read only in training containers.
const GENERIC_FLAGS = ['--workers'];
const GENERIC_ENV = ['NUM_WORKERS'];

/**
 * Most DataLoader worker processes per training process the CPU limit supports (seed 001 §1: 1 CPU → 0, 2 → 1,
 * 4 → 2): half the cores, rounded down, shared by the pod's training processes; the other half feeds the loop.
 */
export function maxDataLoaderWorkers(cpuMilli: number, processes: number): number {
  return Math.floor(cpuMilli / (2000 * Math.max(1, processes)));
}

/** The DataLoader worker count a container sets: a flag, else an env variable, else `num_workers=N` in an inline script. */
export function dataLoaderWorkers(
  c: ContainerSite,
  training = true,
): { readonly workers: number; readonly from: string; readonly path: FieldPath } | undefined {
  const f = flagValue(c, training ? [...FLAGS, ...GENERIC_FLAGS] : FLAGS);
  const fw = f === undefined ? undefined : int(f.text);
  if (f !== undefined && fw !== undefined) return { workers: fw, from: 'the command line', path: f.path };
  const env = envOf(c);
  for (const name of training ? [...ENV, ...GENERIC_ENV] : ENV) {
    const e = env.get(name);
    const n = int(e?.value);
    if (e !== undefined && n !== undefined) return { workers: n, from: `env ${name}`, path: e.valuePath };
  }
  for (const t of argTokens(c)) {
    const m = /num_workers\s*=\s*(\d+)/.exec(t.text);
    const n = int(m?.[1]);
    if (n !== undefined) return { workers: n, from: 'num_workers= in the command', path: t.path };
  }
  return undefined;
}

const cores = (milli: number): string => (milli % 1000 === 0 ? String(milli / 1000) : `${milli}m`);

export const dataLoaderWorkersExceedCpu: Rule = {
  id: 'dataloader-workers-exceed-cpu',
  severity: 'warning',
  seed: '001 §1',
  title: "DataLoader workers above what the container's CPU limit supports",
  rationale:
    'With `resources.limits.cpu: "2"` and `num_workers=4` the CFS quota throttles the worker processes, spreads them over cores and NUMA nodes, ' +
    "and the input pipeline stalls or deadlocks (seed 001 §1). The seed's table (1 CPU → 0 workers, 2 → 1, 4 → 2) is half the cores rounded " +
    "down; with several training processes per pod (torchrun `--nproc-per-node`, a TrainingJob's `nprocPerNode` or one per GPU) the half is " +
    'shared: at most `floor(cpu / 2 / processes)` workers per process. Workers are read from `--num-workers`/`--num_workers=`/`--workers`/' +
    '`--dataloader-num-workers`, env `NUM_WORKERS`/`DATALOADER_WORKERS`/`DATALOADER_NUM_WORKERS`, or `num_workers=N` in an inline script ' +
    '(`--workers` and `NUM_WORKERS`, which web servers use too, only in training containers: a training kind, a distributed launcher or ' +
    'a GPU request outside an inference engine); containers without a CPU limit are not judged. Lower the worker count or raise the CPU limit (a TrainingJob injects the right value as ' +
    '`SITS_DATALOADER_NUM_WORKERS`).',
  kinds: WORKLOAD_KINDS,
  fixtures: {
    bad: `apiVersion: v1
kind: Pod
metadata: {name: train, namespace: ml}
spec:
  containers:
  - name: trainer
    image: pytorch/pytorch:2.3
    args: [python, train.py, --num-workers, "4"]
    resources: {limits: {cpu: "2", nvidia.com/gpu: 1}}
---
apiVersion: ai.sits2026.dev/v1
kind: TrainingJob
metadata: {name: llama, namespace: ml}
spec:
  replicas: 2
  gpusPerReplica: 4
  resources: {cpu: "8"}
  container:
    image: pytorch/pytorch:2.3
    command: [torchrun, train.py, --num_workers=4]
`,
    good: `apiVersion: v1
kind: Pod
metadata: {name: train, namespace: ml}
spec:
  containers:
  - name: trainer
    image: pytorch/pytorch:2.3
    args: [python, train.py, --num-workers, "2"]
    resources: {limits: {cpu: 4000m}}
    volumeMounts: [{name: dshm, mountPath: /dev/shm}]
  - name: sidecar
    image: busybox
    env: [{name: NUM_WORKERS, value: "8"}]
  volumes: [{name: dshm, emptyDir: {medium: Memory}}]
---
apiVersion: ai.sits2026.dev/v1
kind: TrainingJob
metadata: {name: llama, namespace: ml}
spec:
  replicas: 2
  gpusPerReplica: 4
  resources: {cpu: "32"}
  container:
    image: pytorch/pytorch:2.3
    command: [torchrun, train.py, --num_workers=4]
`,
  },
  check(obj) {
    const hits: RuleHit[] = [];
    for (const s of podSites(obj)) {
      for (const c of s.containers) {
        if (c.init) continue;
        const training = isTrainingKind(obj) || distributedSignal(c) !== undefined || (containerGpus(c) > 0 && inferenceEngine(c) === undefined);
        const w = dataLoaderWorkers(c, training);
        if (w === undefined || w.workers === 0) continue;
        const lim = cpuLimit(c);
        if (lim === undefined) continue;
        const procs = processesPerPod(obj, s, c);
        const max = maxDataLoaderWorkers(lim.milli, procs);
        if (w.workers <= max) continue;
        const need = w.workers * 2 * procs;
        hits.push({
          message: `${w.workers} DataLoader workers (${w.from}) exceed the CPU limit ${cores(lim.milli)}: at most ${max} per process with ${procs} training process${procs === 1 ? '' : 'es'} per pod (floor(cpu / 2 / processes), seed 001 §1: 1 CPU → 0, 2 → 1, 4 → 2); lower it to ${max} or raise the CPU limit to ${need}`,
          path: w.path,
        });
      }
    }
    return hits;
  },
};
