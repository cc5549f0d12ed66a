/**
 * What the GPU-lending e2e tests create: one InferenceService replica per GPU and an elastic TrainingJob of
 * one-GPU workers (3, at least 1), and how they read the pods back. Used by tests only.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { KubeClient } from '../kube/client/client.ts';

/** InferenceService `svc`: vLLM (the fake kubelet just runs it), 1 replica of 1 GPU, up to 2. */
export function lendingService(queue?: string): Record<string, unknown> {
  return {
    apiVersion: 'ai.sits2026.dev/v1',
    kind: 'InferenceService',
    metadata: { name: 'svc' },
    spec: {
      runtime: 'vllm',
      model: { uri: 'hf://Qwen/Qwen2.5-7B-Instruct', name: 'qwen' },
      replicas: 1,
      minReplicas: 1,
      maxReplicas: 2,
      gpusPerReplica: 1,
      resources: { cpu: '2', memory: '8Gi' },
      ...(queue === undefined ? {} : { queue }),
    },
  };
}

/** TrainingJob `train`: 3 one-GPU workers, elastic down to 1. */
export function elasticJob(o: { annotations?: Record<string, string>; spec?: Record<string, unknown> } = {}): Record<string, unknown> {
  return {
    apiVersion: 'ai.sits2026.dev/v1',
    kind: 'TrainingJob',
    metadata: { name: 'train', ...(o.annotations === undefined ? {} : { annotations: o.annotations }) },
    spec: {
      container: { image: 'registry.sits2026.dev/ml/pytorch:2.3-cuda12.1', command: ['torchrun', 'train.py'] },
      replicas: 3,
      minReplicas: 1,
      maxReplicas: 3,
      resources: { 'nvidia.com/gpu': 1 },
      ...o.spec,
    },
  };
}

export const live = (ps: V1Pod[]): V1Pod[] => ps.filter((p) => p.metadata?.deletionTimestamp === undefined);
export const bound = (ps: V1Pod[]): V1Pod[] => live(ps).filter((p) => (p.spec?.nodeName ?? '') !== '');

async function pods(client: KubeClient, ns: string): Promise<V1Pod[]> {
  return (await client.get<{ items: V1Pod[] }>(`/api/v1/namespaces/${ns}/pods`)).items;
}
/** The replica pods of job `train`. */
export const workerPods = async (client: KubeClient, ns: string): Promise<V1Pod[]> =>
  (await pods(client, ns)).filter(
    (p) => p.metadata?.labels?.['ai.sits2026.dev/training-job'] === 'train' && p.metadata.labels['ai.sits2026.dev/role'] === 'replica',
  );
/** The replica pods of service `svc`. */
export const servicePods = async (client: KubeClient, ns: string): Promise<V1Pod[]> =>
  (await pods(client, ns)).filter((p) => p.metadata?.labels?.['ai.sits2026.dev/inference-service'] === 'svc');
