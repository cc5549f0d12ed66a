/** Every guard-rail rule, in the order docs/rules.md lists them. One file per rule in this folder. */
import type { ClusterFacts, Rule } from '../rule.ts';
import { autoscalerOnDistributedTraining } from './autoscaler-on-distributed-training.ts';
import { crdSchema } from './crd-schema.ts';
import { checkpointOnPodLocalStorage } from './checkpoint-on-pod-local-storage.ts';
import { dataLoaderWorkersExceedCpu } from './dataloader-workers-exceed-cpu.ts';
import { distributedTrainingInDeployment } from './distributed-training-in-deployment.ts';
import { gangSplitAcrossSchedulers } from './gang-split-across-schedulers.ts';
import { gangWithoutMinMember } from './gang-without-min-member.ts';
import { gpuRequestsDifferFromLimits } from './gpu-requests-differ-from-limits.ts';
import { handSetVisibleDevices } from './hand-set-visible-devices.ts';
import { inferenceWithoutGpuModel } from './inference-without-gpu-model.ts';
import { inferenceWithoutReadinessProbe } from './inference-without-readiness-probe.ts';
import { invalidPodTemplate } from './invalid-pod-template.ts';
import { ncclFailFastTimeout } from './nccl-fail-fast-timeout.ts';
import { ncclIbDisabledOnRdma } from './nccl-ib-disabled-on-rdma.ts';
import { pinMemoryBelowTwoCpus } from './pin-memory-below-two-cpus.ts';
import { preemptionInterruptsGangs } from './preemption-interrupts-gangs.ts';
import { rendezvousThroughClusterIp } from './rendezvous-through-clusterip.ts';
import { sharedWeightsWithoutLocalCache } from './shared-weights-without-local-cache.ts';
import { topologyByNodeLabels } from './topology-by-node-labels.ts';
import { trainingWithoutShm } from './training-without-shm.ts';

export const RULES: readonly Rule[] = [
  // What the apiserver would reject (SITS kinds' CRD schemas, pod specs).
  crdSchema,
  invalidPodTemplate,
  // Placement and scheduling (seed 001 §4.1, §4.2, §2).
  topologyByNodeLabels,
  preemptionInterruptsGangs,
  gangSplitAcrossSchedulers,
  gangWithoutMinMember,
  gpuRequestsDifferFromLimits,
  handSetVisibleDevices,
  inferenceWithoutGpuModel,
  // Distributed training semantics (§3, §4.3).
  distributedTrainingInDeployment,
  autoscalerOnDistributedTraining,
  checkpointOnPodLocalStorage,
  rendezvousThroughClusterIp,
  ncclFailFastTimeout,
  ncclIbDisabledOnRdma,
  // Hidden causes of crashes and slow starts (§1, §4.4).
  dataLoaderWorkersExceedCpu,
  pinMemoryBelowTwoCpus,
  trainingWithoutShm,
  sharedWeightsWithoutLocalCache,
  inferenceWithoutReadinessProbe,
];

/**
 * The cluster the rules' fixtures are linted against (rules.test.ts, docs/rules.md): mixed GPU models and RDMA nodes,
 * so that the rules needing a cluster fact show their `bad` fixture too.
 */
export const FIXTURE_CLUSTER: ClusterFacts = { gpuModels: ['A100-80G', 'L4'], rdma: true, schedulerNames: ['sits-scheduler'] };
