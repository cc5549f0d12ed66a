/**
 * The environment every replica gets: PyTorch DDP / torchrun rendezvous (static: a fixed world per gang, rank 0 as
 * the master through the headless Service), NCCL settings (seed 000 §1, seed 001 §3.2) and a DataLoader worker
 * hint derived from the CPU limit (seed 001 §1). User entries with the same name win (mergeEnv).
 */
import type { TrainingJobSpec } from '../../api/schema/training-job.ts';
import type { EnvVarObject } from '../kube-objects.ts';
import { podDnsName } from './names.ts';

export interface WorldInfo {
  readonly job: string;
  readonly namespace: string;
  /** Replicas (torchrun nodes) in this gang. */
  readonly replicas: number;
  readonly rank: number;
  /** Processes per replica (torchrun --nproc_per_node). */
  readonly nprocPerNode: number;
  readonly attempt: number;
  /** CPU limit of the trainer container in millicores, when known. */
  readonly cpuLimitMilli?: number;
  /** Where the NCCL topology file is mounted, when the replica gets one. */
  readonly ncclTopoFile?: string;
}

/** Processes per replica: spec.nprocPerNode, else one per GPU, at least 1. */
export function nprocPerNode(spec: Pick<TrainingJobSpec, 'nprocPerNode'>, gpusPerReplica: number): number {
  return spec.nprocPerNode ?? Math.max(1, gpusPerReplica);
}

/**
 * DataLoader workers per process from the CPU limit (seed 001 §1: 1 CPU → 0 workers, 2 → 1, 4 → 2, i.e. half the
 * cores, leaving the rest to the training loop), split across the replica's processes; pin_memory from 2 CPUs.
 */
export function dataLoaderHint(cpuLimitMilli: number, nproc: number): { workers: number; pinMemory: boolean } {
  const cores = cpuLimitMilli / 1000;
  const workers = cores < 2 ? 0 : Math.floor(cores / 2 / Math.max(1, nproc));
  return { workers, pinMemory: cores >= 2 };
}

/** Everything SITS injects, in a stable order. */
export function injectedEnv(spec: Pick<TrainingJobSpec, 'masterPort' | 'nccl'>, w: WorldInfo): EnvVarObject[] {
  const master = podDnsName(w.job, 0, w.namespace);
  const port = String(spec.masterPort);
  const env: [string, string][] = [
    ['MASTER_ADDR', master],
    ['MASTER_PORT', port],
    ['WORLD_SIZE', String(w.replicas * w.nprocPerNode)],
    ['RANK', String(w.rank * w.nprocPerNode)],
    ['NODE_RANK', String(w.rank)],
    ['LOCAL_WORLD_SIZE', String(w.nprocPerNode)],
    ['PET_NNODES', String(w.replicas)],
    ['PET_NODE_RANK', String(w.rank)],
    ['PET_NPROC_PER_NODE', String(w.nprocPerNode)],
    ['PET_MASTER_ADDR', master],
    ['PET_MASTER_PORT', port],
    ['NCCL_IB_DISABLE', spec.nccl.ibDisable ? '1' : '0'],
    ['NCCL_SOCKET_TIMEOUT', String(spec.nccl.socketTimeout)],
  ];
  if (spec.nccl.asyncErrorHandling) env.push(['NCCL_ASYNC_ERROR_HANDLING', '1'], ['TORCH_NCCL_ASYNC_ERROR_HANDLING', '1']);
  env.push(['NCCL_TIMEOUT', String(spec.nccl.timeoutSeconds)]);
  if (spec.nccl.netGdrLevel !== undefined) env.push(['NCCL_NET_GDR_LEVEL', String(spec.nccl.netGdrLevel)]);
  if (spec.nccl.socketIfname !== undefined) env.push(['NCCL_SOCKET_IFNAME', spec.nccl.socketIfname]);
  if (spec.nccl.debug !== undefined) env.push(['NCCL_DEBUG', spec.nccl.debug]);
  if (w.ncclTopoFile !== undefined) env.push(['NCCL_TOPO_FILE', w.ncclTopoFile]);
  if (w.cpuLimitMilli !== undefined) {
    const hint = dataLoaderHint(w.cpuLimitMilli, w.nprocPerNode);
    env.push(['SITS_DATALOADER_NUM_WORKERS', String(hint.workers)], ['SITS_DATALOADER_PIN_MEMORY', String(hint.pinMemory)]);
  }
  env.push(['SITS_TRAINING_JOB', w.job], ['SITS_ATTEMPT', String(w.attempt)]);
  return env.map(([name, value]) => ({ name, value }));
}

/** Injected variables first; a user entry with the same name replaces the injected one in place. */
export function mergeEnv(injected: readonly EnvVarObject[], user: readonly EnvVarObject[] | undefined): EnvVarObject[] {
  const userByName = new Map((user ?? []).map((e) => [e.name, e]));
  const out = injected.map((e) => userByName.get(e.name) ?? e);
  const injectedNames = new Set(injected.map((e) => e.name));
  for (const e of user ?? []) if (!injectedNames.has(e.name)) out.push(e);
  return out;
}
