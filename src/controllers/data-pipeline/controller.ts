/**
 * The DataPipeline controller as a definition for kube/controller-runner.ts: it watches DataPipelines and what they
 * create — pods, the SITS workloads of workload stages, VolumeSnapshots of artifacts and the claims restored from
 * them — all labelled with the pipeline's name. Pods and workloads are awaited on the watch after a create or a
 * delete: the reconcile counts them (a missing one in a running stage is a lost attempt).
 */
import type { ControllerDefinition, ControllerInput, OwnedResource, ResourceType } from '../../api/controller.ts';
import { withDefaults } from '../../api/validate.ts';
import { API_GROUP_VERSION, KIND, LABEL } from '../../api/wire.ts';
import type { PodObject } from '../kube-objects.ts';
import { SNAPSHOT_API_VERSION } from '../training-job/checkpoints.ts';
import { WORKLOAD_PLURALS, type ClaimObject, type DataPipelineObject, type VolumeSnapshotObject, type WorkloadKind, type WorkloadObject } from './model.ts';
import { reconcileDataPipeline } from './reconcile.ts';

export const DATA_PIPELINE_RESOURCE: ResourceType = { apiVersion: API_GROUP_VERSION, kind: KIND.dataPipeline, plural: 'datapipelines' };

const POD: OwnedResource = { apiVersion: 'v1', kind: 'Pod', plural: 'pods', awaitWatch: true };
const WORKLOADS: readonly OwnedResource[] = (Object.keys(WORKLOAD_PLURALS) as WorkloadKind[]).map((kind) => ({ apiVersion: API_GROUP_VERSION, kind, plural: WORKLOAD_PLURALS[kind], awaitWatch: true }));
// Where the snapshot CRDs are not installed the runner keeps retrying this watch; only artifact stages wait on it.
const VOLUME_SNAPSHOT: OwnedResource = { apiVersion: SNAPSHOT_API_VERSION, kind: 'VolumeSnapshot', plural: 'volumesnapshots' };
const CLAIM: OwnedResource = { apiVersion: 'v1', kind: 'PersistentVolumeClaim', plural: 'persistentvolumeclaims' };

export function dataPipelineController(): ControllerDefinition<DataPipelineObject> {
  return {
    primary: DATA_PIPELINE_RESOURCE,
    owned: [POD, ...WORKLOADS, VOLUME_SNAPSHOT, CLAIM],
    ownerLabel: LABEL.dataPipeline,
    component: 'sits-datapipeline-controller',
    reconcile(input: ControllerInput<DataPipelineObject>) {
      const pipeline = withDefaults('DataPipeline', input.object) as DataPipelineObject;
      if (pipeline.metadata.deletionTimestamp !== undefined) return { actions: [] };
      const res = reconcileDataPipeline({
        pipeline,
        pods: (input.owned.get(POD.kind) ?? []) as readonly PodObject[],
        workloads: new Map(WORKLOADS.map((w) => [w.kind as WorkloadKind, (input.owned.get(w.kind) ?? []) as readonly WorkloadObject[]])),
        snapshots: (input.owned.get(VOLUME_SNAPSHOT.kind) ?? []) as readonly VolumeSnapshotObject[],
        claims: (input.owned.get(CLAIM.kind) ?? []) as readonly ClaimObject[],
        nowMs: input.nowMs,
        ...(input.lastErrors === undefined ? {} : { lastErrors: input.lastErrors }),
      });
      return { status: res.status as Readonly<Record<string, unknown>>, actions: res.actions, ...(res.requeueAfterMs === undefined ? {} : { requeueAfterMs: res.requeueAfterMs }) };
    },
  };
}
