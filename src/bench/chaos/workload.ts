/**
 * The submissions of `sits bench chaos`, seeded and pure: per fault, a few TrainingJobs (gangs of 2–8 pods),
 * InferenceServices and single pods, as the objects `kubectl apply` would send, and the slots each fills.
 */
import { seededRng, type Rng } from '../../core/ports.ts';
import { ANNOTATION, LABEL, SCHEDULER_NAME } from '../../api/wire.ts';
import { RUN_SECONDS_ANNOTATION } from '../../harness/fake-kubelet.ts';

export const CHAOS_NS = 'chaos';
export const GROUP_VERSION = 'ai.sits2026.dev/v1';

export type Submission =
  | { readonly kind: 'TrainingJob'; readonly name: string; readonly replicas: number; readonly gpusPerReplica: number }
  | { readonly kind: 'InferenceService'; readonly name: string; readonly replicas: number }
  | { readonly kind: 'Pod'; readonly name: string; readonly gpus: number; readonly runSec: number };

/** The slots a submission fills: one per pod it should get bound (what `lostPods` counts against). */
export function slotsOf(s: Submission): string[] {
  switch (s.kind) {
    case 'TrainingJob':
      return Array.from({ length: s.replicas }, (_, r) => `${CHAOS_NS}/${s.name}-${r}`);
    case 'InferenceService':
      return Array.from({ length: s.replicas }, (_, r) => `${CHAOS_NS}/${s.name}/${r}`);
    default:
      return [`${CHAOS_NS}/${s.name}`];
  }
}

/** The slot a pod fills: an InferenceService replica by its slot number (its name carries a template hash). */
export function slotOfPod(ns: string, name: string, labels: Readonly<Record<string, string>> | undefined): string {
  const isvc = labels?.[LABEL.inferenceService];
  return isvc === undefined ? `${ns}/${name}` : `${ns}/${isvc}/${name.slice(name.lastIndexOf('-') + 1)}`;
}

function trainingJob(rng: Rng, name: string, minReplicas = 2): Submission {
  const replicas = minReplicas + rng.int(9 - minReplicas);
  // Up to 16 GPUs a gang: 12+ nodes of 8 keep room for the rest.
  const gpusPerReplica = replicas <= 4 ? 1 + rng.int(4) : 1 + rng.int(2);
  return { kind: 'TrainingJob', name, replicas, gpusPerReplica };
}

/** What is submitted with fault `index` (before it is injected, so that it is pending through it). */
export function submissionsFor(seed: number, index: number): Submission[] {
  const rng = seededRng((seed * 7919 + index * 104_729) >>> 0);
  const out: Submission[] = [];
  const n = 1 + rng.int(3);
  for (let j = 0; j < n; j++) {
    const name = `w${index}-${j}`;
    const r = rng.next();
    if (r < 0.4) out.push(trainingJob(rng, `tj-${name}`));
    else if (r < 0.6) out.push({ kind: 'InferenceService', name: `is-${name}`, replicas: 1 + rng.int(2) });
    else out.push({ kind: 'Pod', name: `pod-${name}`, gpus: 1 + rng.int(2), runSec: 5 + rng.int(11) });
  }
  return out;
}

/** The gang submitted to catch a leader armed to die or pause after `afterBinds` gang bindings: always more members. */
export function killGang(seed: number, index: number, afterBinds: number): Submission {
  const rng = seededRng((seed * 31 + index * 7) >>> 0);
  return trainingJob(rng, `tj-kill${index}`, Math.min(8, afterBinds + 1));
}

/** A 1-GPU pod created right after a fault: the time until it is bound is the fault's recovery time. */
export function probePod(index: number): Submission {
  return { kind: 'Pod', name: `probe-${index}`, gpus: 1, runSec: 5 };
}

/** The API object of a submission (TrainingJob replicas run as long as the fake kubelet's default run time). */
export function objectOf(s: Submission): { path: string; body: Record<string, unknown> } {
  const base = `/apis/${GROUP_VERSION}/namespaces/${CHAOS_NS}`;
  switch (s.kind) {
    case 'TrainingJob':
      return {
        path: `${base}/trainingjobs`,
        body: {
          apiVersion: GROUP_VERSION,
          kind: 'TrainingJob',
          metadata: { name: s.name },
          spec: {
            replicas: s.replicas,
            gpusPerReplica: s.gpusPerReplica,
            resources: { 'nvidia.com/gpu': s.gpusPerReplica },
            container: { image: 'registry.sits2026.dev/ml/pytorch:2.3-cuda12.1', command: ['torchrun', 'train.py'] },
          },
        },
      };
    case 'InferenceService':
      return {
        path: `${base}/inferenceservices`,
        body: {
          apiVersion: GROUP_VERSION,
          kind: 'InferenceService',
          metadata: { name: s.name },
          spec: { runtime: 'vllm', model: { uri: 'hf://Qwen/Qwen2.5-0.5B-Instruct', name: 'qwen' }, replicas: s.replicas, gpusPerReplica: 1 },
        },
      };
    default:
      return {
        path: `/api/v1/namespaces/${CHAOS_NS}/pods`,
        body: {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: s.name, annotations: { [RUN_SECONDS_ANNOTATION]: String(s.runSec) } },
          spec: {
            schedulerName: SCHEDULER_NAME,
            containers: [{ name: 'main', image: 'registry.sits2026.dev/tools/busybox:1', resources: { limits: { 'nvidia.com/gpu': String(s.gpus) } } }],
          },
        },
      };
  }
}

/** The GPU indices the scheduler wrote on a pod ('' when none). */
export const gpuIndicesOf = (annotations: Readonly<Record<string, string>> | undefined): string => annotations?.[ANNOTATION.gpuIndices] ?? '';
