// The registry of SITS kinds: names, scope, subresources and printer columns next to each schema.
// One entry per kind; the CRD generator and the offline validator both read it.
import type { TSchema } from '@sinclair/typebox';
import { BatchInferenceJob } from './schema/batch-inference-job.ts';
import { DataPipeline } from './schema/data-pipeline.ts';
import { InferenceService } from './schema/inference-service.ts';
import { PodGroup } from './schema/pod-group.ts';
import { Queue } from './schema/queue.ts';
import { TrainingJob } from './schema/training-job.ts';

export interface PrinterColumn {
  name: string;
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  jsonPath: string;
  description: string;
  /** 0 shows in `kubectl get`; 1 only with `-o wide`. */
  priority?: number;
}

export interface ScaleSubresource {
  specReplicasPath: string;
  statusReplicasPath: string;
  labelSelectorPath?: string;
}

export interface KindDefinition {
  kind: string;
  plural: string;
  singular: string;
  listKind: string;
  shortNames: readonly string[];
  categories: readonly string[];
  scope: 'Namespaced' | 'Cluster';
  /** The TypeBox schema of the whole object; its Static type is the object as stored (defaults applied). */
  schema: TSchema;
  printerColumns: readonly PrinterColumn[];
  scale?: ScaleSubresource;
}

