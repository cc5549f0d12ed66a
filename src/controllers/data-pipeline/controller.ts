/**
 * The DataPipeline controller as a definition for kube/controllers/controller-runner.ts: it watches DataPipelines and what they
 * create — pods, the SITS workloads of workload stages, VolumeSnapshots of artifacts and the claims restored from
 * them — all labelled with the pipeline's name. Pods and workloads are awaited on the watch after a create or a
 * delete: the reconcile counts them (a missing one in a running stage is a lost attempt).
 */
import type { ControllerDefinition, ControllerInput, OwnedResource, ReferencedResource, ResourceType } from '../../api/controller.ts';
import { adapterCleanup, adapterTargets } from './adapter-stage.ts';
import { withDefaults } from '../../api/validate.ts';
import { API_GROUP_VERSION, KIND, LABEL } from '../../api/wire.ts';
import type { PodObject } from '../kube-objects.ts';
import { SNAPSHOT_API_VERSION } from '../training-job/checkpoints.ts';
import {
  WORKLOAD_PLURALS,
  type ClaimObject,
  type ClusterSummary,
  type DataPipelineObject,
  type TargetService,
  type VolumeSnapshotObject,
  type WorkloadKind,
  type WorkloadObject,
} from './model.ts';
import { reconcileDataPipeline } from './reconcile.ts';
import { summarizeCluster } from './profiles.ts';
import { reconcileTemplate, runStepCache } from './runs.ts';
import type { NodeSpec } from '../../core/model/node.ts';

export interface DataPipelineControllerConfig {
  /** The cluster's nodes (from a Node watch in app/), for stages with a resourceProfile. */
  readonly nodes?: () => readonly NodeSpec[];
}

export const DATA_PIPELINE_RESOURCE: ResourceType = { apiVersion: API_GROUP_VERSION, kind: KIND.dataPipeline, plural: 'datapipelines' };

const POD: OwnedResource = { apiVersion: 'v1', kind: 'Pod', plural: 'pods', awaitWatch: true };
const WORKLOADS: readonly OwnedResource[] = (Object.keys(WORKLOAD_PLURALS) as WorkloadKind[]).map((kind) => ({
  apiVersion: API_GROUP_VERSION,
  kind,
  plural: WORKLOAD_PLURALS[kind],
  awaitWatch: true,
}));
// Where the snapshot CRDs are not installed the runner says so once and looks again with backoff (up to 5 min); only artifact stages wait on it.
const VOLUME_SNAPSHOT: OwnedResource = {
  apiVersion: SNAPSHOT_API_VERSION,
  kind: 'VolumeSnapshot',
  plural: 'volumesnapshots',
  whenAbsent: 'snapshot artifact stages wait; install the CSI snapshot CRDs to enable',
};
const CLAIM: OwnedResource = { apiVersion: 'v1', kind: 'PersistentVolumeClaim', plural: 'persistentvolumeclaims' };
// The runs of a scheduled pipeline (a template) are DataPipelines labelled with its name (ADR 0121).
const RUN: OwnedResource = { apiVersion: API_GROUP_VERSION, kind: KIND.dataPipeline, plural: 'datapipelines', awaitWatch: true };

// The users' InferenceServices adapter stages add to: not owned, watched without the owner label (ADR 0137).
const USER_SERVICE: ReferencedResource = {
  apiVersion: API_GROUP_VERSION,
  kind: KIND.inferenceService,
  plural: WORKLOAD_PLURALS.InferenceService,
  names: (p) => adapterTargets(p as DataPipelineObject),
};

export function dataPipelineController(cfg: DataPipelineControllerConfig = {}): ControllerDefinition<DataPipelineObject> {
  return {
    primary: DATA_PIPELINE_RESOURCE,
    owned: [POD, ...WORKLOADS, VOLUME_SNAPSHOT, CLAIM, RUN],
    referenced: [USER_SERVICE],
    ownerLabel: LABEL.dataPipeline,
    component: 'sits-datapipeline-controller',
    reconcile(input: ControllerInput<DataPipelineObject>) {
      const pipeline = withDefaults('DataPipeline', input.object) as DataPipelineObject;
      const services = (input.referenced?.get(USER_SERVICE.kind) ?? []) as readonly TargetService[];
      // Children go by ownerReference; only the adapters added to users' services need the pipeline's hand.
      if (pipeline.metadata.deletionTimestamp !== undefined) return { actions: adapterCleanup(pipeline, services) };
      if (pipeline.spec.schedule !== undefined) {
        const runs = ((input.owned.get(RUN.kind) ?? []) as readonly DataPipelineObject[]).map((r) => withDefaults('DataPipeline', r) as DataPipelineObject);
        const t = reconcileTemplate(pipeline, runs, input.nowMs);
        return {
          status: t.status as Readonly<Record<string, unknown>>,
          actions: t.actions,
          ...(t.requeueAfterMs === undefined ? {} : { requeueAfterMs: t.requeueAfterMs }),
        };
      }
      // Summarised per reconcile, and only for pipelines that use profiles (nodes change rarely; few stages ask).
      const cluster: ClusterSummary | undefined =
        cfg.nodes !== undefined && pipeline.spec.stages.some((s) => s.resourceProfile !== undefined) ? summarizeCluster(cfg.nodes()) : undefined;
      const stepCache = runStepCache(pipeline);
      const res = reconcileDataPipeline({
        pipeline,
        pods: (input.owned.get(POD.kind) ?? []) as readonly PodObject[],
        workloads: new Map(WORKLOADS.map((w) => [w.kind as WorkloadKind, (input.owned.get(w.kind) ?? []) as readonly WorkloadObject[]])),
        snapshots: (input.owned.get(VOLUME_SNAPSHOT.kind) ?? []) as readonly VolumeSnapshotObject[],
        claims: (input.owned.get(CLAIM.kind) ?? []) as readonly ClaimObject[],
        services,
        nowMs: input.nowMs,
        ...(cluster === undefined ? {} : { cluster }),
        ...(stepCache === undefined ? {} : { stepCache }),
        ...(input.lastErrors === undefined ? {} : { lastErrors: input.lastErrors }),
      });
      return {
        status: res.status as Readonly<Record<string, unknown>>,
        actions: res.actions,
        ...(res.requeueAfterMs === undefined ? {} : { requeueAfterMs: res.requeueAfterMs }),
      };
    },
  };
}