const age: PrinterColumn = { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp', description: 'Time since creation.' };
const CATEGORIES = ['sits'] as const;

export const KINDS = {
  TrainingJob: {
    kind: 'TrainingJob',
    plural: 'trainingjobs',
    singular: 'trainingjob',
    listKind: 'TrainingJobList',
    shortNames: ['tj'],
    categories: CATEGORIES,
    scope: 'Namespaced',
    schema: TrainingJob,
    printerColumns: [
      { name: 'Phase', type: 'string', jsonPath: '.status.phase', description: 'Lifecycle phase.' },
      { name: 'Ready', type: 'integer', jsonPath: '.status.readyReplicas', description: 'Replicas running and ready.' },
      { name: 'Replicas', type: 'integer', jsonPath: '.spec.replicas', description: 'Desired replicas.' },
      { name: 'GPUs', type: 'integer', jsonPath: '.status.gpus', description: 'GPUs held by the bound replicas.' },
      { name: 'Restarts', type: 'integer', jsonPath: '.status.restartCount', description: 'Gang restarts.', priority: 1 },
      { name: 'Queue', type: 'string', jsonPath: '.spec.queue', description: 'Queue of the job.', priority: 1 },
      age,
    ],
    scale: { specReplicasPath: '.spec.replicas', statusReplicasPath: '.status.replicas', labelSelectorPath: '.status.selector' },
  },
  InferenceService: {
    kind: 'InferenceService',
    plural: 'inferenceservices',
    singular: 'inferenceservice',
    listKind: 'InferenceServiceList',
    shortNames: ['infsvc'],
    categories: CATEGORIES,
    scope: 'Namespaced',
    schema: InferenceService,
    printerColumns: [
      { name: 'Ready', type: 'integer', jsonPath: '.status.readyReplicas', description: 'Replicas serving.' },
      { name: 'Desired', type: 'integer', jsonPath: '.spec.replicas', description: 'Desired replicas (the scale subresource).' },
      { name: 'Model', type: 'string', jsonPath: '.status.model', description: 'Name the model is served under.' },
      { name: 'Runtime', type: 'string', jsonPath: '.spec.runtime', description: 'Serving engine.' },
      { name: 'Phase', type: 'string', jsonPath: '.status.phase', description: 'Lifecycle phase.' },
      { name: 'Updated', type: 'integer', jsonPath: '.status.updatedReplicas', description: 'Replicas on the current template.', priority: 1 },
      { name: 'URL', type: 'string', jsonPath: '.status.url', description: 'Endpoint.', priority: 1 },
      age,
    ],
    scale: { specReplicasPath: '.spec.replicas', statusReplicasPath: '.status.replicas', labelSelectorPath: '.status.selector' },
  },
  DataPipeline: {
    kind: 'DataPipeline',
    plural: 'datapipelines',
    singular: 'datapipeline',
    listKind: 'DataPipelineList',
    shortNames: ['dpl'],
    categories: CATEGORIES,
    scope: 'Namespaced',
    schema: DataPipeline,
    printerColumns: [
      { name: 'Phase', type: 'string', jsonPath: '.status.phase', description: 'Lifecycle phase.' },
      { name: 'Completed', type: 'integer', jsonPath: '.status.completedStages', description: 'Stages that succeeded.' },
      { name: 'Stages', type: 'integer', jsonPath: '.status.totalStages', description: 'Stages in the pipeline.' },
      age,
      { name: 'Message', type: 'string', jsonPath: '.status.message', description: 'Why the pipeline is in its phase.', priority: 1 },
    ],
  },
  BatchInferenceJob: {
    kind: 'BatchInferenceJob',
    plural: 'batchinferencejobs',
    singular: 'batchinferencejob',
    listKind: 'BatchInferenceJobList',
    shortNames: ['bij'],
    categories: CATEGORIES,
    scope: 'Namespaced',
    schema: BatchInferenceJob,
    printerColumns: [
      { name: 'Phase', type: 'string', jsonPath: '.status.phase', description: 'Lifecycle phase.' },
      { name: 'Progress', type: 'integer', jsonPath: '.status.progress.percent', description: 'Percent complete.' },
      { name: 'Workers', type: 'integer', jsonPath: '.status.readyWorkers', description: 'Workers running.' },
      { name: 'Batch', type: 'integer', jsonPath: '.status.currentBatchSize', description: 'Batch size in use.' },
      { name: 'ETA', type: 'date', jsonPath: '.status.estimatedCompletionTime', description: 'Predicted completion.', priority: 1 },
      age,
    ],
  },
  Queue: {
    kind: 'Queue',
    plural: 'queues',
    singular: 'queue',
    listKind: 'QueueList',
    shortNames: ['sq'],
    categories: CATEGORIES,
    scope: 'Cluster',
    schema: Queue,
    printerColumns: [
      { name: 'Tenant', type: 'string', jsonPath: '.spec.tenant', description: 'Tenant.' },
      { name: 'Tier', type: 'string', jsonPath: '.spec.tier', description: 'Service tier.' },
      { name: 'Weight', type: 'integer', jsonPath: '.status.effectiveWeight', description: 'Fair-share weight in use.' },
      { name: 'Cohort', type: 'string', jsonPath: '.spec.cohort', description: 'Borrowing cohort.' },
      { name: 'Admitted', type: 'integer', jsonPath: '.status.admittedWorkloads', description: 'Admitted jobs.' },
      { name: 'Pending', type: 'integer', jsonPath: '.status.pendingWorkloads', description: 'Waiting jobs.' },
      age,
    ],
  },
  PodGroup: {
    kind: 'PodGroup',
    plural: 'podgroups',
    singular: 'podgroup',
    listKind: 'PodGroupList',
    shortNames: ['pg'],
    categories: CATEGORIES,
    scope: 'Namespaced',
    schema: PodGroup,
    printerColumns: [
      { name: 'MinMember', type: 'integer', jsonPath: '.spec.minMember', description: 'Pods placed together or not at all.' },
      { name: 'Phase', type: 'string', jsonPath: '.status.phase', description: 'Gang phase.' },
      age,
    ],
  },
} as const satisfies Record<string, KindDefinition>;

export type ResourceKind = keyof typeof KINDS;

/** Kinds in the order the CRDs are written. */
export const RESOURCE_KINDS: readonly ResourceKind[] = ['TrainingJob', 'InferenceService', 'DataPipeline', 'BatchInferenceJob', 'Queue', 'PodGroup'];

export function isResourceKind(kind: unknown): kind is ResourceKind {
  return typeof kind === 'string' && Object.hasOwn(KINDS, kind);
}

export function kindDefinition(kind: ResourceKind): KindDefinition {
  return KINDS[kind];
}
